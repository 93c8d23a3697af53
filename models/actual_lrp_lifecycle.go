package models

import (
	"bytes"
	"fmt"

	"google.golang.org/protobuf/proto"
)

// LifecycleVerb names one of a cell's calls on one instance row.
type LifecycleVerb string

const (
	LifecycleClaim  LifecycleVerb = "claim"
	LifecycleStart  LifecycleVerb = "start"
	LifecycleCrash  LifecycleVerb = "crash"
	LifecycleFail   LifecycleVerb = "fail"
	LifecycleRemove LifecycleVerb = "remove"
)

// LifecycleCall is one lifecycle call as DecideLifecycle reads it: the
// verb, who calls, and the verb's arguments. The store has checked the
// call's shape (a key, an instance and its cell) before.
type LifecycleCall struct {
	Verb LifecycleVerb
	// InstanceGuid and CellID are the calling instance and its cell; fail
	// names only the cell.
	InstanceGuid string
	CellID       string
	// NetInfo and Routable: what a start says about the instance.
	NetInfo  *NetInfo
	Routable bool
	// RoutePorts are the routes of the row's definition, which a row that
	// starts (is not RUNNING yet) takes; a running row keeps its own.
	RoutePorts []*RoutePort
	// CrashReason: why the instance crashed.
	CrashReason string
	// PlacementError: why the cell cannot run the instance (fail).
	PlacementError string
}

// LifecycleChange is what a lifecycle call does to its row.
type LifecycleChange struct {
	// After is the row's next version (its modification tag index moved
	// on by one), or nil when nothing is written: the call repeats one
	// that holds already, or removes the row.
	After *ActualLRP
	// Removed: the row is deleted.
	Removed bool
	// Events announce the change, in order; none when nothing is written.
	Events []Event
}

// DecideLifecycle decides a cell's lifecycle call on the row before (as
// read, locked, by its key) at now: the row's next version and its events,
// or the error that refuses the call. It reads nothing else and writes
// nothing; the store writes the change, compare-and-set on before's tag.
//
// The rules, on top of CheckTransition (who may move a row where):
//
//  1. The cell rule: an UNCLAIMED row is claimed, started or failed only
//     by the cell it is placed on; a CLAIMED or RUNNING one is acted on
//     only by the instance that owns it, on its cell.
//  2. Claim: UNCLAIMED → CLAIMED by the caller, clearing any placement
//     error. A claim of a row the caller already holds (CLAIMED or
//     RUNNING) writes nothing: reps repeat themselves.
//  3. Start: UNCLAIMED (placed here) or CLAIMED → RUNNING with the net
//     info and routable given; a row that starts takes its definition's
//     routes. A start of a RUNNING row rewrites only net info and
//     routable (its routes' host ports follow the net info), and writes
//     nothing when both are as stored. A row other
//     than ORDINARY is only ever started while RUNNING. A validation
//     instance is never routable (RoutableWhenStarted).
//  4. Crash: CLAIMED or RUNNING → CRASHED: the crash count goes up, the
//     reason is kept, and the instance, cell, net info, routes,
//     routability and occupancy go. Nothing runs any more, so it neither
//     holds capacity on the cell nor is routable, and, having no owner, it
//     is restarted only by the board placing it anew (CheckTransition).
//  5. Fail: an UNCLAIMED row placed on the caller's cell is taken off the
//     cell with the placement error; a claimed or running one crashes
//     instead.
//  6. Remove: the owner's row is deleted, whatever its state.
//  7. since moves to now whenever the state changes, and on fail
//     (placement runs on since).
//
// Events: claim, start and fail announce actual_lrp_changed; crash
// announces actual_lrp_crashed, then actual_lrp_changed (whose before
// shows where it ran); remove announces actual_lrp_removed.
//
// Worked example, the row web/0 (ORDINARY) UNCLAIMED, placed on cell-1,
// tag index 4, and the instance ig-1 on cell-1:
//
//  1. claim by ig-1 on cell-2: refused, InvalidStateTransition "cannot
//     claim actual LRP web/0 (ORDINARY) on cell "cell-2": it is placed on
//     cell "cell-1"".
//  2. claim by ig-1 on cell-1: CLAIMED, instance ig-1, since now, tag
//     index 5; one actual_lrp_changed.
//  3. claim by ig-1 on cell-1 again: nothing written, no event; the row as
//     stored is the answer.
//  4. start by ig-1 on cell-1 with net info N, routable: RUNNING, N,
//     routable, the definition's routes, since now, tag index 6.
//  5. start again with N, routable: nothing written. With N', unroutable:
//     N', unroutable, since unchanged, tag index 7.
//  6. crash by ig-1 on cell-1, "OOM": CRASHED, crash count 1, reason
//     "OOM", no instance, cell, net info or routes, since now, tag index
//     8; actual_lrp_crashed, then actual_lrp_changed.
//  7. claim by ig-1 on cell-1: refused: a crashed instance restarts by
//     being unclaimed and placed again.
func DecideLifecycle(before *ActualLRP, call LifecycleCall, now int64) (LifecycleChange, error) {
	var after *ActualLRP
	var err error
	switch call.Verb {
	case LifecycleClaim:
		after, err = decideClaim(before, call, now)
	case LifecycleStart:
		after, err = decideStart(before, call, now)
	case LifecycleCrash:
		after, err = decideCrash(before, call, now)
	case LifecycleFail:
		after, err = decideFail(before, call, now)
	case LifecycleRemove:
		if !before.BelongsTo(call.InstanceGuid, call.CellID) {
			return LifecycleChange{}, NewError(Error_InvalidStateTransition,
				"cannot remove actual LRP %s: it belongs to instance %q on cell %q, not instance %q on cell %q",
				describeRow(before), before.InstanceGuid, before.CellId, call.InstanceGuid, call.CellID)
		}
		return LifecycleChange{Removed: true, Events: call.Verb.Events(before, nil)}, nil
	default:
		return LifecycleChange{}, ErrInvalidField("verb", fmt.Sprintf("unknown lifecycle call %q", call.Verb))
	}
	if err != nil || after == nil {
		return LifecycleChange{}, err
	}
	return LifecycleChange{After: after, Events: call.Verb.Events(before, after)}, nil
}

