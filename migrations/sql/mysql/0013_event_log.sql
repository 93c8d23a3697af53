-- The event log (DESIGN §4): every committed change is streamed by every
-- board from here, so a stream carries every board's writes in one order
-- and resumes on any board.
--
-- A write appends its events to event_outbox in its own transaction; ids
-- come from a sequence (an auto-increment), taken at insert time. A
-- sequencer (every board's tailer, one at a time: it locks the one row of
-- event_log_head) moves the committed rows it sees from the outbox into
-- event_log, in id order, at the positions after the head, and moves the
-- head on, in one transaction. Positions are therefore handed out after
-- commit: a transaction that commits late, with a low outbox id, gets a
-- position after everything sequenced before it, never one a reader has
-- already passed; positions have no holes; and a write that saw another's
-- commit (it waited for its row lock, or read its rows) inserted its events
-- after that one did, so its events come later. Writers never wait for one
-- another here: only sequencers take the head.
--
-- event_type is a models event name, event_key what it is about (a process
-- guid or a cell id), payload the protobuf of its models.*Event message,
-- created_at the database's clock in Unix nanoseconds when it was
-- sequenced, for retention.
-- MySQL commits DDL implicitly; every statement is safe to re-run.
CREATE TABLE IF NOT EXISTS event_outbox (
  id         BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
  event_type VARCHAR(64)  NOT NULL,
  event_key  VARCHAR(255) NOT NULL,
  payload    LONGBLOB     NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS event_log (
  position   BIGINT       NOT NULL PRIMARY KEY,
  event_type VARCHAR(64)  NOT NULL,
  event_key  VARCHAR(255) NOT NULL,
  payload    LONGBLOB     NOT NULL,
  created_at BIGINT       NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS event_log_head (
  id       INTEGER NOT NULL PRIMARY KEY,
  position BIGINT  NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
INSERT IGNORE INTO event_log_head (id, position) VALUES (1, 0);
