package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ db.ActualLRPLifecycleDB = (*SQLDB)(nil)

// The cell side of the instance lifecycle (db.ActualLRPLifecycleDB).
//
// Every call locks the row, decides with models.DecideLifecycle (the
// rules, and the crash decision, are there), and writes the row's next
// version compare-and-set on its modification tag, or deletes it, then
// logs the decision's events. A refused call writes nothing, nor does a
// repeat of a claim or start that already holds: reps may repeat
// themselves, and hear the row as stored.
//
// On Postgres and MySQL the common case is two round trips: a read of the
// row without lock or transaction, the decision, then one round trip that
// writes it if the row is still as read, and commits (see
// lifecycle_fast.go). Anything else — a refusal, a repeat, a missing row, a
// row that moved on — runs the general path below, in a transaction, which
// also words the precise error.

func (s *SQLDB) ClaimActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller) (*models.ActualLRP, error) {
	if err := checkLifecycleCall(key, caller); err != nil {
		return nil, err
	}
	return s.lifecycle(ctx, lifecycleOpFor(key,
		models.LifecycleCall{Verb: models.LifecycleClaim, InstanceGuid: caller.InstanceGuid, CellID: caller.CellID}))
}

func (s *SQLDB) StartActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller, netInfo *models.NetInfo, routable bool) (*models.ActualLRP, error) {
	if err := checkLifecycleCall(key, caller); err != nil {
		return nil, err
	}
	if _, err := encodeNetInfo(netInfo); err != nil {
		return nil, errInvalid("net_info", err.Error())
	}
	routable = models.RoutableWhenStarted(key.Index, routable)
	started, err := s.lifecycle(ctx, lifecycleOpFor(key,
		models.LifecycleCall{Verb: models.LifecycleStart, InstanceGuid: caller.InstanceGuid, CellID: caller.CellID,
			NetInfo: netInfo, Routable: routable}))
	if err != nil || routable {
		return started, err
	}
	// An instance is told unroutable so that routers stop sending it
	// requests before its rep stops it: the answer must mean that the
	// event routers follow is in the log, not only committed. Should the
	// database go away between the two, the rep hears Unavailable and
	// asks again, and the instance serves on meanwhile.
	if err := s.logCommitted(ctx); err != nil {
		return nil, err
	}
	return started, nil
}

func (s *SQLDB) CrashActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller, reason string) (*models.ActualLRP, error) {
	if err := checkLifecycleCall(key, caller); err != nil {
		return nil, err
	}
	return s.lifecycle(ctx, lifecycleOpFor(key,
		models.LifecycleCall{Verb: models.LifecycleCrash, InstanceGuid: caller.InstanceGuid, CellID: caller.CellID,
			CrashReason: reason}))
}

// FailActualLRP gives an UNCLAIMED row placed on cellID back for placement
// elsewhere: its cell is cleared, placementError recorded and since moved to
// now (placement runs on since). A claimed or running instance that cannot
// run is crashed instead.
func (s *SQLDB) FailActualLRP(ctx context.Context, key models.ActualLRPKey, cellID, placementError string) (*models.ActualLRP, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if cellID == "" {
		return nil, errInvalid("cell_id", "required")
	}
	return s.lifecycle(ctx, lifecycleOpFor(key,
		models.LifecycleCall{Verb: models.LifecycleFail, CellID: cellID, PlacementError: placementError}))
}

// RemoveActualLRP deletes the row if it belongs to the caller, whatever its
// state, and emits actual_lrp_removed.
func (s *SQLDB) RemoveActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller) error {
	if err := checkLifecycleCall(key, caller); err != nil {
		return err
	}
	_, err := s.lifecycle(ctx, lifecycleOpFor(key,
		models.LifecycleCall{Verb: models.LifecycleRemove, InstanceGuid: caller.InstanceGuid, CellID: caller.CellID}))
	return err
}

// lifecycleOp is one lifecycle call on one row.
type lifecycleOp struct {
	key  models.ActualLRPKey
	call models.LifecycleCall
	// read, when set, puts into call what the call needs besides the row;
	// definitionRoutePorts reads the route ports of the row's definition.
	read func(before *models.ActualLRP, call *models.LifecycleCall, definitionRoutePorts func() ([]*models.RoutePort, error)) error
}

// lifecycleFunc is a driver's fast path for a lifecycle call: done says
// it ran the call (after is the row afterwards, nil when removed); when
// not done, the transactional path decides.
type lifecycleFunc func(s *SQLDB, ctx context.Context, op lifecycleOp) (after *models.ActualLRP, done bool, err error)

