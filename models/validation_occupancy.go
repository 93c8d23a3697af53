package models

import "fmt"

// MaxOccupancyChanges bounds the changes of one ReportOccupancyRequest; a
// rep with more pending sends several.
const MaxOccupancyChanges = 1000

// Validate requires the reporting cell_id and 1 to MaxOccupancyChanges
// changes, each naming a row (process_guid, index, presence) and the
// instance_guid that runs it. A row may appear more than once: the
// changes apply in order.
func (r *ReportOccupancyRequest) Validate() error {
	if err := validateCellID("cell_id", r.GetCellId()); err != nil {
		return err
	}
	changes := r.GetChanges()
	switch {
	case len(changes) == 0:
		return ErrInvalidField("changes", "required: at least one change")
	case len(changes) > MaxOccupancyChanges:
		return ErrInvalidField("changes", fmt.Sprintf("must hold at most %d changes, got %d", MaxOccupancyChanges, len(changes)))
	}
	for i, change := range changes {
		path := indexed("changes", i)
		if change == nil {
			return ErrInvalidField(path, "required")
		}
		if err := change.validate(path); err != nil {
			return err
		}
	}
	return nil
}

func (c *OccupancyChange) validate(path string) error {
	if err := validateProcessGuid(child(path, "process_guid"), c.GetProcessGuid()); err != nil {
		return err
	}
	if err := validateIndex(child(path, "index"), c.GetIndex()); err != nil {
		return err
	}
	if err := validatePresence(child(path, "presence"), c.GetPresence()); err != nil {
		return err
	}
	return validateInstanceGuid(child(path, "instance_guid"), c.GetInstanceGuid())
}
