package sqldb

import (
	"context"
	"database/sql"
	"strings"

	"github.com/corkboard/corkboard/models"
)

// EvacuateActualLRP hands the caller's instance over to a replacement,
// start-before-stop (see db.ActualLRPLifecycleDB). Both rows of the index
// that matter, ORDINARY and EVACUATING, are read locked in key order
// (ORDINARY first, as compareActualLRPs orders them) and written in one
// transaction, compare-and-set on the ORDINARY row as read; the EVACUATING
// row is inserted, so a concurrent evacuation of the same index loses on
// the key and runs again to find the evacuation done.
//
// The EVACUATING row is a copy of the RUNNING ORDINARY row — instance,
// cell, definition, net info, routable, occupied, crash count — with a new
// modification tag, and since kept (the instance has run since then). The
// ORDINARY row becomes UNCLAIMED on no cell, since now, crash count kept,
// for convergence to place elsewhere; placement never picks the draining
// cell.
//
// A call naming an instance that runs on another cell (either row holds
// the caller's instance guid on a cell not the caller's) is refused with
// InvalidStateTransition (models.CheckInstanceCell) and changes nothing.
// A call naming an instance a rolling update made RETIRING (the RETIRING
// row, locked after the other two, is the caller's) is refused with
// ResourceConflict: its rep is to follow that row, which serves until the
// update asks for its stop, and stop it as RETIRING.
//
// A RUNNING instance is handed over only as its LRP's disruption budget
// allows (convergence.DecideEvacuation; the desired row is read locked,
// so two cells evacuating one LRP take turns): while the budget is spent
// the call is refused with ResourceConflict naming what holds it, and the
// rep keeps the instance running and asks again. Past the drain's
// deadline it goes all the same, and the first such hand-over is recorded
// on the cell (drain_overdue_at, with a cell_changed event).
func (s *SQLDB) EvacuateActualLRP(ctx context.Context, processGuid string, index int32, caller models.Caller) (bool, error) {
	ordinaryKey := models.ActualLRPKey{ProcessGuid: processGuid, Index: index, Presence: models.ActualLRP_ORDINARY}
	if err := checkLifecycleCall(ordinaryKey, caller); err != nil {
		return false, err
	}
	evacuatingKey := ordinaryKey
	evacuatingKey.Presence = models.ActualLRP_EVACUATING
	retiringKey := ordinaryKey
	retiringKey.Presence = models.ActualLRP_RETIRING
	var keepRunning bool
	err := s.transactPublishing(ctx, "evacuate actual lrp", func(tx *sql.Tx) ([]models.Event, error) {
		keepRunning = false
		ordinary, err := s.lockActualLRP(ctx, tx, ordinaryKey)
		if err != nil {
			return nil, err
		}
		evacuating, err := s.lockActualLRP(ctx, tx, evacuatingKey)
		if err != nil {
			return nil, err
		}
		for _, row := range []*models.ActualLRP{ordinary, evacuating} {
			if err := models.CheckInstanceCell(row, "evacuate", caller.InstanceGuid, caller.CellID); err != nil {
				return nil, err
			}
		}
		if evacuating != nil && evacuating.BelongsTo(caller.InstanceGuid, caller.CellID) {
			// Evacuated already: a repeat.
			keepRunning = true
			return nil, nil
		}
		if ordinary == nil || !ordinary.BelongsTo(caller.InstanceGuid, caller.CellID) {
			// A rolling update may have made the instance RETIRING since
			// its rep last looked: it serves until its replacement runs,
			// and the update then asks the rep to stop it. Told that
			// nothing of it needs to keep running, the rep would stop it
			// as the ORDINARY instance it believed it was, leaving its
			// RETIRING row routable (seen in the e2e budget spec: the
			// router's requests to it were refused until the row went).
			retiring, err := s.lockActualLRP(ctx, tx, retiringKey)
			if err != nil {
				return nil, err
			}
			if retiring != nil && retiring.BelongsTo(caller.InstanceGuid, caller.CellID) {
				return nil, models.NewError(models.Error_ResourceConflict,
					"cannot evacuate actual LRP %s: instance %q is RETIRING, replaced by a rolling update, which asks for its stop once its replacement runs; keep running",
					describeKey(ordinaryKey), caller.InstanceGuid)
			}
		}
		if ordinary == nil {
			return nil, nil
		}
		now := s.now().UnixNano()
		switch {
		case ordinary.State == models.ActualLRP_RUNNING && ordinary.BelongsTo(caller.InstanceGuid, caller.CellID):
			if evacuating != nil {
				return nil, models.NewError(models.Error_ResourceConflict,
					"cannot evacuate actual LRP %s yet: its EVACUATING row is instance %q on cell %q, still being replaced; keep running and try again",
					describeKey(ordinaryKey), evacuating.InstanceGuid, evacuating.CellId)
			}
			decision, err := s.decideEvacuation(ctx, tx, ordinary, caller.CellID, now)
			if err != nil {
				return nil, err
			}
			if !decision.Go {
				return nil, models.NewError(models.Error_ResourceConflict,
					"cannot evacuate actual LRP %s yet: %s: %s; keep running and try again",
					describeKey(ordinaryKey), decision.Blocked.Reason, decision.Blocked.Detail)
			}
			keepRunning = true
			events, err := s.evacuateRunning(ctx, tx, ordinary, now)
			if err != nil || !decision.Overdue {
				return events, err
			}
			overdue, err := s.recordOverdue(ctx, tx, caller.CellID, now)
			return append(events, overdue...), err
		case ordinary.State == models.ActualLRP_CLAIMED && ordinary.BelongsTo(caller.InstanceGuid, caller.CellID),
			ordinary.State == models.ActualLRP_UNCLAIMED && ordinary.CellId == caller.CellID:
			after := unassigned(ordinary, now)
			if err := s.writeActualLRP(ctx, tx, ordinary, after); err != nil {
				return nil, err
			}
			return []models.Event{models.ActualLRPChanged(ordinary, after)}, nil
		}
		return nil, nil
	})
	if err != nil {
		return false, err
	}
	return keepRunning, nil
}

