package sqldb

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/models"
)

// The event log (migration 0013). A write appends the events describing
// it to event_outbox in its own transaction; a sequencer (SequenceEvents,
// run by every board's tailer, one at a time) moves the committed ones
// into event_log at the next positions; every board streams event_log.
//
// Positions are handed out after commit, so a late commit never lands
// behind a position a reader has passed, and writers never wait for one
// another to log:
//
//  1. T1 (a start of web/0) inserts outbox row 7 and is slow to commit;
//     T2 (an update of api) inserts row 8 and commits.
//  2. A sequencer locks the head (at 41), sees row 8 only — T1 has not
//     committed — and moves it to position 42; the head is now 42.
//  3. T1 commits; the next sequencer moves row 7 to position 43.
//
// A write that depends on another (it waited for a row lock the other held
// until its commit, or read rows the other committed) inserts its outbox
// rows after the other's commit, so with higher ids: a sequencer that sees
// the later write's rows sees the earlier one's too and places them first.
// So events of one row are logged in commit order, and the log has no
// holes: the sequencer writes positions and the head in one transaction.

// eventNotifyChannel is the Postgres channel a sequencer notifies when it
// logged events, waking every board's tailer at once.
const eventNotifyChannel = "corkboard_events"

// WithEventsCommitted calls committed after every commit that appended
// events, so that this board's tailer sequences and reads them at once
// rather than at its next poll.
func WithEventsCommitted(committed func()) Option {
	return func(s *SQLDB) { s.eventsCommitted = committed }
}

// appendEvents inserts changes into the outbox, in order, bundled
// (bundle.go), and the commit receipt when one is given (commit.go) with
// them: in the same statement on Postgres, in the same round trip where
// the driver joins statements, or, where the driver puts receipts on the
// events (MySQL), on the first outbox row, whose id it then returns (0
// otherwise).
func (s *SQLDB) appendEvents(ctx context.Context, tx *sql.Tx, changes []models.Event, receipt []byte) (receiptRow int64, err error) {
	rows, err := encodeEvents(changes)
	if err != nil {
		return 0, err
	}
	if appendAll := s.driver.appendEvents(); appendAll != nil {
		return 0, appendAll(s, ctx, tx, rows, receipt)
	}
	onEvents := receipt != nil && s.driver.receiptOnEvents()
	n := len(rows.types)
	for start := 0; start < n; start += batchSize {
		end := min(start+batchSize, n)
		columns := slices.Clone(outboxColumns)
		carries := onEvents && start == 0 // this batch's first row carries the receipt
		if carries {
			columns = append(columns, "receipt")
		}
		args := make([]any, 0, len(columns)*(end-start)+2)
		for i := start; i < end; i++ {
			args = append(args, rows.row(i)...)
			switch {
			case carries && i == 0:
				args = append(args, receipt)
			case carries:
				args = append(args, nil)
			}
		}
		var b strings.Builder
		writeInsert(&b, "event_outbox", columns, end-start)
		if end == n && receipt != nil && !onEvents && s.driver.joinsStatements() {
			b.WriteString(";\n" + insertReceipt)
			args = append(args, receipt)
			receipt = nil
		}
		res, err := s.exec(ctx, tx, b.String(), args...)
		if err != nil {
			return 0, err
		}
		if carries {
			// A multi-row insert's id is its first row's.
			if receiptRow, err = res.LastInsertId(); err != nil {
				return 0, err
			}
		}
	}
	if receipt != nil && !onEvents {
		_, err := s.exec(ctx, tx, insertReceipt, receipt)
		return 0, err
	}
	return receiptRow, nil
}

// outboxColumns are the outbox's columns a write inserts, in
// outboxRows' order.
var outboxColumns = []string{"event_type", "event_key", "payload", "event_count"}

