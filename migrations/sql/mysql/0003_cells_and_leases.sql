-- Cells that reps register, and named leases (one converger at a time).
-- MySQL commits DDL implicitly, so every statement is safe to re-run.
CREATE TABLE IF NOT EXISTS cells (
  cell_id        VARCHAR(255) NOT NULL PRIMARY KEY,
  rep_url        TEXT         NOT NULL,
  zone           VARCHAR(255) NOT NULL DEFAULT '',
  memory_mb      INT          NOT NULL DEFAULT 0,
  disk_mb        INT          NOT NULL DEFAULT 0,
  max_instances  INT          NOT NULL DEFAULT 0,
  placement_tags TEXT         NOT NULL,
  expires_at     BIGINT       NOT NULL,
  registered_at  BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS leases (
  name       VARCHAR(64)  NOT NULL PRIMARY KEY,
  owner      VARCHAR(255) NOT NULL,
  expires_at BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
