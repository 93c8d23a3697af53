-- Crash memory (issue 31, item 6; convergence.CrashMemory): one row per
-- crash of an instance, written in the crash's own transaction, because a
-- CRASHED actual LRP forgets its cell. process_guid and definition_id name
-- what crashed, cell_id where, crashed_at when (Unix nanoseconds, the
-- database's clock); id is the primary key Galera needs on every table
-- (two crashes may share everything else). The planner reads the rows of its window every pass;
-- the lease owner's full passes delete rows older than
-- convergence.MaxCrashWindow (PruneCrashes).
-- Every statement is safe to re-run (MySQL commits DDL implicitly).
-- MySQL has no CREATE INDEX IF NOT EXISTS: the index is declared with the
-- table.
CREATE TABLE IF NOT EXISTS crashes (
  id            BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  process_guid  VARCHAR(128) NOT NULL,
  definition_id VARCHAR(64)  NOT NULL,
  cell_id       VARCHAR(255) NOT NULL,
  crashed_at    BIGINT       NOT NULL,
  INDEX crashes_crashed_at (crashed_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
