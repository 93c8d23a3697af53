package models

import (
	"slices"

	"google.golang.org/protobuf/proto"
)

// eventPayloads maps every event type to a constructor of its payload, so
// that a subscriber can decode `data` knowing only the `event` name.
var eventPayloads = map[string]func() proto.Message{
	EventDesiredLRPCreated:  func() proto.Message { return &DesiredLRPCreatedEvent{} },
	EventDesiredLRPChanged:  func() proto.Message { return &DesiredLRPChangedEvent{} },
	EventDesiredLRPRemoved:  func() proto.Message { return &DesiredLRPRemovedEvent{} },
	EventActualLRPCreated:   func() proto.Message { return &ActualLRPCreatedEvent{} },
	EventActualLRPChanged:   func() proto.Message { return &ActualLRPChangedEvent{} },
	EventActualLRPRemoved:   func() proto.Message { return &ActualLRPRemovedEvent{} },
	EventActualLRPCrashed:   func() proto.Message { return &ActualLRPCrashedEvent{} },
	EventCellChanged:        func() proto.Message { return &CellChangedEvent{} },
	EventRolloutChanged:     func() proto.Message { return &RolloutChangedEvent{} },
	EventOperationChanged:   func() proto.Message { return &OperationChangedEvent{} },
	EventDefinitionHealth:   func() proto.Message { return &DefinitionHealthEvent{} },
	EventFreezeChanged:      func() proto.Message { return &FreezeChangedEvent{} },
	EventBudgetGroupChanged: func() proto.Message { return &BudgetGroupChangedEvent{} },
	EventEventsLost:         func() proto.Message { return &EventsLostEvent{} },
}

// NewEventPayload returns an empty payload message for eventType, or nil
// when the type is not one this board knows.
func NewEventPayload(eventType string) proto.Message {
	newPayload, ok := eventPayloads[eventType]
	if !ok {
		return nil
	}
	return newPayload()
}

// EventTypes lists every event type, sorted.
func EventTypes() []string {
	types := make([]string, 0, len(eventPayloads))
	for t := range eventPayloads {
		types = append(types, t)
	}
	slices.Sort(types)
	return types
}
