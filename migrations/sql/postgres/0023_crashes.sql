-- Crash memory (issue 31, item 6; convergence.CrashMemory): one row per
-- crash of an instance, written in the crash's own transaction, because a
-- CRASHED actual LRP forgets its cell. process_guid and definition_id name
-- what crashed, cell_id where, crashed_at when (Unix nanoseconds, the
-- database's clock); id is the primary key Galera needs on every table
-- (two crashes may share everything else). The planner reads the rows of its window every pass;
-- the lease owner's full passes delete rows older than
-- convergence.MaxCrashWindow (PruneCrashes).
-- Every statement is safe to re-run (MySQL commits DDL implicitly).
CREATE TABLE IF NOT EXISTS crashes (
  id            BIGSERIAL    PRIMARY KEY,
  process_guid  VARCHAR(128) COLLATE "C" NOT NULL,
  definition_id VARCHAR(64)  COLLATE "C" NOT NULL,
  cell_id       VARCHAR(255) COLLATE "C" NOT NULL,
  crashed_at    BIGINT       NOT NULL
);
CREATE INDEX IF NOT EXISTS crashes_crashed_at ON crashes (crashed_at);