// RepeatWritesNothing reports whether a call of v, decided again on the
// row its first decision wrote, writes nothing and answers that row: true
// for claim (rule 2) and start (rule 3), which reps repeat; false for
// crash (refused once CRASHED), fail (refused once off the cell) and
// remove (the row is gone). So a store may learn the outcome of a claim
// or a start whose commit went unanswered by deciding the call again on
// the row as it then is, rather than by a commit receipt
// (db/sqldb/commit.go): a repeat where the first one applied, the same
// write where it did not.
//
// Worked example: web/0 UNCLAIMED on cell-1 at tag index 4; ig-1's claim
// writes CLAIMED at 5, and the answer is lost. Decided again on CLAIMED
// at 5 it writes nothing and answers that row; decided again on the row
// still UNCLAIMED at 4 (the first claim never applied) it writes CLAIMED
// at 5, as the first would have.
func (v LifecycleVerb) RepeatWritesNothing() bool {
	return v == LifecycleClaim || v == LifecycleStart
}

// Events are what a lifecycle call that wrote announces: before and after
// the row (after nil for remove).
func (v LifecycleVerb) Events(before, after *ActualLRP) []Event {
	switch v {
	case LifecycleCrash:
		return []Event{ActualLRPCrashed(after), ActualLRPChanged(before, after)}
	case LifecycleRemove:
		return []Event{ActualLRPRemoved(before)}
	default:
		return []Event{ActualLRPChanged(before, after)}
	}
}

func decideClaim(before *ActualLRP, call LifecycleCall, now int64) (*ActualLRP, error) {
	if err := CheckTransition(before, ActualLRP_CLAIMED, call.InstanceGuid, call.CellID); err != nil {
		return nil, err
	}
	if before.State != ActualLRP_UNCLAIMED {
		// CLAIMED or RUNNING, and CheckTransition found it the caller's:
		// the claim holds already.
		return nil, nil
	}
	if err := checkPlacedOn(before, LifecycleClaim, call.CellID); err != nil {
		return nil, err
	}
	after := NextVersion(before)
	after.State = ActualLRP_CLAIMED
	after.InstanceGuid = call.InstanceGuid
	after.PlacementError = ""
	after.Since = now
	return after, nil
}

func decideStart(before *ActualLRP, call LifecycleCall, now int64) (*ActualLRP, error) {
	if err := CheckTransition(before, ActualLRP_RUNNING, call.InstanceGuid, call.CellID); err != nil {
		return nil, err
	}
	if before.Presence != ActualLRP_ORDINARY && before.State != ActualLRP_RUNNING {
		return nil, NewError(Error_InvalidStateTransition,
			"cannot start actual LRP %s: it is %s, and a row other than ORDINARY only changes its routable and net info while RUNNING",
			describeRow(before), before.State)
	}
	routable := RoutableWhenStarted(before.Index, call.Routable)
	switch before.State {
	case ActualLRP_UNCLAIMED:
		if err := checkPlacedOn(before, LifecycleStart, call.CellID); err != nil {
			return nil, err
		}
	case ActualLRP_RUNNING:
		if SameNetInfo(before.NetInfo, call.NetInfo) && before.Routable == routable {
			return nil, nil
		}
	}
	after := NextVersion(before)
	if before.State != ActualLRP_RUNNING {
		after.Since = now
		after.RoutePorts = call.RoutePorts
	}
	after.State = ActualLRP_RUNNING
	after.InstanceGuid = call.InstanceGuid
	after.NetInfo = CloneNetInfo(call.NetInfo)
	// The routes follow the net info: the row as a read returns it.
	after.RoutePorts = RoutePortsAsStored(after.RoutePorts, after.NetInfo)
	after.Routable = routable
	after.PlacementError = ""
	return after, nil
}

