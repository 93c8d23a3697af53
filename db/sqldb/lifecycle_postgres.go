package sqldb

import (
	"context"
	"database/sql"
	"slices"

	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/models"
)

// The lifecycle calls' fast path on Postgres (lifecycle_fast.go): the write
// (3) is one prepared, auto-committed statement (lifecycleWriteStatement).

// lifecycleWriteStatement is the fast path's write (3) of a row (write is
// updateActualLRP) or of a removal (deleteActualLRPSQL), then, only where
// that wrote the row, the crash (when the fifth argument after write's own
// is true), the events in order and, withReceipt, the commit receipt
// (commitStatement). The answer is how many rows it wrote.
func lifecycleWriteStatement(write string, withReceipt bool) string {
	receipt := ""
	if withReceipt {
		receipt = `, receipt AS (
	INSERT INTO commit_receipts (token) SELECT ?::bytea FROM written
)`
	}
	return dialect.Rebind(dialect.Postgres, `WITH written AS (
	`+write+`
	RETURNING process_guid
), crash AS (
	INSERT INTO crashes (process_guid, definition_id, cell_id, crashed_at)
	SELECT ?::varchar, ?::varchar, ?::varchar, ?::bigint FROM written WHERE ?::boolean
), logged AS (
	INSERT INTO event_outbox (event_type, event_key, payload, event_count)
	SELECT e.event_type, e.event_key, e.payload, e.event_count
	FROM unnest(?::text[], ?::text[], ?::bytea[], ?::smallint[]) WITH ORDINALITY AS e(event_type, event_key, payload, event_count, n)
	WHERE EXISTS (SELECT 1 FROM written)
	ORDER BY e.n
)`+receipt+`
SELECT count(*) FROM written`)
}

// The statements of the three writes the fast path makes: a row with a
// receipt (crash, fail), a row without one (claim, start: their repeat
// writes nothing), a removal.
var (
	writeActualStatement          = lifecycleWriteStatement(updateActualLRP, true)
	writeActualRepeatingStatement = lifecycleWriteStatement(updateActualLRP, false)
	removeActualStatement         = lifecycleWriteStatement(deleteActualLRPSQL, true)
)

// lifecyclePostgres runs op's fast path (lifecycleFunc).
func (s *SQLDB) lifecyclePostgres(ctx context.Context, op lifecycleOp) (*models.ActualLRP, bool, error) {
	w, err := s.decideLifecycleWrite(ctx, op)
	if err != nil || w == nil {
		return nil, false, err
	}
	query := writeActualStatement
	switch {
	case w.removed:
		query = removeActualStatement
	case w.token == nil:
		query = writeActualRepeatingStatement
	}
	crash := w.crash
	if !w.recorded {
		crash = []any{"", "", "", int64(0)}
	}
	args := append(slices.Clip(w.row), crash...)
	args = append(args, w.recorded)
	args = append(args, w.events.arrays()...)
	if w.token != nil {
		args = append(args, w.token)
	}

	stmt, err := s.statements.get(ctx, s.conn, query)
	if err != nil {
		return nil, false, err
	}
	var wrote int
	run := func(stmt *sql.Stmt) error {
		return stmt.QueryRowContext(ctx, args...).Scan(&wrote)
	}
	// Coalesced as updateNowPostgres is: in a group's transaction, a
	// statement that stored nothing — the row changed since it was read,
	// most likely by an earlier write of the group — leaves the call to
	// the general path's body in that transaction, which sees that write.
	var inGroup struct {
		decided bool
		after   *models.ActualLRP
	}
	err = s.writeCoalesced(ctx, op.key.ProcessGuid, func(tx *sql.Tx) ([]models.Event, error) {
		inGroup.decided, inGroup.after = false, nil
		if err := run(tx.StmtContext(ctx, stmt)); err != nil {
			return nil, err
		}
		if wrote == 1 {
			return nil, nil
		}
		lrp, events, err := s.lifecycleInTx(ctx, tx, op)
		if err != nil {
			return nil, err
		}
		inGroup.decided, inGroup.after = true, lrp
		return events, nil
	}, func() error {
		// A group that ran the body and rolled back sends the call here.
		inGroup.decided, inGroup.after = false, nil
		settled, err := s.commitStatement(w.token, func() error { return run(stmt) })
		if settled {
			wrote = 1
		}
		return err
	})
	if err == nil && inGroup.decided {
		return inGroup.after, true, nil
	}
	return s.fastLifecycleOutcome(w, wrote == 1, err)
}
