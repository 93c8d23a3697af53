-- The board's tables. Times are Unix nanoseconds; enums are stored by name.
CREATE TABLE IF NOT EXISTS domains (
  domain     TEXT    NOT NULL PRIMARY KEY,
  expires_at INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS desired_lrps (
  process_guid           TEXT    NOT NULL PRIMARY KEY,
  domain                 TEXT    NOT NULL,
  instances              INTEGER NOT NULL,
  placement_tags         TEXT    NOT NULL DEFAULT '[]',
  routes                 TEXT    NOT NULL DEFAULT '',
  annotation             TEXT    NOT NULL DEFAULT '',
  active_definition_id   TEXT    NOT NULL,
  healthy_definition_id  TEXT    NOT NULL DEFAULT '',
  update_strategy        BLOB,
  modification_tag_epoch TEXT    NOT NULL,
  modification_tag_index INTEGER NOT NULL DEFAULT 0,
  created_at             INTEGER NOT NULL,
  updated_at             INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS desired_lrps_domain ON desired_lrps (domain);

CREATE TABLE IF NOT EXISTS run_infos (
  process_guid  TEXT    NOT NULL,
  definition_id TEXT    NOT NULL,
  content_hash  TEXT    NOT NULL,
  memory_mb     INTEGER NOT NULL DEFAULT 0,
  disk_mb       INTEGER NOT NULL DEFAULT 0,
  definition    BLOB    NOT NULL,
  created_at    INTEGER NOT NULL,
  PRIMARY KEY (process_guid, definition_id)
);

CREATE TABLE IF NOT EXISTS actual_lrps (
  process_guid           TEXT    NOT NULL,
  instance_index         INTEGER NOT NULL,
  presence               TEXT    NOT NULL,
  domain                 TEXT    NOT NULL,
  instance_guid          TEXT    NOT NULL DEFAULT '',
  cell_id                TEXT    NOT NULL DEFAULT '',
  definition_id          TEXT    NOT NULL,
  state                  TEXT    NOT NULL,
  net_info               BLOB,
  crash_count            INTEGER NOT NULL DEFAULT 0,
  crash_reason           TEXT    NOT NULL DEFAULT '',
  since                  INTEGER NOT NULL,
  placement_error        TEXT    NOT NULL DEFAULT '',
  routable               BOOLEAN NOT NULL DEFAULT 0,
  occupied               BOOLEAN NOT NULL DEFAULT 0,
  modification_tag_epoch TEXT    NOT NULL,
  modification_tag_index INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (process_guid, instance_index, presence)
);
CREATE INDEX IF NOT EXISTS actual_lrps_domain ON actual_lrps (domain);
CREATE INDEX IF NOT EXISTS actual_lrps_cell_id ON actual_lrps (cell_id);
CREATE INDEX IF NOT EXISTS actual_lrps_definition ON actual_lrps (process_guid, definition_id);
