package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/models"
)

// The event log (migration 0013): every write that changes state appends
// the events describing it to event_log in its own transaction, as the
// last thing before COMMIT, and every board serves its event stream from
// that table (events.Tailer). Positions come from the one row of
// event_log_head, whose row lock the transaction then holds until it
// commits; so a writer that takes positions after another took its own
// commits after it, and the log is in commit order with no gaps:
//
//  1. T1 (a start of web/0) updates the head from 41 to 42 and inserts
//     event 42; the head row is now locked until T1 commits.
//  2. T2 (convergence, also writing web/0) waited for web/0's row lock
//     inside its own statements, so it reaches the head only after T1 has
//     committed; it takes 43 and 44.
//  3. T3 takes the head while T2 is still committing, so it waits for it
//     and gets 45. Should T3 roll back, the head goes back to 44 with it:
//     the next writer takes 45 and no reader ever sees a hole.
//
// A reader that sees position 45 therefore sees 42 to 44 too, whichever
// board it runs on. (The tailer still treats a hole as a late commit and
// waits for it a while — see events.Tailer — should a database ever show
// commits out of order.)
//
// The head is the one point every writer passes through, for about one
// round trip and its commit. Writes that append no events (a heartbeat, a
// read) never touch it.

// eventNotifyChannel is the Postgres channel a commit that appended events
// notifies, waking every board's tailer at once.
const eventNotifyChannel = "corkboard_events"

// WithEventsCommitted calls committed after every commit that appended
// events, so that this board's tailer reads them at once rather than at
// its next poll.
func WithEventsCommitted(committed func()) Option {
	return func(s *SQLDB) { s.eventsCommitted = committed }
}

// commitAndPublish appends events to the log, commits tx, and tells this
// board's tailer.
func (s *SQLDB) commitAndPublish(ctx context.Context, tx *sql.Tx, changes []models.Event) error {
	if len(changes) == 0 {
		return tx.Commit()
	}
	if err := s.appendEvents(ctx, tx, changes); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.eventsCommitted()
	return nil
}

