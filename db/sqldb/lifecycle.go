package sqldb

import (
	"context"
	"database/sql"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ db.ActualLRPLifecycleDB = (*SQLDB)(nil)

// The cell side of the instance lifecycle (db.ActualLRPLifecycleDB).
//
// Every call reads the row, decides with models.CheckTransition and the
// cell rule — a rep acts only on rows placed on its cell (UNCLAIMED) or
// owned by its instance there (CLAIMED, RUNNING) — and writes the row's
// next version compare-and-set on its modification tag, moving the tag
// index on by one; since moves to now when the state changes. A refused
// call writes nothing. A repeat of a claim or start that already holds
// (the row is the caller's, in that state, with that net info) writes
// nothing either and returns the row: reps may repeat themselves.
//
// On Postgres the common case is one round trip: a single conditional
// UPDATE that locks, checks and writes the row and returns it before and
// after (see lifecycle_postgres.go). When that matches nothing — a refusal,
// a repeat, a missing or locked row — the call runs the general path
// below, in a transaction, which also words the precise error.
//
// Crash decision: a CRASHED row keeps its definition, crash count and
// reason, and drops its instance, cell and net info. Nothing runs any
// more, so it neither holds capacity on the cell nor is routable; the
// crash policy restarts it by placing it anew (CheckTransition never lets
// it be claimed where it crashed). The actual_lrp_changed event's before
// shows where it ran.

func (s *SQLDB) ClaimActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller) (*models.ActualLRP, error) {
	if err := checkLifecycleCall(key, caller); err != nil {
		return nil, err
	}
	return s.lifecycle(ctx, lifecycleOp{
		verb: "claim",
		key:  key,
		decide: func(before *models.ActualLRP, now int64) (*models.ActualLRP, error) {
			if err := models.CheckTransition(before, models.ActualLRP_CLAIMED, caller.InstanceGuid, caller.CellID); err != nil {
				return nil, err
			}
			if before.State != models.ActualLRP_UNCLAIMED {
				// CLAIMED or RUNNING, and CheckTransition found it the
				// caller's: the claim holds already.
				return nil, nil
			}
			if err := checkPlacedOn(before, "claim", caller.CellID); err != nil {
				return nil, err
			}
			after := nextVersion(before)
			after.State = models.ActualLRP_CLAIMED
			after.InstanceGuid = caller.InstanceGuid
			after.PlacementError = ""
			after.Since = now
			return after, nil
		},
		events: changedEvents,
		fast:   claimPostgres(caller),
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
	if models.IsValidationIndex(key.Index) {
		// A validation instance only shows that its definition gets
		// healthy: routers never send it a request, whatever its rep says.
		routable = false
	}
	fast := startPostgres(caller, encodedNetInfo, routable)
	if key.Presence != models.ActualLRP_ORDINARY {
		// Only ever RUNNING → RUNNING: the general path checks that.
		fast = nil
	}
	// An instance that starts takes the routes of its definition; a
	// running one keeps its own (a change of routes rewrites them).
	var routePorts []*models.RoutePort
	started, err := s.lifecycle(ctx, lifecycleOp{
		verb: "start",
		key:  key,
		read: func(ctx context.Context, tx *sql.Tx, before *models.ActualLRP) (err error) {
			if before.State != models.ActualLRP_RUNNING {
				routePorts, err = s.definitionRoutePorts(ctx, tx, before.ProcessGuid, before.DefinitionId)
			}
			return err
		},
		decide: func(before *models.ActualLRP, now int64) (*models.ActualLRP, error) {
			if err := models.CheckTransition(before, models.ActualLRP_RUNNING, caller.InstanceGuid, caller.CellID); err != nil {
				return nil, err
			}
			if key.Presence != models.ActualLRP_ORDINARY && before.State != models.ActualLRP_RUNNING {
				return nil, models.NewError(models.Error_InvalidStateTransition,
					"cannot start actual LRP %s: it is %s, and a row other than ORDINARY only changes its routable and net info while RUNNING",
					describeKey(key), before.State)
			}
			switch before.State {
			case models.ActualLRP_UNCLAIMED:
				if err := checkPlacedOn(before, "start", caller.CellID); err != nil {
					return nil, err
				}
			case models.ActualLRP_RUNNING:
				if sameNetInfo(before.NetInfo, netInfo) && before.Routable == routable {
					return nil, nil
				}
			}
			after := nextVersion(before)
			if before.State != models.ActualLRP_RUNNING {
				after.Since = now
				after.RoutePorts = routePorts
			}
			after.State = models.ActualLRP_RUNNING
			after.InstanceGuid = caller.InstanceGuid
			after.NetInfo = cloneNetInfo(netInfo)
			after.Routable = routable
			after.PlacementError = ""
			return after, nil
		},
		events: changedEvents,
		fast:   fast,
	})
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
		verb: "crash",
		key:  key,
		decide: func(before *models.ActualLRP, now int64) (*models.ActualLRP, error) {
			if err := models.CheckTransition(before, models.ActualLRP_CRASHED, caller.InstanceGuid, caller.CellID); err != nil {
				return nil, err
			}
			after := nextVersion(before)
			after.State = models.ActualLRP_CRASHED
			after.CrashCount++
			after.CrashReason = reason
			after.Since = now
			after.InstanceGuid, after.CellId = "", ""
			after.NetInfo, after.Routable, after.Occupied, after.RoutePorts = nil, false, false, nil
			after.PlacementError = ""
			return after, nil
		},
		events: crashedEvents,
		fast:   crashPostgres(caller, reason),
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
		verb: "fail",
		key:  key,
		decide: func(before *models.ActualLRP, now int64) (*models.ActualLRP, error) {
			if before.State != models.ActualLRP_UNCLAIMED {
				return nil, models.NewError(models.Error_InvalidStateTransition,
					"cannot fail actual LRP %s: it is %s, and only an UNCLAIMED instance placed on a cell can fail there; crash a claimed or running one",
					describeKey(key), before.State)
			}
			if err := checkPlacedOn(before, "fail", cellID); err != nil {
				return nil, err
			}
			if err := models.CheckTransition(before, models.ActualLRP_UNCLAIMED, "", cellID); err != nil {
				return nil, err
			}
			after := nextVersion(before)
			after.CellId, after.InstanceGuid = "", ""
			after.PlacementError = placementError
			after.Since = now
			return after, nil
		},
		events: changedEvents,
		fast:   failPostgres(cellID, placementError),
	})
}