// lifecycleOpFor is the op of call on key. A start reads the route ports of the row's definition: an instance that
// starts takes the routes of its definition; a running one keeps its own
// (a change of routes rewrites them).
func lifecycleOpFor(key models.ActualLRPKey, call models.LifecycleCall) lifecycleOp {
	op := lifecycleOp{key: key, call: call}
	if call.Verb == models.LifecycleStart {
		op.read = func(before *models.ActualLRP, call *models.LifecycleCall, definitionRoutePorts func() ([]*models.RoutePort, error)) (err error) {
			if before.State != models.ActualLRP_RUNNING {
				call.RoutePorts, err = definitionRoutePorts()
			}
			return err
		}
	}
	return op
}

// lifecycle runs op: lock the row, decide (models.DecideLifecycle), write
// the difference, log the events. It returns the row as it is afterwards
// (nil when removed).
func (s *SQLDB) lifecycle(ctx context.Context, op lifecycleOp) (*models.ActualLRP, error) {
	opName := string(op.call.Verb) + " actual lrp"
	unanswered := false
	if fast := s.driver.lifecycle(); fast != nil {
		after, done, err := fast(s, ctx, op)
		// A claim's or a start's write whose answer was lost is decided
		// again below (commitStatement).
		unanswered = errors.Is(err, errRepeatToSettle)
		if (err != nil && !unanswered) || done {
			return after, asModelError(opName, err)
		}
	}
	var result *models.ActualLRP
	err := s.transactKeyed(ctx, opName, op.key.ProcessGuid, func(tx *sql.Tx) (events []models.Event, err error) {
		result, events, err = s.lifecycleInTx(ctx, tx, op)
		return events, err
	})
	if unanswered {
		// The lost write may have appended events, which a repeat does
		// not: the tailer is woken for them as that write's answer would
		// have woken it.
		s.eventsCommitted()
	}
	if err != nil {
		return nil, err
	}
	return result, nil
}

// lifecycleInTx is the general path's body in tx: it locks the row,
// decides and writes the difference, and returns the row afterwards (nil
// when removed) and the events to log.
func (s *SQLDB) lifecycleInTx(ctx context.Context, tx *sql.Tx, op lifecycleOp) (*models.ActualLRP, []models.Event, error) {
	before, err := s.lockActualLRP(ctx, tx, op.key)
	if err != nil {
		return nil, nil, err
	}
	if before == nil {
		return nil, nil, errActualNotFound(op.key)
	}
	call := op.call
	if op.read != nil {
		err := op.read(before, &call, func() ([]*models.RoutePort, error) {
			return s.definitionRoutePorts(ctx, tx, before.ProcessGuid, before.DefinitionId)
		})
		if err != nil {
			return nil, nil, err
		}
	}
	change, err := models.DecideLifecycle(before, call, s.now().UnixNano())
	switch {
	case err != nil:
		return nil, nil, err
	case change.Removed:
		if err := s.deleteActualLRP(ctx, tx, before); err != nil {
			return nil, nil, err
		}
		return nil, change.Events, nil
	case change.After == nil:
		return before, nil, nil
	}
	if err := s.writeActualLRP(ctx, tx, before, change.After); err != nil {
		return nil, nil, err
	}
	if crash, ok := crashRecorded(op.call.Verb, before, change.After); ok {
		if _, err := s.exec(ctx, tx, insertCrash, crash...); err != nil {
			return nil, nil, err
		}
	}
	return change.After, change.Events, nil
}

// deleteActualLRP deletes the row before, compare-and-set on its tag.
func (s *SQLDB) deleteActualLRP(ctx context.Context, tx *sql.Tx, before *models.ActualLRP) error {
	return s.execOne(ctx, tx, deleteActualLRPSQL, actualLRPDeleteArgs(before)...)
}

// deleteActualLRPSQL deletes a row compare-and-set on its tag
// (actualLRPDeleteArgs).
var deleteActualLRPSQL = "DELETE FROM actual_lrps" + actualLRPByKey + actualLRPTagIs

func actualLRPDeleteArgs(before *models.ActualLRP) []any {
	return []any{before.ProcessGuid, before.Index, before.Presence.String(), before.ModificationTag.Epoch, int64(before.ModificationTag.Index)}
}

func checkKey(key models.ActualLRPKey) error {
	if key.ProcessGuid == "" {
		return errInvalid("process_guid", "required")
	}
	if err := checkWidth("process_guid", key.ProcessGuid, maxProcessGuid); err != nil {
		return err
	}
	if !key.Presence.IsValid() {
		return errInvalid("presence", fmt.Sprintf("unknown presence %d", key.Presence))
	}
	return nil
}

func checkLifecycleCall(key models.ActualLRPKey, caller models.Caller) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if caller.InstanceGuid == "" {
		return errInvalid("instance_guid", "required")
	}
	if caller.CellID == "" {
		return errInvalid("cell_id", "required")
	}
	return nil
}

func errActualNotFound(key models.ActualLRPKey) error {
	return errNotFound("actual_lrp %s not found", describeKey(key))
}

// describeKey names a row in messages: "web/0 (ORDINARY)".
func describeKey(key models.ActualLRPKey) string {
	return fmt.Sprintf("%s/%d (%s)", key.ProcessGuid, key.Index, key.Presence)
}
