-- The board's tables. Times are Unix nanoseconds; enums are stored by name.
-- MySQL commits DDL implicitly, so every statement is safe to re-run.
CREATE TABLE IF NOT EXISTS domains (
  domain     VARCHAR(255) NOT NULL PRIMARY KEY,
  expires_at BIGINT       NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS desired_lrps (
  process_guid           VARCHAR(128) NOT NULL PRIMARY KEY,
  domain                 VARCHAR(255) NOT NULL,
  instances              INT          NOT NULL,
  placement_tags         MEDIUMTEXT   NOT NULL,
  routes                 MEDIUMTEXT   NOT NULL,
  annotation             MEDIUMTEXT   NOT NULL,
  active_definition_id   VARCHAR(64)  NOT NULL,
  healthy_definition_id  VARCHAR(64)  NOT NULL DEFAULT '',
  update_strategy        BLOB,
  modification_tag_epoch VARCHAR(64)  NOT NULL,
  modification_tag_index BIGINT       NOT NULL DEFAULT 0,
  created_at             BIGINT       NOT NULL,
  updated_at             BIGINT       NOT NULL,
  INDEX desired_lrps_domain (domain)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS run_infos (
  process_guid  VARCHAR(128) NOT NULL,
  definition_id VARCHAR(64)  NOT NULL,
  content_hash  VARCHAR(64)  NOT NULL,
  memory_mb     INT          NOT NULL DEFAULT 0,
  disk_mb       INT          NOT NULL DEFAULT 0,
  definition    MEDIUMBLOB   NOT NULL,
  created_at    BIGINT       NOT NULL,
  PRIMARY KEY (process_guid, definition_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS actual_lrps (
  process_guid           VARCHAR(128) NOT NULL,
  instance_index         INT          NOT NULL,
  presence               VARCHAR(16)  NOT NULL,
  domain                 VARCHAR(255) NOT NULL,
  instance_guid          VARCHAR(255) NOT NULL DEFAULT '',
  cell_id                VARCHAR(255) NOT NULL DEFAULT '',
  definition_id          VARCHAR(64)  NOT NULL,
  state                  VARCHAR(16)  NOT NULL,
  net_info               BLOB,
  crash_count            INT          NOT NULL DEFAULT 0,
  crash_reason           TEXT         NOT NULL,
  since                  BIGINT       NOT NULL,
  placement_error        TEXT         NOT NULL,
  routable               BOOLEAN      NOT NULL DEFAULT FALSE,
  occupied               BOOLEAN      NOT NULL DEFAULT FALSE,
  modification_tag_epoch VARCHAR(64)  NOT NULL,
  modification_tag_index BIGINT       NOT NULL DEFAULT 0,
  PRIMARY KEY (process_guid, instance_index, presence),
  INDEX actual_lrps_domain (domain),
  INDEX actual_lrps_cell_id (cell_id),
  INDEX actual_lrps_definition (process_guid, definition_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
