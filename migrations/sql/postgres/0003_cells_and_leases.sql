-- Cells that reps register, and named leases (one converger at a time).
CREATE TABLE IF NOT EXISTS cells (
  cell_id        VARCHAR(255) NOT NULL PRIMARY KEY,
  rep_url        TEXT         NOT NULL DEFAULT '',
  zone           VARCHAR(255) NOT NULL DEFAULT '',
  memory_mb      INTEGER      NOT NULL DEFAULT 0,
  disk_mb        INTEGER      NOT NULL DEFAULT 0,
  max_instances  INTEGER      NOT NULL DEFAULT 0,
  placement_tags TEXT         NOT NULL DEFAULT '[]',
  expires_at     BIGINT       NOT NULL,
  registered_at  BIGINT       NOT NULL
);

CREATE TABLE IF NOT EXISTS leases (
  name       VARCHAR(64)  NOT NULL PRIMARY KEY,
  owner      VARCHAR(255) NOT NULL,
  expires_at BIGINT       NOT NULL
);

-- Byte order for guids, as on SQLite (BINARY) and MySQL (utf8mb4_bin): the
-- convergence snapshot reads rows in key order straight off the primary key
-- instead of sorting 250,000 rows by a locale's rules.
ALTER TABLE desired_lrps ALTER COLUMN process_guid TYPE VARCHAR(128) COLLATE "C";
ALTER TABLE run_infos ALTER COLUMN process_guid TYPE VARCHAR(128) COLLATE "C";
ALTER TABLE actual_lrps ALTER COLUMN process_guid TYPE VARCHAR(128) COLLATE "C";
ALTER TABLE actual_lrps ALTER COLUMN presence TYPE VARCHAR(16) COLLATE "C";
