package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/lib/pq"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/models"
)

// The lifecycle calls' fast path on Postgres, where claim and start
// throughput is bound by round trips and the database's CPU. The general
// path (lifecycle) costs five: BEGIN, the locked read, the write, the
// events with the commit receipt, COMMIT. This costs two, for every call
// (claim, start, crash, fail, remove):
//
//  1. Read the row without lock or transaction, with the route ports of
//     its definition when the call reads them (lifecycleOp.read).
//  2. Decide in Go, with models.DecideLifecycle and the general path's own
//     helpers: the row after (actualLRPWriteArgs), the crash to record
//     (crashRecorded), the events.
//  3. Write it all in one prepared, auto-committed statement
//     (lifecycleWriteStatement) that stores the row — or deletes it, for
//     a removal — only if it still carries the tag read, compare-and-set
//     as the general path's write is, and everything else only if it did.
//
// So the statement writes what the general path would have written had
// it locked the row at the read; it states no rule of its own. The
// statement waits for a row another transaction holds, as the general
// path's lock would, and then finds the tag moved.
//
// It declines — leaves the call to the general path, to lock, decide
// with what it then finds and word any refusal — when the row is missing,
// when the decider refuses the call or finds it a repeat, when the
// statement stores nothing (the row moved on since the read) or fails
// for a transient reason, and for a write under a lease tenure
// (db.WithFence), whose fence is checked in a transaction.
//
// Worked example (bbs-load peer's start): the read finds web/0 CLAIMED
// by ig-1 on cell-1 at tag (e1, 4), and its definition's route port 8080.
// The decider gives RUNNING, routable, that route, tag (e1, 5), and one
// actual_lrp_changed event. The statement updates web/0 where its tag is
// (e1, 4), inserts the event and the receipt, and answers 1: the call
// answers the row after. Had a convergence pass unclaimed web/0 between
// the read and the statement (tag (e1, 5)), it would answer 0 and the
// general path would refuse the start with the row as it then is.

// selectActualToDecide is the fast path's read (1) of a call without
// lifecycleOp.read; selectActualToDecideWithRoutes adds the route ports
// of the row's definition (definitionRoutePorts' column).
var (
	selectActualToDecide           = selectActualLRP + " WHERE process_guid = ? AND instance_index = ? AND presence = ?"
	selectActualToDecideWithRoutes = "SELECT " + prefixed("a.", actualLRPColumns) + `,
 (SELECT r.route_ports FROM run_infos r WHERE r.process_guid = a.process_guid AND r.definition_id = a.definition_id)
 FROM actual_lrps a WHERE a.process_guid = ? AND a.instance_index = ? AND a.presence = ?`
)

// lifecycleWriteStatement is the fast path's write (3) of a row (write is
// updateActualLRP) or of a removal (deleteActualLRPSQL), then, only where
// that wrote the row, the crash (when the fifth argument after write's own
// is true), the events in order and the commit receipt (commitStatement).
// The answer is how many rows it wrote.
func lifecycleWriteStatement(write string) string {
	return dialect.Rebind(dialect.Postgres, `WITH written AS (
	`+write+`
	RETURNING process_guid
), crash AS (
	INSERT INTO crashes (process_guid, definition_id, cell_id, crashed_at)
	SELECT ?::varchar, ?::varchar, ?::varchar, ?::bigint FROM written WHERE ?::boolean
), logged AS (
	INSERT INTO event_outbox (event_type, event_key, payload)
	SELECT e.event_type, e.event_key, e.payload
	FROM unnest(?::text[], ?::text[], ?::bytea[]) WITH ORDINALITY AS e(event_type, event_key, payload, n)
	WHERE EXISTS (SELECT 1 FROM written)
	ORDER BY e.n
), receipt AS (
	INSERT INTO commit_receipts (token) SELECT ?::bytea FROM written
)
SELECT count(*) FROM written`)
}

var (
	writeActualStatement  = lifecycleWriteStatement(updateActualLRP)
	removeActualStatement = lifecycleWriteStatement(deleteActualLRPSQL)
)

func prefixed(prefix string, columns []string) string {
	out := make([]string, len(columns))
	for i, c := range columns {
		out[i] = prefix + c
	}
	return strings.Join(out, ", ")
}

// lifecyclePostgres runs op's fast path (lifecycleFunc).
func (s *SQLDB) lifecyclePostgres(ctx context.Context, op lifecycleOp) (*models.ActualLRP, bool, error) {
	if _, fenced := db.FenceOf(ctx); fenced {
		return nil, false, nil
	}
	before, call, err := s.readActualToDecide(ctx, op)
	if err != nil || before == nil {
		return nil, false, err
	}
	change, err := models.DecideLifecycle(before, call, s.now().UnixNano())
	if err != nil || (change.After == nil && !change.Removed) {
		return nil, false, nil
	}
	after := change.After
	query, args := removeActualStatement, actualLRPDeleteArgs(before)
	if !change.Removed {
		if args, err = actualLRPWriteArgs(before, after); err != nil {
			return nil, false, err
		}
		query = writeActualStatement
	}
	crash, recorded := crashRecorded(op.call.Verb, before, after)
	if !recorded {
		crash = []any{"", "", "", int64(0)}
	}
	types, keys, payloads, err := encodeEvents(change.Events)
	if err != nil {
		return nil, false, err
	}
	token := s.newReceiptToken()
	args = append(args, crash...)
	args = append(args, recorded, pq.Array(types), pq.Array(keys), pq.ByteaArray(payloads), token)

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
		settled, err := s.commitStatement(token, func() error { return run(stmt) })
		if settled {
			wrote = 1
		}
		return err
	})
	switch {
	case err == nil && inGroup.decided:
		return inGroup.after, true, nil
	case err == nil && wrote == 1:
		s.eventsCommitted()
		return after, true, nil
	case err == nil, isRetryable(err):
		return nil, false, nil
	default:
		return nil, false, err
	}
}

// readActualToDecide is the fast path's read (1): the row as committed,
// nil when there is none, and op's call with what op.read puts in it.
func (s *SQLDB) readActualToDecide(ctx context.Context, op lifecycleOp) (*models.ActualLRP, models.LifecycleCall, error) {
	call := op.call
	args := []any{op.key.ProcessGuid, op.key.Index, op.key.Presence.String()}
	var row rowScanner
	var routePorts []byte
	if op.read == nil {
		row = s.queryRow(ctx, s.conn, selectActualToDecide, args...)
	} else {
		row = extraColumns{row: s.queryRow(ctx, s.conn, selectActualToDecideWithRoutes, args...), extra: []any{&routePorts}}
	}
	before, err := scanActualLRP(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, call, nil
	}
	if err != nil {
		return nil, call, err
	}
	if op.read != nil {
		err := op.read(before, &call, func() ([]*models.RoutePort, error) {
			return routePortsOfDefinition(before.ProcessGuid, before.DefinitionId, routePorts)
		})
		if err != nil {
			return nil, call, err
		}
	}
	return before, call, nil
}
