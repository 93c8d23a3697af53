package models

// ConcernsCell reports whether an event is about cellID: an actual LRP
// event whose row is on the cell (before or after a change: a row leaving
// the cell concerns it), or a cell event of that cell. events_lost
// concerns every subscriber. Desired LRP, rollout and operation events
// concern no cell. A cell's rep subscribes to the event stream scoped to
// its own cell this way, as it lists only its own cell's rows.
func (e Event) ConcernsCell(cellID string) bool {
	switch p := e.Payload.(type) {
	case *ActualLRPCreatedEvent:
		return p.GetActualLrp().GetCellId() == cellID
	case *ActualLRPChangedEvent:
		return p.GetBefore().GetCellId() == cellID || p.GetAfter().GetCellId() == cellID
	case *ActualLRPRemovedEvent:
		return p.GetActualLrp().GetCellId() == cellID
	case *ActualLRPCrashedEvent:
		return p.GetActualLrp().GetCellId() == cellID
	case *CellChangedEvent:
		return p.GetBefore().GetCellId() == cellID || p.GetAfter().GetCellId() == cellID
	case *EventsLostEvent:
		return true
	}
	return false
}