// evacuateRunning inserts the EVACUATING copy of the RUNNING row ordinary
// and makes ordinary UNCLAIMED for placement elsewhere.
func (s *SQLDB) evacuateRunning(ctx context.Context, tx *sql.Tx, ordinary *models.ActualLRP, now int64) ([]models.Event, error) {
	evacuating := models.NextVersion(ordinary)
	evacuating.Presence = models.ActualLRP_EVACUATING
	evacuating.ModificationTag = &models.ModificationTag{Epoch: newEpoch()}
	if err := s.insertActualLRP(ctx, tx, evacuating); err != nil {
		if isUniqueViolation(err) {
			return nil, errLostRace
		}
		return nil, err
	}
	after := unassigned(ordinary, now)
	if err := s.writeActualLRP(ctx, tx, ordinary, after); err != nil {
		return nil, err
	}
	return []models.Event{models.ActualLRPCreated(evacuating), models.ActualLRPChanged(ordinary, after)}, nil
}

// unassigned is row's next version UNCLAIMED on no cell, since now, for
// placement to place anew; the crash count and definition stay.
func unassigned(row *models.ActualLRP, now int64) *models.ActualLRP {
	after := models.NextVersion(row)
	after.State = models.ActualLRP_UNCLAIMED
	after.CellId, after.InstanceGuid = "", ""
	after.NetInfo, after.Routable, after.Occupied = nil, false, false
	after.RoutePorts = nil
	after.PlacementError = ""
	after.Since = now
	return after
}

var insertActualLRP = "INSERT INTO actual_lrps (" + strings.Join(actualLRPColumns, ", ") + ") VALUES (?" +
	strings.Repeat(", ?", len(actualLRPColumns)-1) + ")"

// insertActualLRP inserts lrp as it is, every column of actualLRPColumns.
func (s *SQLDB) insertActualLRP(ctx context.Context, tx *sql.Tx, lrp *models.ActualLRP) error {
	netInfo, err := encodeNetInfo(lrp.NetInfo)
	if err != nil {
		return errInvalid("net_info", err.Error())
	}
	routePorts, err := storedRoutePorts(lrp)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, tx, insertActualLRP,
		lrp.ProcessGuid, lrp.Index, lrp.Presence.String(), lrp.Domain, lrp.InstanceGuid,
		lrp.CellId, lrp.DefinitionId, lrp.State.String(), netInfo, lrp.CrashCount, lrp.CrashReason, lrp.Since,
		lrp.PlacementError, lrp.Routable, lrp.Occupied, lrp.StopRequested, lrp.ModificationTag.Epoch, int64(lrp.ModificationTag.Index),
		routePorts)
	return err
}
