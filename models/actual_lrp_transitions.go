package models

import "fmt"

// An ActualLRP moves through UNCLAIMED → CLAIMED → RUNNING, and to CRASHED
// when its process dies. CheckTransition decides whether a move is allowed,
// given the row as stored and who asks: an instance (instance_guid on
// cell_id) or, with both empty, the board itself.
//
//	from \ to   UNCLAIMED   CLAIMED     RUNNING     CRASHED
//	UNCLAIMED   anyone      any cell    any cell    no
//	CLAIMED     board/same  same        same        same
//	RUNNING     board/same  same        same        same
//	CRASHED     board       no          no          no
//
// "any cell": any instance may claim or start an unclaimed row, and becomes
// its owner (the lifecycle calls add the cell rule: only the cell the row
// is placed on; see DecideLifecycle). "same": only the instance that owns
// the row (the same instance_guid and cell_id). "board/same": the board, or
// the owner giving the row up; another instance may not. "board": the
// board alone: a CRASHED row has no instance and no cell (DecideLifecycle
// clears them), so it has no owner. A CRASHED row is restarted by making
// it UNCLAIMED again and placing it anew, never by claiming it where it
// crashed.
//
// The table is read by a test, against rows as DecideLifecycle leaves
// them: keep it true. RUNNING → CLAIMED lets a running instance that fails its
// health check go back to starting. Presence plays no part here: the rules
// are the same for ORDINARY, EVACUATING, SUSPECT and RETIRING rows.
//
// A rule violation is InvalidStateTransition; a malformed ask (an unknown
// target state, a claim without an instance) is InvalidRequest.
func CheckTransition(current *ActualLRP, next ActualLRP_State, instanceGuid, cellID string) error {
	if !next.IsValid() {
		return ErrInvalidField("state", fmt.Sprintf("unknown actual LRP state %d", next))
	}
	if current == nil {
		return NewError(Error_InvalidStateTransition, "cannot move a missing actual LRP to %s", next)
	}
	from := current.GetState()
	if !from.IsValid() {
		return NewError(Error_InvalidStateTransition,
			"cannot move actual LRP %s from %s: its state is unknown", describeLRP(current), from)
	}
	askedByBoard := instanceGuid == "" && cellID == ""
	if next != ActualLRP_UNCLAIMED {
		if instanceGuid == "" {
			return ErrInvalidField("instance_guid", "required to move an actual LRP to "+next.String())
		}
		if cellID == "" {
			return ErrInvalidField("cell_id", "required to move an actual LRP to "+next.String())
		}
	}

	switch {
	case from == ActualLRP_UNCLAIMED && next == ActualLRP_CRASHED:
		return transitionError(current, next, "nothing runs there to crash")
	case from == ActualLRP_UNCLAIMED:
		return nil
	case from == ActualLRP_CRASHED && next != ActualLRP_UNCLAIMED:
		return transitionError(current, next, "a crashed instance restarts by being unclaimed and placed again")
	case next == ActualLRP_UNCLAIMED && askedByBoard:
		return nil
	case current.BelongsTo(instanceGuid, cellID):
		return nil
	default:
		return transitionError(current, next, fmt.Sprintf(
			"it belongs to instance %q on cell %q, not instance %q on cell %q",
			current.GetInstanceGuid(), current.GetCellId(), instanceGuid, cellID))
	}
}

func transitionError(current *ActualLRP, next ActualLRP_State, why string) *Error {
	return NewError(Error_InvalidStateTransition, "cannot move actual LRP %s from %s to %s: %s",
		describeLRP(current), current.GetState(), next, why)
}

func describeLRP(lrp *ActualLRP) string {
	return fmt.Sprintf("%s/%d", lrp.GetProcessGuid(), lrp.GetIndex())
}

// BelongsTo reports whether the row is owned by the instance instanceGuid
// on cell cellID. A row without an instance belongs to nobody.
func (a *ActualLRP) BelongsTo(instanceGuid, cellID string) bool {
	return a.GetInstanceGuid() != "" &&
		a.GetInstanceGuid() == instanceGuid &&
		a.GetCellId() == cellID
}

// IsValid reports whether s is one of the states an instance can be in;
// STATE_UNKNOWN (the zero value) and undefined numbers are not.
func (s ActualLRP_State) IsValid() bool {
	switch s {
	case ActualLRP_UNCLAIMED, ActualLRP_CLAIMED, ActualLRP_RUNNING, ActualLRP_CRASHED:
		return true
	}
	return false
}

// IsValid reports whether p is a defined presence; PRESENCE_UNKNOWN (the
// zero value) and undefined numbers are not.
func (p ActualLRP_Presence) IsValid() bool {
	switch p {
	case ActualLRP_ORDINARY, ActualLRP_EVACUATING, ActualLRP_SUSPECT, ActualLRP_RETIRING:
		return true
	}
	return false
}

// CheckInstanceCell refuses a cell's call that names, as its own, an
// instance that runs on another cell: row holds instanceGuid, on a cell
// other than cellID. A rep makes the guids of the instances it claims, so
// an honest rep never names one of another cell's; it is refused rather
// than ignored so that the caller hears it, and it changes nothing. A row
// that holds another instance (or none) is not refused here: that is a
// stale call, which each call answers in its own way.
func CheckInstanceCell(row *ActualLRP, verb, instanceGuid, cellID string) error {
	if row == nil || row.GetInstanceGuid() == "" || row.GetInstanceGuid() != instanceGuid || row.GetCellId() == cellID {
		return nil
	}
	return NewError(Error_InvalidStateTransition, "cannot %s actual LRP %s (%s): instance %q runs on cell %q, not on cell %q",
		verb, describeLRP(row), row.GetPresence(), instanceGuid, row.GetCellId(), cellID)
}
