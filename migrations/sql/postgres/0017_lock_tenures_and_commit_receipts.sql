-- Locks that survive a failover, and commits that can be settled
-- (issue 29). Its Go step (add_leases_tenure, migrations/add_column.go) adds
--   leases.tenure  the number of db/rowlock's tenures: it moves on each
--                  time the lease is taken while free or expired; a write
--                  made under an older tenure is refused.
-- The table below holds one receipt per committed write transaction (a
-- random token inserted with its events), kept for a minute: a board
-- whose connection broke during a COMMIT inserts the token again on
-- another connection to learn whether that commit applied
-- (db/sqldb/commit.go). Every statement is safe to re-run.
CREATE TABLE IF NOT EXISTS commit_receipts (
  token      BYTEA  NOT NULL PRIMARY KEY,
  created_at BIGINT NOT NULL
);
-- No index on created_at: the table holds a minute of writes, and the
-- prune's scan of it locks no row it does not delete.