// encodeEvents is changes as the outbox's rows, bundled (bundle.go). A
// payload, a bundle's or an event's, is packed when that is shorter
// (compress.go): a changed event carries its row twice, before and after,
// and packing stores the second copy as a few back-references.
//
// Every type is packed. An instance's events once were not: they are the
// blobs convergence passes and cells' lifecycle calls write most, and the
// standard library's DEFLATE took some 10µs to save about 100 of an
// actual_lrp_changed's 250 bytes, which made a placing pass a third
// slower. The board's own encoder (deflate.go) takes 1–3µs: packing them
// too took the log from 3,022 to 2,673–2,677 bytes per LRP in bbs-load
// peer on Postgres (10,000 LRPs, 5,000 updates and scalings; two
// alternated runs), with claims and starts, placing and scaling no slower.
func encodeEvents(changes []models.Event) (outboxRows, error) {
	e, err := marshalEvents(changes)
	if err != nil {
		return outboxRows{}, err
	}
	return e.bundled(), nil
}

// logCommitted sequences until the outbox holds nothing this call saw
// committed, so that what the caller committed is in the log.
func (s *SQLDB) logCommitted(ctx context.Context) error {
	for {
		moved, err := s.SequenceEvents(ctx, 1000)
		if err != nil {
			return err
		}
		if moved < 1000 {
			return nil
		}
	}
}

// SequenceEvents moves up to limit committed outbox rows (events or
// bundles, bundle.go) into the log, oldest first, at the positions after
// the head, and returns how many rows it moved. Sequencers take turns on the head's row lock; writers
// never wait for them. An empty outbox costs one indexed read and no lock.
func (s *SQLDB) SequenceEvents(ctx context.Context, limit int) (int, error) {
	var first int64
	err := s.queryRow(ctx, s.conn, "SELECT id FROM event_outbox ORDER BY id LIMIT 1").Scan(&first)
	if err == sql.ErrNoRows {
		return 0, nil
	}
	if err != nil {
		return 0, asModelError("sequence events", err)
	}
	moved, last := 0, int64(0)
	err = s.transact(ctx, "sequence events", func(tx *sql.Tx) error {
		var head int64
		err := s.queryRow(ctx, tx, "SELECT position FROM event_log_head WHERE id = 1"+s.driver.lockForUpdate()).Scan(&head)
		if err == sql.ErrNoRows {
			return errInvalidRecord("event_log_head has no row: the database was not migrated by this version")
		}
		if err != nil {
			return err
		}
		if moveAll := s.driver.moveEvents(); moveAll != nil {
			moved, last, err = moveAll(s, ctx, tx, head, limit)
		} else {
			moved, last, err = s.moveEvents(ctx, tx, head, limit)
		}
		return err
	})
	if err == nil {
		s.sawLogPosition(last)
	}
	return moved, err
}

// sawLogPosition notes that the log's positions up to position are taken
// (SQLDB.logSeen).
func (s *SQLDB) sawLogPosition(position int64) {
	for {
		seen := s.logSeen.Load()
		if position <= seen || s.logSeen.CompareAndSwap(seen, position) {
			return
		}
	}
}

// moveEvents moves up to limit outbox rows, oldest first, into the log at
// the positions after head, and moves the head past their events, in tx,
// which holds the head's row lock; it returns how many rows it moved. It
// reads the rows and writes them back, with the commit receipts they
// carry (commit.go: a lost commit is settled by its receipt in the log
// once its events have moved). A row's position is its last event's
// (bundle.go).
func (s *SQLDB) moveEvents(ctx context.Context, tx *sql.Tx, head int64, limit int) (moved int, newHead int64, err error) {
	rows, err := s.query(ctx, tx, "SELECT id, event_type, event_key, payload, receipt, event_count FROM event_outbox ORDER BY id LIMIT ?", limit)
	if err != nil {
		return 0, head, err
	}
	var ids []any
	var logged []any
	position := head
	for rows.Next() {
		var id, count int64
		var eventType, key string
		var payload, receipt []byte
		if err := rows.Scan(&id, &eventType, &key, &payload, &receipt, &count); err != nil {
			rows.Close()
			return 0, head, err
		}
		position += count
		ids = append(ids, id)
		logged = append(logged, position, eventType, key, payload, receipt, count)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, head, err
	}
	if len(ids) == 0 {
		return 0, head, nil
	}
	const perRow = 6
	for start := 0; start < len(ids); start += batchSize {
		end := min(start+batchSize, len(ids))
		var b strings.Builder
		b.WriteString(insertIntoEventLog + " VALUES ")
		for i := start; i < end; i++ {
			if i > start {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?, ?, " + s.driver.nowNanos() + ")")
		}
		if _, err := s.exec(ctx, tx, b.String(), logged[start*perRow:end*perRow]...); err != nil {
			return 0, head, err
		}
		if _, err := s.exec(ctx, tx, "DELETE FROM event_outbox WHERE id IN "+inList(end-start), ids[start:end]...); err != nil {
			return 0, head, err
		}
	}
	if _, err := s.exec(ctx, tx, advanceLogHead, position); err != nil {
		return 0, head, err
	}
	return len(ids), position, nil
}

