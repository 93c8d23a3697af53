-- The operation log (DESIGN §6): one row per change to a DesiredLRP, written
-- in the same transaction as the change. id is 16 hex digits of the
-- creation time in Unix nanoseconds and 8 random ones, so the primary key
-- lists operations newest first; sequence numbers one LRP's operations
-- 1, 2, 3, … (unique per guid: two writers that read the same highest
-- number cannot both insert the next one). kind and status are
-- models.Operation enum names; parameters is the protobuf of the request,
-- a google.protobuf.Any; history the protobuf of a models.OperationHistory;
-- times are Unix nanoseconds, 0 until they happen. ended says the status is
-- one an operation ends in.
--
-- Indexes, as few as the readers need, since every write to an LRP adds a
-- row: the primary key lists every operation newest first and finds the
-- old ones to prune (an id is older than its finish); operations_sequence
-- lists one LRP's operations newest first; operations_unfinished serves the
-- convergence snapshot, which reads the operations that have not ended of
-- the LRPs it reads. It is partial: an operation born ended (a desire, most
-- updates) never enters it, and a board at rest has it empty. Its readers
-- say "ended = FALSE" in those words, so that the planner can use it.
-- The table is kept in id order (WITHOUT ROWID): one b-tree fewer to write
-- than a rowid table with a separate primary key index.
--
-- The column
--   rollouts.operation_id TEXT NOT NULL DEFAULT '',
-- the operation that started the rollout, is added by this migration's Go
-- step (add_rollouts_operation_id, in migrations/add_column.go) only where
-- it is missing, so the migration is safe to run again on every dialect.
CREATE TABLE IF NOT EXISTS operations (
  id                 TEXT    NOT NULL PRIMARY KEY,
  process_guid       TEXT    NOT NULL,
  sequence           INTEGER NOT NULL,
  kind               TEXT    NOT NULL,
  status             TEXT    NOT NULL,
  reason             TEXT    NOT NULL DEFAULT '',
  parameters         BLOB,
  definition_id      TEXT    NOT NULL DEFAULT '',
  requested_by       TEXT    NOT NULL DEFAULT '',
  created_at         INTEGER NOT NULL DEFAULT 0,
  started_at         INTEGER NOT NULL DEFAULT 0,
  finished_at        INTEGER NOT NULL DEFAULT 0,
  lease_owner        TEXT    NOT NULL DEFAULT '',
  lease_expires_at   INTEGER NOT NULL DEFAULT 0,
  history            BLOB,
  ended              BOOLEAN NOT NULL DEFAULT 0,
  modification_index INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS operations_sequence ON operations (process_guid, sequence);
CREATE INDEX IF NOT EXISTS operations_unfinished ON operations (process_guid, sequence) WHERE ended = FALSE;
