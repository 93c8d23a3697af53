-- The event log (DESIGN §4): every committed change appends its events here,
-- in the same transaction, and every board serves /v1/events from it, so a
-- stream carries every board's writes in one order and resumes on any board.
--
-- position is handed out from the single row of event_log_head, by an UPDATE
-- that is the transaction's last statement before COMMIT. Its row lock is
-- held until the commit, so a transaction that takes positions after
-- another has committed: position order is commit order, and a rolled-back
-- transaction gives its positions back with its UPDATE. Positions have no
-- gaps and never appear out of order to a reader, which a sequence (numbers
-- taken at insert, committed in any order, lost on rollback) would not give.
-- event_type is a models event name, event_key what it is about (a process
-- guid or a cell id), payload the protobuf of its models.*Event message,
-- created_at the database's clock in Unix nanoseconds, for retention.
-- Every statement is safe to re-run.
CREATE TABLE IF NOT EXISTS event_log (
  position   BIGINT       NOT NULL PRIMARY KEY,
  event_type VARCHAR(64)  NOT NULL,
  event_key  VARCHAR(255) NOT NULL,
  payload    BYTEA        NOT NULL,
  created_at BIGINT       NOT NULL
);

CREATE TABLE IF NOT EXISTS event_log_head (
  id       INTEGER NOT NULL PRIMARY KEY,
  position BIGINT  NOT NULL
);
INSERT INTO event_log_head (id, position) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
