package sqldb

import (
	"fmt"
	"slices"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// checkConvergenceWrites refuses a plan with writes that could never be
// right, before anything is written. The planner never makes them; the
// check keeps a broken caller from putting rows in states no rule allows.
func checkConvergenceWrites(w *convergence.ConvergenceWrites) error {
	for i, a := range w.Autoscale {
		if err := checkAutoscaleWrite(fmt.Sprintf("writes.autoscale[%d]", i), a); err != nil {
			return err
		}
	}
	for i, v := range w.Delete {
		if err := checkRowVersion(fmt.Sprintf("writes.delete[%d]", i), v); err != nil {
			return err
		}
	}
	for i, v := range w.Promote {
		field := fmt.Sprintf("writes.promote[%d]", i)
		if v.Key.Presence == models.ActualLRP_RETIRING {
			// A RETIRING instance comes back only while it runs.
			if err := checkRowVersionIn(field, v, models.ActualLRP_RUNNING); err != nil {
				return err
			}
			continue
		}
		if err := checkRowVersionOf(field, v, models.ActualLRP_SUSPECT); err != nil {
			return err
		}
	}
	for i, v := range w.MarkSuspect {
		if err := checkRowVersionOf(fmt.Sprintf("writes.mark_suspect[%d]", i), v, models.ActualLRP_ORDINARY); err != nil {
			return err
		}
	}
	for i, r := range w.Retire {
		field := fmt.Sprintf("writes.retire[%d].row", i)
		if err := checkRowVersionOf(field, r.Row, models.ActualLRP_ORDINARY); err != nil {
			return err
		}
		if err := checkRowVersionIn(field, r.Row, models.ActualLRP_RUNNING); err != nil {
			return err
		}
	}
	for i, v := range w.RequestStop {
		if err := checkRowVersionOf(fmt.Sprintf("writes.request_stop[%d]", i), v, models.ActualLRP_RETIRING); err != nil {
			return err
		}
	}
	for i, c := range w.Create {
		if err := checkCreate(fmt.Sprintf("writes.create[%d]", i), c); err != nil {
			return err
		}
	}
	for i, v := range w.Restart {
		if err := checkRowVersionIn(fmt.Sprintf("writes.restart[%d]", i), v, models.ActualLRP_CRASHED); err != nil {
			return err
		}
	}
	for i, r := range w.Redefine {
		field := fmt.Sprintf("writes.redefine[%d]", i)
		if err := checkRowVersionOf(field+".row", r.Row, models.ActualLRP_ORDINARY); err != nil {
			return err
		}
		if err := checkRequired(field+".definition_id", r.DefinitionID, maxDefinitionID); err != nil {
			return err
		}
	}
	for i, v := range w.Unassign {
		field := fmt.Sprintf("writes.unassign[%d]", i)
		if err := checkRowVersionIn(field, v, models.ActualLRP_UNCLAIMED, models.ActualLRP_CLAIMED); err != nil {
			return err
		}
	}
	for i, p := range w.Place {
		field := fmt.Sprintf("writes.place[%d]", i)
		if err := checkRowVersionIn(field+".row", p.Row, models.ActualLRP_UNCLAIMED); err != nil {
			return err
		}
		if err := checkRequired(field+".cell_id", p.CellID, maxCellID); err != nil {
			return err
		}
	}
	for i, f := range w.PlacementFailed {
		field := fmt.Sprintf("writes.placement_failed[%d]", i)
		if err := checkRowVersionIn(field+".row", f.Row, models.ActualLRP_UNCLAIMED); err != nil {
			return err
		}
		if f.Reason == "" {
			return errInvalid(field+".reason", "is required")
		}
	}
	for i, r := range w.Rollouts {
		if err := checkRolloutWrite(fmt.Sprintf("writes.rollouts[%d]", i), r); err != nil {
			return err
		}
	}
	for i, d := range w.DeleteDefinitions {
		field := fmt.Sprintf("writes.delete_definitions[%d]", i)
		if err := checkRequired(field+".process_guid", d.ProcessGuid, maxProcessGuid); err != nil {
			return err
		}
		if err := checkRequired(field+".definition_id", d.DefinitionID, maxDefinitionID); err != nil {
			return err
		}
	}
	for i, o := range w.Operations {
		if err := checkOperationWrite(fmt.Sprintf("writes.operations[%d]", i), o); err != nil {
			return err
		}
	}
	return nil
}

// checkRolloutWrite refuses a rollout write that could never be right: a
// record of another LRP or in an unknown state, a delete of a record that
// does not exist or of a desired LRP's, or a definition moved on an LRP
// that is gone.
func checkRolloutWrite(field string, w convergence.RolloutWrite) error {
	if err := checkRequired(field+".process_guid", w.ProcessGuid, maxProcessGuid); err != nil {
		return err
	}
	if w.ExpectModificationIndex < 0 {
		return errInvalid(field+".expect_modification_index", "must not be negative")
	}
	if err := checkWidth(field+".expect_active_definition_id", w.ExpectActiveDefinitionID, maxDefinitionID); err != nil {
		return err
	}
	gone := w.ExpectActiveDefinitionID == ""
	for _, set := range []struct{ name, value string }{
		{"set_active_definition_id", w.SetActiveDefinitionID},
		{"set_healthy_definition_id", w.SetHealthyDefinitionID},
	} {
		if set.value == "" {
			continue
		}
		if err := checkWidth(field+"."+set.name, set.value, maxDefinitionID); err != nil {
			return err
		}
		if gone {
			return errInvalid(field+"."+set.name, "must be empty for an LRP that is gone (expect_active_definition_id is empty)")
		}
		if w.Delete {
			return errInvalid(field+"."+set.name, "must be empty when the record is deleted")
		}
	}
	if w.Delete {
		if w.ExpectModificationIndex == 0 {
			return errInvalid(field+".expect_modification_index", "must name the record to delete (0 means there is none)")
		}
		if !gone {
			return errInvalid(field+".delete", "only the record of an LRP that is gone is deleted (expect_active_definition_id must be empty)")
		}
		return nil
	}
	r := w.Record
	if r.ProcessGuid != "" && r.ProcessGuid != w.ProcessGuid {
		return errInvalid(field+".record.process_guid", "must be empty or "+w.ProcessGuid)
	}
	if _, known := models.RolloutStatus_State_name[int32(r.State)]; !known {
		return errInvalid(field+".record.state", fmt.Sprintf("unknown state %d", r.State))
	}
	if err := checkWidth(field+".record.definition_id", r.DefinitionID, maxDefinitionID); err != nil {
		return err
	}
	if err := checkWidth(field+".record.failed_definition_id", r.FailedDefinitionID, maxDefinitionID); err != nil {
		return err
	}
	if r.UpdatedInstances < 0 {
		return errInvalid(field+".record.updated_instances", "must not be negative")
	}
	if r.InFlight < 0 {
		return errInvalid(field+".record.in_flight", "must not be negative")
	}
	return nil
}

// checkRowVersion checks that a row version names a row at all.
func checkRowVersion(field string, v convergence.RowVersion) error {
	if err := checkRequired(field+".key.process_guid", v.Key.ProcessGuid, maxProcessGuid); err != nil {
		return err
	}
	if v.Key.Index < 0 {
		return errInvalid(field+".key.index", "must not be negative")
	}
	if _, known := models.ActualLRP_Presence_name[int32(v.Key.Presence)]; !known || v.Key.Presence == 0 {
		return errInvalid(field+".key.presence", fmt.Sprintf("unknown presence %d", v.Key.Presence))
	}
	if _, known := models.ActualLRP_State_name[int32(v.State)]; !known || v.State == 0 {
		return errInvalid(field+".state", fmt.Sprintf("unknown state %d", v.State))
	}
	if v.ModificationIndex < 0 {
		return errInvalid(field+".modification_index", "must not be negative")
	}
	return nil
}

// checkRowVersionOf is checkRowVersion for a write that applies to rows of
// one presence only.
func checkRowVersionOf(field string, v convergence.RowVersion, presence models.ActualLRP_Presence) error {
	if err := checkRowVersion(field, v); err != nil {
		return err
	}
	if v.Key.Presence != presence {
		return errInvalid(field+".key.presence", "must be "+presence.String())
	}
	return nil
}

// checkRowVersionIn is checkRowVersion for a write that applies to rows in
// the given states only.
func checkRowVersionIn(field string, v convergence.RowVersion, states ...models.ActualLRP_State) error {
	if err := checkRowVersion(field, v); err != nil {
		return err
	}
	if slices.Contains(states, v.State) {
		return nil
	}
	if len(states) == 1 {
		return errInvalid(field+".state", "must be "+states[0].String())
	}
	return errInvalid(field+".state", fmt.Sprintf("must be one of %v", states))
}

func checkCreate(field string, c convergence.NewActualLRP) error {
	if err := checkRequired(field+".process_guid", c.ProcessGuid, maxProcessGuid); err != nil {
		return err
	}
	if c.Index < 0 {
		return errInvalid(field+".index", "must not be negative")
	}
	if err := checkRequired(field+".domain", c.Domain, maxDomain); err != nil {
		return err
	}
	if err := checkRequired(field+".definition_id", c.DefinitionID, maxDefinitionID); err != nil {
		return err
	}
	if err := checkWidth(field+".cell_id", c.CellID, maxCellID); err != nil {
		return err
	}
	if c.CellID != "" && c.PlacementError != "" {
		return errInvalid(field+".placement_error", "must be empty when cell_id is set")
	}
	return nil
}

func checkRequired(field, value string, width int) error {
	if value == "" {
		return errInvalid(field, "is required")
	}
	return checkWidth(field, value, width)
}