func decideCrash(before *ActualLRP, call LifecycleCall, now int64) (*ActualLRP, error) {
	if err := CheckTransition(before, ActualLRP_CRASHED, call.InstanceGuid, call.CellID); err != nil {
		return nil, err
	}
	after := NextVersion(before)
	after.State = ActualLRP_CRASHED
	after.CrashCount++
	after.CrashReason = call.CrashReason
	after.Since = now
	after.InstanceGuid, after.CellId = "", ""
	after.NetInfo, after.Routable, after.Occupied, after.RoutePorts = nil, false, false, nil
	after.PlacementError = ""
	return after, nil
}

func decideFail(before *ActualLRP, call LifecycleCall, now int64) (*ActualLRP, error) {
	if before.State != ActualLRP_UNCLAIMED {
		return nil, NewError(Error_InvalidStateTransition,
			"cannot fail actual LRP %s: it is %s, and only an UNCLAIMED instance placed on a cell can fail there; crash a claimed or running one",
			describeRow(before), before.State)
	}
	// UNCLAIMED → UNCLAIMED: CheckTransition allows it to anyone; the cell
	// rule is what decides.
	if err := checkPlacedOn(before, LifecycleFail, call.CellID); err != nil {
		return nil, err
	}
	after := NextVersion(before)
	after.CellId, after.InstanceGuid = "", ""
	after.PlacementError = call.PlacementError
	after.Since = now
	return after, nil
}

// checkPlacedOn is the cell rule for an UNCLAIMED row: only the cell it is
// placed on may act on it.
func checkPlacedOn(lrp *ActualLRP, verb LifecycleVerb, cellID string) error {
	switch lrp.CellId {
	case cellID:
		return nil
	case "":
		return NewError(Error_InvalidStateTransition,
			"cannot %s actual LRP %s on cell %q: it is not placed on any cell yet", verb, describeRow(lrp), cellID)
	default:
		return NewError(Error_InvalidStateTransition,
			"cannot %s actual LRP %s on cell %q: it is placed on cell %q", verb, describeRow(lrp), cellID, lrp.CellId)
	}
}

// RoutableWhenStarted is whether an instance at index that its rep calls
// routable is: a validation instance only shows that its definition gets
// healthy, so routers never send it a request, whatever its rep says.
func RoutableWhenStarted(index int32, routable bool) bool {
	return routable && !IsValidationIndex(index)
}

// NextVersion is a copy of lrp with its modification tag index moved on
// by one: the version a write of the row stores.
func NextVersion(lrp *ActualLRP) *ActualLRP {
	next := proto.Clone(lrp).(*ActualLRP)
	if next.ModificationTag == nil {
		next.ModificationTag = &ModificationTag{}
	}
	next.ModificationTag.Index++
	return next
}

// SameNetInfo compares net info as stored: unset is not the same as empty.
// It says what proto.Equal says, field by field: a cell's bulk report
// compares every instance it runs, and proto.Equal's reflection took 4%
// of the board's CPU with a million instances reporting. A spec changes
// each field NetInfo and PortMapping declare, found by their descriptors,
// and requires a difference, so a field added to either cannot be left
// out of the comparison unnoticed.
func SameNetInfo(a, b *NetInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if a.Address != b.Address || a.InstanceAddress != b.InstanceAddress || len(a.Ports) != len(b.Ports) ||
		!bytes.Equal(a.unknownFields, b.unknownFields) {
		return false
	}
	for i, p := range a.Ports {
		q := b.Ports[i]
		if p == nil || q == nil {
			if p != q {
				return false
			}
			continue
		}
		if p.ContainerPort != q.ContainerPort || p.HostPort != q.HostPort || !bytes.Equal(p.unknownFields, q.unknownFields) {
			return false
		}
	}
	return true
}

// CloneNetInfo is a deep copy of n (nil stays nil).
func CloneNetInfo(n *NetInfo) *NetInfo {
	if n == nil {
		return nil
	}
	return proto.Clone(n).(*NetInfo)
}

// describeRow names a row in the lifecycle's messages: "web/0 (ORDINARY)".
func describeRow(lrp *ActualLRP) string {
	return fmt.Sprintf("%s/%d (%s)", lrp.GetProcessGuid(), lrp.GetIndex(), lrp.GetPresence())
}
