package models

import "google.golang.org/protobuf/proto"

// Event types, the SSE `event` names.
const (
	EventDesiredLRPCreated = "desired_lrp_created"
	EventDesiredLRPChanged = "desired_lrp_changed"
	EventDesiredLRPRemoved = "desired_lrp_removed"
	EventActualLRPCreated  = "actual_lrp_created"
	EventActualLRPChanged  = "actual_lrp_changed"
	EventActualLRPRemoved  = "actual_lrp_removed"
	EventActualLRPCrashed  = "actual_lrp_crashed"
	EventCellChanged       = "cell_changed"
	EventRolloutChanged    = "rollout_changed"
	EventOperationChanged  = "operation_changed"
	// EventDefinitionHealth is one entry of a cell's health report.
	EventDefinitionHealth = "definition_health"
	// EventFreezeChanged: a freeze window was added or removed.
	EventFreezeChanged = "freeze_changed"
	// EventBudgetGroupChanged: a budget group was set or removed.
	EventBudgetGroupChanged = "budget_group_changed"
	// EventEventsLost opens a resumed stream that could not be resumed.
	EventEventsLost = "events_lost"
)

// Event is one committed change. The write that makes the change appends
// it to the event log in the same transaction, where it gets its position.
type Event struct {
	Type string
	// Key is what the event is about (a process guid, or a cell id for
	// cell events); events with one key are published in commit order.
	Key     string
	Payload proto.Message
}

func DesiredLRPCreated(lrp *DesiredLRP) Event {
	return Event{Type: EventDesiredLRPCreated, Key: lrp.GetProcessGuid(), Payload: &DesiredLRPCreatedEvent{DesiredLrp: withoutDefinition(lrp)}}
}

func DesiredLRPChanged(before, after *DesiredLRP) Event {
	return Event{Type: EventDesiredLRPChanged, Key: after.GetProcessGuid(), Payload: &DesiredLRPChangedEvent{Before: withoutDefinition(before), After: withoutDefinition(after)}}
}

func DesiredLRPRemoved(lrp *DesiredLRP) Event {
	return Event{Type: EventDesiredLRPRemoved, Key: lrp.GetProcessGuid(), Payload: &DesiredLRPRemovedEvent{DesiredLrp: withoutDefinition(lrp)}}
}

func ActualLRPCreated(lrp *ActualLRP) Event {
	return Event{Type: EventActualLRPCreated, Key: lrp.GetProcessGuid(), Payload: &ActualLRPCreatedEvent{ActualLrp: lrp}}
}

func ActualLRPChanged(before, after *ActualLRP) Event {
	return Event{Type: EventActualLRPChanged, Key: after.GetProcessGuid(), Payload: &ActualLRPChangedEvent{Before: before, After: after}}
}

func ActualLRPRemoved(lrp *ActualLRP) Event {
	return Event{Type: EventActualLRPRemoved, Key: lrp.GetProcessGuid(), Payload: &ActualLRPRemovedEvent{ActualLrp: lrp}}
}

func ActualLRPCrashed(lrp *ActualLRP) Event {
	return Event{Type: EventActualLRPCrashed, Key: lrp.GetProcessGuid(), Payload: &ActualLRPCrashedEvent{ActualLrp: lrp, CrashCount: lrp.GetCrashCount(), CrashReason: lrp.GetCrashReason()}}
}

func CellChanged(before, after *Cell) Event {
	return Event{Type: EventCellChanged, Key: after.GetCellId(), Payload: &CellChangedEvent{Before: before, After: after}}
}

func RolloutChanged(status *RolloutStatus) Event {
	return Event{Type: EventRolloutChanged, Key: status.GetProcessGuid(), Payload: &RolloutChangedEvent{Status: status}}
}

// withoutDefinition keeps events light: subscribers that need the run
// definition fetch it by active_definition_id.
func withoutDefinition(lrp *DesiredLRP) *DesiredLRP {
	if lrp == nil || lrp.Definition == nil {
		return lrp
	}
	light := proto.Clone(lrp).(*DesiredLRP)
	light.Definition = nil
	return light
}

// OperationChanged carries an operation after a change of it, keyed by its
// LRP so that it keeps its place among the LRP's other events.
func OperationChanged(op *Operation) Event {
	return Event{Type: EventOperationChanged, Key: op.GetProcessGuid(), Payload: &OperationChangedEvent{Operation: op}}
}

// EventNamesLRP reports whether an event of eventType is keyed by a
// process guid, that is, whether it is about one LRP. Cell, freeze window
// and budget group events are keyed by what they are about instead (a cell
// id, "freeze/" or "budget_group/" and a name), and an events_lost event
// opens a stream, keyed by nothing. Convergence reads the keys of the
// events that name an LRP to learn which LRPs changed; the event log
// bundles only those (db/sqldb/bundle.go).
func EventNamesLRP(eventType string) bool {
	switch eventType {
	case EventCellChanged, EventFreezeChanged, EventBudgetGroupChanged, EventEventsLost:
		return false
	}
	return true
}