// RemoveActualLRP deletes the row if it belongs to the caller, whatever its
// state, and emits actual_lrp_removed.
func (s *SQLDB) RemoveActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller) error {
	if err := checkLifecycleCall(key, caller); err != nil {
		return err
	}
	if s.dialect == Postgres {
		done, err := s.removePostgres(ctx, key, caller)
		if err != nil || done {
			return asModelError("remove actual lrp", err)
		}
	}
	return s.transactPublishing(ctx, "remove actual lrp", func(tx *sql.Tx) ([]models.Event, error) {
		before, err := s.lockActualLRP(ctx, tx, key)
		if err != nil {
			return nil, err
		}
		if before == nil {
			return nil, errActualNotFound(key)
		}
		if !before.BelongsTo(caller.InstanceGuid, caller.CellID) {
			return nil, models.NewError(models.Error_InvalidStateTransition,
				"cannot remove actual LRP %s: it belongs to instance %q on cell %q, not instance %q on cell %q",
				describeKey(key), before.InstanceGuid, before.CellId, caller.InstanceGuid, caller.CellID)
		}
		res, err := s.exec(ctx, tx, `DELETE FROM actual_lrps WHERE process_guid = ? AND instance_index = ? AND presence = ?
 AND modification_tag_epoch = ? AND modification_tag_index = ?`,
			key.ProcessGuid, key.Index, key.Presence.String(), before.ModificationTag.Epoch, int64(before.ModificationTag.Index))
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, err
		} else if n != 1 {
			return nil, errLostRace
		}
		return []models.Event{models.ActualLRPRemoved(before)}, nil
	})
}

// lifecycleOp is one lifecycle call on one row.
type lifecycleOp struct {
	verb string
	key  models.ActualLRPKey
	// read, when set, reads what decide needs besides the row, in the
	// call's transaction.
	read func(ctx context.Context, tx *sql.Tx, before *models.ActualLRP) error
	// decide returns the row's next version, nil when the row already is
	// what the call asks for, or the error that refuses the call.
	decide func(before *models.ActualLRP, now int64) (*models.ActualLRP, error)
	events func(before, after *models.ActualLRP) []models.Event
	// fast is the call's one-statement form on Postgres.
	fast *fastLifecycle
}

func (s *SQLDB) lifecycle(ctx context.Context, op lifecycleOp) (*models.ActualLRP, error) {
	opName := op.verb + " actual lrp"
	if s.dialect == Postgres && op.fast != nil {
		after, err := s.lifecyclePostgres(ctx, op)
		if err != nil || after != nil {
			return after, asModelError(opName, err)
		}
	}
	var result *models.ActualLRP
	err := s.transactPublishing(ctx, opName, func(tx *sql.Tx) ([]models.Event, error) {
		before, err := s.lockActualLRP(ctx, tx, op.key)
		if err != nil {
			return nil, err
		}
		if before == nil {
			return nil, errActualNotFound(op.key)
		}
		if op.read != nil {
			if err := op.read(ctx, tx, before); err != nil {
				return nil, err
			}
		}
		after, err := op.decide(before, s.now().UnixNano())
		if err != nil {
			return nil, err
		}
		if after == nil {
			result = before
			return nil, nil
		}
		if err := s.writeActualLRP(ctx, tx, before, after); err != nil {
			return nil, err
		}
		result = after
		return op.events(before, after), nil
	})
	if err != nil {
		return nil, err
	}
	return result, nil
}

func changedEvents(before, after *models.ActualLRP) []models.Event {
	return []models.Event{models.ActualLRPChanged(before, after)}
}

// crashedEvents announce the crash, then the change of state.
func crashedEvents(before, after *models.ActualLRP) []models.Event {
	return []models.Event{models.ActualLRPCrashed(after), models.ActualLRPChanged(before, after)}
}

// checkPlacedOn is the cell rule for an UNCLAIMED row: only the cell it is
// placed on may act on it.
func checkPlacedOn(lrp *models.ActualLRP, verb, cellID string) error {
	switch lrp.CellId {
	case cellID:
		return nil
	case "":
		return models.NewError(models.Error_InvalidStateTransition,
			"cannot %s actual LRP %s on cell %q: it is not placed on any cell yet", verb, describeLRP(lrp), cellID)
	default:
		return models.NewError(models.Error_InvalidStateTransition,
			"cannot %s actual LRP %s on cell %q: it is placed on cell %q", verb, describeLRP(lrp), cellID, lrp.CellId)
	}
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

func describeLRP(lrp *models.ActualLRP) string {
	return describeKey(models.ActualLRPKey{ProcessGuid: lrp.ProcessGuid, Index: lrp.Index, Presence: lrp.Presence})
}

// sameNetInfo compares net info as stored: unset is not the same as empty.
func sameNetInfo(a, b *models.NetInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return proto.Equal(a, b)
}

func cloneNetInfo(n *models.NetInfo) *models.NetInfo {
	if n == nil {
		return nil
	}
	return proto.Clone(n).(*models.NetInfo)
}
