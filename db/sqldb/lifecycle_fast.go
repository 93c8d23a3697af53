package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// The lifecycle calls' fast path on the server databases, where claim and
// start throughput is bound by round trips and the database's CPU. The
// general path (lifecycle) costs five or six: BEGIN, the locked read, a
// start's route ports, the write, the events with the commit receipt,
// COMMIT. This costs two, for every call (claim, start, crash, fail,
// remove):
//
//  1. Read the row without lock or transaction, with the route ports of
//     its definition when the call reads them (lifecycleOp.read).
//  2. Decide in Go, with models.DecideLifecycle and the general path's own
//     helpers: the row after (actualLRPWriteArgs), the crash to record
//     (crashRecorded), the events (decideLifecycleWrite).
//  3. Write it all in one round trip that stores the row — or deletes it,
//     for a removal — only if it still carries the tag read,
//     compare-and-set as the general path's write is, and everything else
//     only if it did, and commits: one auto-committed statement on
//     Postgres (lifecycle_postgres.go), one batch of statements from START
//     TRANSACTION to COMMIT on MySQL (lifecycle_mysql.go).
//
// So the write is what the general path would have written had it locked
// the row at the read; it states no rule of its own. It waits for a row
// another transaction holds, as the general path's lock would, and then
// finds the tag moved.
//
// It declines — leaves the call to the general path, to lock, decide
// with what it then finds and word any refusal — when the row is missing,
// when the decider refuses the call or finds it a repeat, when the write
// stores nothing (the row moved on since the read) or fails for a
// transient reason, and for a write under a lease tenure (db.WithFence),
// whose fence is checked in a transaction.
//
// Worked example (bbs-load peer's start): the read finds web/0 CLAIMED
// by ig-1 on cell-1 at tag (e1, 4), and its definition's route port 8080.
// The decider gives RUNNING, routable, that route, tag (e1, 5), and one
// actual_lrp_changed event. The write updates web/0 where its tag is
// (e1, 4), inserts the event (and no receipt: a start's repeat writes
// nothing, models.LifecycleVerb.RepeatWritesNothing), and answers 1: the
// call answers the row after. Had its answer been lost, the general path
// would have decided the start again and found it a repeat. Had a
// convergence pass unclaimed web/0 between the read and the write (tag
// (e1, 5)), it would answer 0 and the general path would refuse the start
// with the row as it then is.

// selectActualToDecide is the fast path's read (1) of a call without
// lifecycleOp.read; selectActualToDecideWithRoutes adds the route ports
// of the row's definition (definitionRoutePorts' column).
var (
	selectActualToDecide           = selectActualLRP + actualLRPByKey
	selectActualToDecideWithRoutes = "SELECT " + strings.Join(actualLRPColumns, ", ") + `,
 (SELECT r.route_ports FROM run_infos r WHERE r.process_guid = a.process_guid AND r.definition_id = a.definition_id)
 FROM actual_lrps a` + actualLRPByKey
)

// lifecycleWrite is what the fast path writes for a call (2): the row
// after, or its removal, compare-and-set on the tag read; the crash to
// record; the events in order; the commit receipt's token, nil for a
// claim or a start, whose repeat writes nothing (commitStatement).
type lifecycleWrite struct {
	after   *models.ActualLRP
	removed bool
	// row is updateActualLRP's arguments, or deleteActualLRPSQL's for a
	// removal.
	row []any
	// crash is insertCrash's arguments when recorded.
	crash    []any
	recorded bool

	events outboxRows
	token  []byte
}

// decideLifecycleWrite is the fast path's read (1) and decision (2): nil
// when the fast path declines before writing.
func (s *SQLDB) decideLifecycleWrite(ctx context.Context, op lifecycleOp) (*lifecycleWrite, error) {
	if _, fenced := db.FenceOf(ctx); fenced {
		return nil, nil
	}
	before, call, err := s.readActualToDecide(ctx, op)
	if err != nil || before == nil {
		return nil, err
	}
	change, err := models.DecideLifecycle(before, call, s.now().UnixNano())
	if err != nil || (change.After == nil && !change.Removed) {
		return nil, nil
	}
	w := &lifecycleWrite{after: change.After, removed: change.Removed}
	if w.removed {
		w.row = actualLRPDeleteArgs(before)
	} else if w.row, err = actualLRPWriteArgs(before, w.after); err != nil {
		return nil, err
	}
	w.crash, w.recorded = crashRecorded(op.call.Verb, before, w.after)
	if w.events, err = encodeEvents(change.Events); err != nil {
		return nil, err
	}
	if !op.call.Verb.RepeatWritesNothing() {
		w.token = s.newReceiptToken()
	}
	return w, nil
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

// fastLifecycleOutcome is a fast path's answer once its write ran (3):
// wrote says it stored the row, err is the write's error.
func (s *SQLDB) fastLifecycleOutcome(w *lifecycleWrite, wrote bool, err error) (*models.ActualLRP, bool, error) {
	switch {
	case err == nil && wrote:
		s.eventsCommitted()
		return w.after, true, nil
	case errors.Is(err, errRepeatToSettle):
		return nil, false, err // decided again by the general path (lifecycle)
	case err == nil, isRetryable(err):
		return nil, false, nil
	default:
		return nil, false, err
	}
}
