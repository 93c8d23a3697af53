-- The operation log (DESIGN §6): one row per change to a DesiredLRP, written
-- in the same transaction as the change. id is 16 hex digits of the
-- creation time in Unix nanoseconds and 8 random ones, so the primary key
-- lists operations newest first; sequence numbers one LRP's operations
-- 1, 2, 3, … (unique per guid: two writers that read the same highest
-- number cannot both insert the next one). kind and status are
-- models.Operation enum names; parameters is the protobuf of the request,
-- a google.protobuf.Any; history the protobuf of a models.OperationHistory;
-- times are Unix nanoseconds, 0 until they happen. ended says the status is
-- one an operation ends in. MySQL commits DDL implicitly, so every
-- statement is safe to re-run.
--
-- Indexes, as few as the readers need, since every write to an LRP adds a
-- row: the primary key lists every operation newest first and finds the
-- old ones to prune (an id is older than its finish); operations_sequence
-- lists one LRP's operations newest first; operations_unfinished serves the
-- convergence snapshot, which reads the operations that have not ended of
-- the LRPs it reads (MySQL has no partial index, which the other dialects
-- use here).
--
-- The column
--   rollouts.operation_id VARCHAR(24) NOT NULL DEFAULT '',
-- the operation that started the rollout, is added by this migration's Go
-- step (add_rollouts_operation_id, in migrations/add_column.go) only where
-- it is missing, so the migration is safe to run again on every dialect.
CREATE TABLE IF NOT EXISTS operations (
  id                 VARCHAR(24)  NOT NULL PRIMARY KEY,
  process_guid       VARCHAR(128) NOT NULL,
  sequence           BIGINT       NOT NULL,
  kind               VARCHAR(32)  NOT NULL,
  status             VARCHAR(32)  NOT NULL,
  reason             TEXT         NOT NULL,
  parameters         MEDIUMBLOB,
  definition_id      VARCHAR(64)  NOT NULL DEFAULT '',
  requested_by       TEXT         NOT NULL,
  created_at         BIGINT       NOT NULL DEFAULT 0,
  started_at         BIGINT       NOT NULL DEFAULT 0,
  finished_at        BIGINT       NOT NULL DEFAULT 0,
  lease_owner        VARCHAR(255) NOT NULL DEFAULT '',
  lease_expires_at   BIGINT       NOT NULL DEFAULT 0,
  history            MEDIUMBLOB,
  ended              BOOLEAN      NOT NULL DEFAULT FALSE,
  modification_index BIGINT       NOT NULL DEFAULT 0,
  UNIQUE INDEX operations_sequence (process_guid, sequence),
  INDEX operations_unfinished (ended, process_guid, sequence)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
