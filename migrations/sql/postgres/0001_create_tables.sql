-- The board's tables. Times are Unix nanoseconds; enums are stored by name.
CREATE TABLE IF NOT EXISTS domains (
  domain     VARCHAR(255) NOT NULL PRIMARY KEY,
  expires_at BIGINT       NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS desired_lrps (
  process_guid           VARCHAR(128) NOT NULL PRIMARY KEY,
  domain                 VARCHAR(255) NOT NULL,
  instances              INTEGER      NOT NULL,
  placement_tags         TEXT         NOT NULL DEFAULT '[]',
  routes                 TEXT         NOT NULL DEFAULT '',
  annotation             TEXT         NOT NULL DEFAULT '',
  active_definition_id   VARCHAR(64)  NOT NULL,
  healthy_definition_id  VARCHAR(64)  NOT NULL DEFAULT '',
  update_strategy        BYTEA,
  modification_tag_epoch VARCHAR(64)  NOT NULL,
  modification_tag_index BIGINT       NOT NULL DEFAULT 0,
  created_at             BIGINT       NOT NULL,
  updated_at             BIGINT       NOT NULL
);
CREATE INDEX IF NOT EXISTS desired_lrps_domain ON desired_lrps (domain);

CREATE TABLE IF NOT EXISTS run_infos (
  process_guid  VARCHAR(128) NOT NULL,
  definition_id VARCHAR(64)  NOT NULL,
  content_hash  VARCHAR(64)  NOT NULL,
  memory_mb     INTEGER      NOT NULL DEFAULT 0,
  disk_mb       INTEGER      NOT NULL DEFAULT 0,
  definition    BYTEA        NOT NULL,
  created_at    BIGINT       NOT NULL,
  PRIMARY KEY (process_guid, definition_id)
);

CREATE TABLE IF NOT EXISTS actual_lrps (
  process_guid           VARCHAR(128) NOT NULL,
  instance_index         INTEGER      NOT NULL,
  presence               VARCHAR(16)  NOT NULL,
  domain                 VARCHAR(255) NOT NULL,
  instance_guid          VARCHAR(255) NOT NULL DEFAULT '',
  cell_id                VARCHAR(255) NOT NULL DEFAULT '',
  definition_id          VARCHAR(64)  NOT NULL,
  state                  VARCHAR(16)  NOT NULL,
  net_info               BYTEA,
  crash_count            INTEGER      NOT NULL DEFAULT 0,
  crash_reason           TEXT         NOT NULL DEFAULT '',
  since                  BIGINT       NOT NULL,
  placement_error        TEXT         NOT NULL DEFAULT '',
  routable               BOOLEAN      NOT NULL DEFAULT FALSE,
  occupied               BOOLEAN      NOT NULL DEFAULT FALSE,
  modification_tag_epoch VARCHAR(64)  NOT NULL,
  modification_tag_index BIGINT       NOT NULL DEFAULT 0,
  PRIMARY KEY (process_guid, instance_index, presence)
);
CREATE INDEX IF NOT EXISTS actual_lrps_domain ON actual_lrps (domain);
CREATE INDEX IF NOT EXISTS actual_lrps_cell_id ON actual_lrps (cell_id);
CREATE INDEX IF NOT EXISTS actual_lrps_definition ON actual_lrps (process_guid, definition_id);
