package models

// EventCells are the cells an event concerns: the cell of the actual LRP
// row it is about (before and after a change: a row leaving the cell
// concerns it), or the cell of a cell event. events_lost concerns every
// cell. Desired LRP, rollout and operation events concern none. A cell's
// rep subscribes to the event stream scoped to its own cell this way, as
// it lists only its own cell's rows.
//
// The event hub keeps them beside an event whose payload it keeps packed
// (events/hub.go), so that a rep's filter reads them without decoding the
// payload on every pass of the history.
type EventCells struct {
	first, second string
	every         bool
}

// Has reports whether cellID is one of the cells. An empty cellID is no
// cell: a row placed nowhere concerns no one.
func (c EventCells) Has(cellID string) bool {
	return c.every || (cellID != "" && (c.first == cellID || c.second == cellID))
}

// Cells are the cells the event concerns.
func (e Event) Cells() EventCells {
	switch p := e.Payload.(type) {
	case *ActualLRPCreatedEvent:
		return EventCells{first: p.GetActualLrp().GetCellId()}
	case *ActualLRPChangedEvent:
		return EventCells{first: p.GetBefore().GetCellId(), second: p.GetAfter().GetCellId()}
	case *ActualLRPRemovedEvent:
		return EventCells{first: p.GetActualLrp().GetCellId()}
	case *ActualLRPCrashedEvent:
		return EventCells{first: p.GetActualLrp().GetCellId()}
	case *CellChangedEvent:
		return EventCells{first: p.GetBefore().GetCellId(), second: p.GetAfter().GetCellId()}
	case *EventsLostEvent:
		return EventCells{every: true}
	}
	return EventCells{}
}

// ConcernsCell reports whether an event is about cellID (Cells).
func (e Event) ConcernsCell(cellID string) bool {
	return e.Cells().Has(cellID)
}

// cellEventTypes are the types whose events can concern a cell: those Cells
// reads a cell from. A test checks the two agree for every event type.
var cellEventTypes = map[string]bool{
	EventActualLRPCreated: true,
	EventActualLRPChanged: true,
	EventActualLRPRemoved: true,
	EventActualLRPCrashed: true,
	EventCellChanged:      true,
	EventEventsLost:       true,
}

// EventTypeConcernsCells reports whether events of eventType can concern a
// cell, so that a reader keeping such an event packed must decode it once
// to learn its Cells; any other event concerns no cell.
func EventTypeConcernsCells(eventType string) bool {
	return cellEventTypes[eventType]
}