// appendEvents takes positions for changes from the head and inserts them.
// It must be the last write of the transaction (see above).
func (s *SQLDB) appendEvents(ctx context.Context, tx *sql.Tx, changes []models.Event) error {
	types := make([]string, len(changes))
	keys := make([]string, len(changes))
	payloads := make([][]byte, len(changes))
	for i, e := range changes {
		raw, err := proto.Marshal(e.Payload)
		if err != nil {
			return fmt.Errorf("encode %s event: %w", e.Type, err)
		}
		types[i], keys[i], payloads[i] = e.Type, e.Key, raw
	}
	n := int64(len(changes))
	if s.dialect == Postgres {
		// One round trip: take the positions, insert the rows, and notify
		// the other boards (delivered when the transaction commits).
		_, err := tx.ExecContext(ctx, appendEventsPostgres, n, pq.Array(types), pq.Array(keys), pq.ByteaArray(payloads))
		return err
	}
	last, err := s.takePositions(ctx, tx, n)
	if err != nil {
		return err
	}
	first := last - n + 1
	for start := 0; start < len(changes); start += batchSize {
		end := min(start+batchSize, len(changes))
		var b strings.Builder
		b.WriteString("INSERT INTO event_log (position, event_type, event_key, payload, created_at) VALUES ")
		args := make([]any, 0, 4*(end-start))
		for i := start; i < end; i++ {
			if i > start {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, " + s.dialect.nowNanos() + ")")
			args = append(args, first+int64(i), types[i], keys[i], payloads[i])
		}
		if _, err := s.exec(ctx, tx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// takePositions moves the head on by n and returns the last position taken.
func (s *SQLDB) takePositions(ctx context.Context, tx *sql.Tx, n int64) (int64, error) {
	if s.dialect == MySQL {
		// LAST_INSERT_ID(expr) hands the new value back in the statement's
		// result, sparing a SELECT.
		res, err := s.exec(ctx, tx, "UPDATE event_log_head SET position = LAST_INSERT_ID(position + ?) WHERE id = 1", n)
		if err != nil {
			return 0, err
		}
		return res.LastInsertId()
	}
	var last int64
	err := s.queryRow(ctx, tx, "UPDATE event_log_head SET position = position + ? WHERE id = 1 RETURNING position", n).Scan(&last)
	if err == sql.ErrNoRows {
		return 0, errInvalidRecord("event_log_head has no row: the database was not migrated by this version")
	}
	return last, err
}

var appendEventsPostgres = `WITH head AS (
  UPDATE event_log_head SET position = position + $1 WHERE id = 1 RETURNING position
), appended AS (
  INSERT INTO event_log (position, event_type, event_key, payload, created_at)
  SELECT head.position - $1 + e.n, e.event_type, e.event_key, e.payload, ` + dialect(Postgres).nowNanos() + `
  FROM head, unnest($2::text[], $3::text[], $4::bytea[]) WITH ORDINALITY AS e(event_type, event_key, payload, n)
)
SELECT pg_notify('` + eventNotifyChannel + `', '') FROM head`

// ReadEvents returns up to limit events of the log after position after,
// in order. An event of a type this version does not know (written by a
// newer board) comes with an empty payload, so that it still holds its
// place: a reader takes a missing position for a late commit.
func (s *SQLDB) ReadEvents(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
	rows, err := s.query(ctx, s.conn, "SELECT position, event_type, event_key, payload FROM event_log WHERE position > ? ORDER BY position LIMIT ?", int64(after), limit)
	if err != nil {
		return nil, asModelError("read events", err)
	}
	defer rows.Close()
	var out []events.Event
	for rows.Next() {
		var position int64
		var e events.Event
		var raw []byte
		if err := rows.Scan(&position, &e.Type, &e.Key, &raw); err != nil {
			return nil, asModelError("read events", err)
		}
		e.ID = uint64(position)
		e.Payload = models.NewEventPayload(e.Type)
		if e.Payload == nil {
			e.Payload = &emptypb.Empty{}
		}
		if err := proto.Unmarshal(raw, e.Payload); err != nil {
			return nil, asModelError("read events", fmt.Errorf("decode %s event at %d: %w", e.Type, position, err))
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, asModelError("read events", err)
	}
	return out, nil
}

// EventLogBounds is the first position the log still keeps and the last
// one taken; first is last+1 when the log keeps nothing.
func (s *SQLDB) EventLogBounds(ctx context.Context) (first, last uint64, err error) {
	var head int64
	var oldest sql.NullInt64
	err = s.queryRow(ctx, s.conn, "SELECT h.position, (SELECT MIN(position) FROM event_log) FROM event_log_head h WHERE h.id = 1").Scan(&head, &oldest)
	if err == sql.ErrNoRows {
		return 0, 0, errInvalidRecord("event_log_head has no row: the database was not migrated by this version")
	}
	if err != nil {
		return 0, 0, asModelError("read event log bounds", err)
	}
	if !oldest.Valid {
		return uint64(head) + 1, uint64(head), nil
	}
	return uint64(oldest.Int64), uint64(head), nil
}

// TrimEventLog deletes the events older than maxAge (by the database's
// clock) and those beyond the newest maxEvents, at most batch rows per
// statement and maxBatches statements per call, oldest first, so that a
// large backlog is worked off over several calls without one long
// transaction. It returns how many rows it deleted.
//
// Example: the log keeps positions 1 to 1,500,000, maxEvents is 1,000,000
// and everything is younger than maxAge. Positions up to 500,000 go; with
// batch 10,000 the first call deletes 1–10,000, 10,001–20,000, … up to
// maxBatches statements, and the next calls go on from there.
func (s *SQLDB) TrimEventLog(ctx context.Context, maxAge time.Duration, maxEvents uint64, batch, maxBatches int) (int64, error) {
	first, last, err := s.EventLogBounds(ctx)
	if err != nil || first > last {
		return 0, err
	}
	keepFrom := uint64(0) // positions below keepFrom go whatever their age
	if last >= maxEvents {
		keepFrom = last - maxEvents + 1
	}
	deleted := int64(0)
	for range maxBatches {
		end := first + uint64(batch) // this statement looks at [first, end)
		res, err := s.exec(ctx, s.conn, "DELETE FROM event_log WHERE position >= ? AND position < ? AND (position < ? OR created_at < "+s.dialect.nowNanos()+" - ?)",
			int64(first), int64(end), int64(keepFrom), maxAge.Nanoseconds())
		if err != nil {
			return deleted, asModelError("trim event log", err)
		}
		n, _ := res.RowsAffected()
		deleted += n
		// A batch that kept rows reached the events to keep: positions and
		// creation times grow together.
		if n < int64(batch) || end > last {
			break
		}
		first = end
	}
	return deleted, nil
}