// insertIntoEventLog begins an insert of logged rows, with the commit
// receipts they carry; advanceLogHead moves the head to its argument.
const (
	insertIntoEventLog = "INSERT INTO event_log (position, event_type, event_key, payload, receipt, event_count, created_at)"
	advanceLogHead     = "UPDATE event_log_head SET position = ? WHERE id = 1"
)

// ReadLogged returns up to limit events logged after position after, in
// order, with their payloads as the log keeps them (DecodePayload reads
// them): what a board's tailer keeps in its hub. It reads up to limit rows,
// the first of which may be a bundle holding events up to after too.
func (s *SQLDB) ReadLogged(ctx context.Context, after uint64, limit int) ([]events.Logged, error) {
	// Nothing is logged past the head (both are written in one
	// transaction, and one statement reads both with one snapshot), so the
	// upper bound selects nothing less. It is there for Postgres's
	// planner: without statistics (a log never analysed) it takes
	// "position > after" for a third of the log and reads all of it, per
	// read; a range it takes for a sliver, and reads the index.
	rows, err := s.query(ctx, s.conn, `SELECT position, event_type, event_key, payload, event_count FROM event_log
 WHERE position > ? AND position <= (SELECT position FROM event_log_head WHERE id = 1)
 ORDER BY position LIMIT ?`, int64(after), limit)
	if err != nil {
		return nil, asModelError("read events", err)
	}
	defer rows.Close()
	var out []events.Logged
	for rows.Next() && len(out) < limit {
		var position, count int64
		var eventType, key string
		var stored []byte
		if err := rows.Scan(&position, &eventType, &key, &stored, &count); err != nil {
			return nil, asModelError("read events", err)
		}
		if out, err = appendLogged(out, after, position, count, eventType, key, stored); err != nil {
			return nil, asModelError("read events", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, asModelError("read events", err)
	}
	out = out[:min(len(out), limit)]
	if len(out) > 0 {
		s.sawLogPosition(int64(out[len(out)-1].ID))
	}
	return out, nil
}

// repackFrom is the size from which appendLogged packs a bundled event's
// payload again.
const repackFrom = 512

// appendLogged appends the events past after of the log's row at position
// holding count events: the row's own event, or its bundle's (bundle.go),
// each payload in a slice of its own size (DecodePayload reads it), since
// a board's hub keeps its last events as read: kept as slices of their
// bundle's expanded blob, or in pack's buffer, they held the whole blob's
// or the unpacked size's memory, 20–30 MB more of the board's peak RSS in
// the thousand-slow-clients spec (cmd/bbs), whose 600 LRPs carry 8 KB
// annotations. A payload of repackFrom bytes or more is packed again on
// its own (those 8 KB events shrink to a few hundred bytes); a smaller one
// is kept as it is, which costs a ring of 10,000 events one or two MB at
// most, where packing each cost a DEFLATE per event read: 4–5% of the
// board's CPU in bbs-load peer's desires and updates on Postgres.
func appendLogged(out []events.Logged, after uint64, position, count int64, eventType, key string, stored []byte) ([]events.Logged, error) {
	if eventType != bundleType {
		if count != 1 {
			return nil, errInvalidRecord("event_log row at %d: a %s event with event_count %d", position, eventType, count)
		}
		return append(out, events.Logged{ID: uint64(position), Type: eventType, Key: key, Stored: stored}), nil
	}
	blob, err := unpack(stored)
	if err != nil {
		return nil, errInvalidRecord("event_log row at %d: %v", position, err)
	}
	bundle, err := readBundle(blob, int(count))
	if err != nil {
		return nil, errInvalidRecord("event_log row at %d: %v", position, err)
	}
	first := position - count + 1
	for i, e := range bundle {
		if id := uint64(first + int64(i)); id > after {
			payload := e.raw
			if len(payload) >= repackFrom {
				payload = pack(payload)
			}
			out = append(out, events.Logged{ID: id, Type: e.eventType, Key: key, Stored: bytes.Clone(payload)})
		}
	}
	return out, nil
}

// DecodePayload returns the payload of a logged event of eventType. An
// event of a type this version does not know (written by a newer board)
// gets an empty payload, so that it still holds its place: a reader takes
// a missing position for a late commit.
func (s *SQLDB) DecodePayload(eventType string, stored []byte) (proto.Message, error) {
	payload := models.NewEventPayload(eventType)
	if payload == nil {
		payload = &emptypb.Empty{}
	}
	raw, err := unpack(stored)
	if err != nil {
		return nil, err
	}
	if err := proto.Unmarshal(raw, payload); err != nil {
		return nil, err
	}
	return payload, nil
}

// ReadEvents is ReadLogged with each payload decoded.
func (s *SQLDB) ReadEvents(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
	logged, err := s.ReadLogged(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]events.Event, len(logged))
	for i, l := range logged {
		payload, err := s.DecodePayload(l.Type, l.Stored)
		if err != nil {
			return nil, asModelError("read events", fmt.Errorf("decode %s event at %d: %w", l.Type, l.ID, err))
		}
		out[i] = events.Event{ID: l.ID, Event: models.Event{Type: l.Type, Key: l.Key, Payload: payload}}
	}
	return out, nil
}

// EventLogBounds is the first position the log still keeps and the last
// one taken; first is last+1 when the log keeps nothing.
func (s *SQLDB) EventLogBounds(ctx context.Context) (first, last uint64, err error) {
	var head int64
	var oldest sql.NullInt64
	// The oldest row's first event (bundle.go).
	err = s.queryRow(ctx, s.conn, `SELECT h.position, (SELECT position - event_count + 1 FROM event_log ORDER BY position LIMIT 1)
 FROM event_log_head h WHERE h.id = 1`).Scan(&head, &oldest)
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
// transaction. It returns how many rows it deleted. A row goes whole: a
// bundle (bundle.go) holding an event to keep is kept, with its older
// events.
//
// Example: the log keeps positions 1 to 1,500,000, maxEvents is 1,000,000
// and everything is younger than maxAge. Positions up to 500,000 go; with
// batch 10,000 the first call deletes the rows at 1–10,000, 10,001–20,000,
// … up to maxBatches statements, and the next calls go on from there. Had
// positions 499,998–500,001 been one bundle, it would stay, and the log
// would begin at 499,998.
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
		res, err := s.exec(ctx, s.conn, "DELETE FROM event_log WHERE position >= ? AND position < ? AND (position < ? OR created_at < "+s.driver.nowNanos()+" - ?)",
			int64(first), int64(end), int64(keepFrom), maxAge.Nanoseconds())
		if err != nil {
			return deleted, asModelError("trim event log", err)
		}
		n, _ := res.RowsAffected()
		deleted += n
		// A batch that deleted nothing reached the events to keep:
		// positions and creation times grow together. (One that deleted
		// fewer rows than batch may not have: a bundle's row takes several
		// positions.)
		if n == 0 || end > last {
			break
		}
		first = end
	}
	return deleted, nil
}
