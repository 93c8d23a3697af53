-- Cells that reps register, and named leases (one converger at a time).
CREATE TABLE IF NOT EXISTS cells (
  cell_id            TEXT    NOT NULL PRIMARY KEY,
  rep_url            TEXT    NOT NULL DEFAULT '',
  zone               TEXT    NOT NULL DEFAULT '',
  memory_mb          INTEGER NOT NULL DEFAULT 0,
  disk_mb            INTEGER NOT NULL DEFAULT 0,
  max_instances      INTEGER NOT NULL DEFAULT 0,
  placement_tags     TEXT    NOT NULL DEFAULT '[]',
  expires_at         INTEGER NOT NULL,
  registered_at      INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS leases (
  name       TEXT    NOT NULL PRIMARY KEY,
  owner      TEXT    NOT NULL,
  expires_at INTEGER NOT NULL
);
