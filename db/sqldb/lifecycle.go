package sqldb

import (
	"context"
	"database/sql"
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
// On Postgres the common case is one round trip: a single conditional
// UPDATE that locks, checks and writes the row and returns it before and
// after (see lifecycle_postgres.go). When that matches nothing — a refusal,
// a repeat, a missing or locked row — the call runs the general path
// below, in a transaction, which also words the precise error.

func (s *SQLDB) ClaimActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller) (*models.ActualLRP, error) {
	if err := checkLifecycleCall(key, caller); err != nil {
		return nil, err
	}
	return s.lifecycle(ctx, lifecycleOp{
		key:  key,
		call: models.LifecycleCall{Verb: models.LifecycleClaim, InstanceGuid: caller.InstanceGuid, CellID: caller.CellID},
		fast: claimPostgres(caller),
	})
}

func (s *SQLDB) StartActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller, netInfo *models.NetInfo, routable bool) (*models.ActualLRP, error) {
	if err := checkLifecycleCall(key, caller); err != nil {
		return nil, err
	}
	encodedNetInfo, err := encodeNetInfo(netInfo)
	if err != nil {
		return nil, errInvalid("net_info", err.Error())
	}
	routable = models.RoutableWhenStarted(key.Index, routable)
	fast := startPostgres(caller, encodedNetInfo, routable)
	if key.Presence != models.ActualLRP_ORDINARY {
		// Only ever RUNNING → RUNNING: the general path checks that.
		fast = nil
	}
	op := lifecycleOp{
		key: key,
		call: models.LifecycleCall{Verb: models.LifecycleStart, InstanceGuid: caller.InstanceGuid, CellID: caller.CellID,
			NetInfo: netInfo, Routable: routable},
		fast: fast,
	}
	// An instance that starts takes the routes of its definition; a
	// running one keeps its own (a change of routes rewrites them).
	op.read = func(ctx context.Context, tx *sql.Tx, before *models.ActualLRP, call *models.LifecycleCall) (err error) {
		if before.State != models.ActualLRP_RUNNING {
			call.RoutePorts, err = s.definitionRoutePorts(ctx, tx, before.ProcessGuid, before.DefinitionId)
		}
		return err
	}
	started, err := s.lifecycle(ctx, op)
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
	return s.lifecycle(ctx, lifecycleOp{
		key: key,
		call: models.LifecycleCall{Verb: models.LifecycleCrash, InstanceGuid: caller.InstanceGuid, CellID: caller.CellID,
			CrashReason: reason},
		fast: crashPostgres(caller, reason),
	})
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
	return s.lifecycle(ctx, lifecycleOp{
		key:  key,
		call: models.LifecycleCall{Verb: models.LifecycleFail, CellID: cellID, PlacementError: placementError},
		fast: failPostgres(cellID, placementError),
	})
}

// RemoveActualLRP deletes the row if it belongs to the caller, whatever its
// state, and emits actual_lrp_removed.
func (s *SQLDB) RemoveActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller) error {
	if err := checkLifecycleCall(key, caller); err != nil {
		return err
	}
	if remove := s.driver.remove(); remove != nil {
		done, err := remove(s, ctx, key, caller)
		if err != nil || done {
			return asModelError("remove actual lrp", err)
		}
	}
	_, err := s.lifecycle(ctx, lifecycleOp{
		key:  key,
		call: models.LifecycleCall{Verb: models.LifecycleRemove, InstanceGuid: caller.InstanceGuid, CellID: caller.CellID},
	})
	return err
}

// lifecycleOp is one lifecycle call on one row.
type lifecycleOp struct {
	key  models.ActualLRPKey
	call models.LifecycleCall
	// read, when set, reads what the call needs besides the row into
	// call, in the call's transaction.
	read func(ctx context.Context, tx *sql.Tx, before *models.ActualLRP, call *models.LifecycleCall) error
	// fast is the call's one-statement form on Postgres.
	fast *fastLifecycle
}

// lifecycle runs op: lock the row, decide (models.DecideLifecycle), write
// the difference, log the events. It returns the row as it is afterwards
// (nil when removed).
func (s *SQLDB) lifecycle(ctx context.Context, op lifecycleOp) (*models.ActualLRP, error) {
	opName := string(op.call.Verb) + " actual lrp"
	if fast := s.driver.lifecycle(); fast != nil && op.fast != nil {
		after, err := fast(s, ctx, op)
		if err != nil || after != nil {
			return after, asModelError(opName, err)
		}
	}
	var result *models.ActualLRP
	err := s.transactKeyed(ctx, opName, op.key.ProcessGuid, func(tx *sql.Tx) ([]models.Event, error) {
		before, err := s.lockActualLRP(ctx, tx, op.key)
		if err != nil {
			return nil, err
		}
		if before == nil {
			return nil, errActualNotFound(op.key)
		}
		call := op.call
		if op.read != nil {
			if err := op.read(ctx, tx, before, &call); err != nil {
				return nil, err
			}
		}
		change, err := models.DecideLifecycle(before, call, s.now().UnixNano())
		switch {
		case err != nil:
			return nil, err
		case change.Removed:
			if err := s.deleteActualLRP(ctx, tx, before); err != nil {
				return nil, err
			}
		case change.After == nil:
			result = before
			return nil, nil
		default:
			if err := s.writeActualLRP(ctx, tx, before, change.After); err != nil {
				return nil, err
			}
			if op.call.Verb == models.LifecycleCrash {
				if err := s.recordCrash(ctx, tx, before, change.After.Since); err != nil {
					return nil, err
				}
			}
			result = change.After
		}
		return change.Events, nil
	})
	if err != nil {
		return nil, err
	}
	return result, nil
}

// deleteActualLRP deletes the row before, compare-and-set on its tag.
func (s *SQLDB) deleteActualLRP(ctx context.Context, tx *sql.Tx, before *models.ActualLRP) error {
	return s.execOne(ctx, tx, `DELETE FROM actual_lrps WHERE process_guid = ? AND instance_index = ? AND presence = ?
 AND modification_tag_epoch = ? AND modification_tag_index = ?`,
		before.ProcessGuid, before.Index, before.Presence.String(), before.ModificationTag.Epoch, int64(before.ModificationTag.Index))
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
