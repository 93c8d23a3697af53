package convergence

import ()

// The effect of each convergence write on what it writes, one function per
// kind. ApplyPlan (the store of a dry run) applies them to its copy of the
// snapshot. The SQL store (db/sqldb) writes a row write's effect with its
// own SET clause and uses these functions for the rows after the write
// that its events carry; for autoscale and rollout writes it stores what
// these functions return. A differential test in db/sqldb applies random
// plans both ways and holds the results equal, so that a SET clause and
// its function cannot drift apart unnoticed.
//
// The row functions change only the stored columns. The caller checks the
// version the write names, moves the modification index of an existing
// row on by one (every applied write does) and gives a row on another
// definition that definition's resources (MemoryMB and DiskMB are read
// from the definition, not stored with the row).

// Promoted is a SUSPECT row whose cell came back, or a RETIRING row on
// the definition that is active again, as the index's ORDINARY row once
// more (Promote). A RETIRING row is promoted only before it was told to
// stop; the ORDINARY row is not being stopped.
func Promoted(r ActualRow) ActualRow {
	r.Presence, r.StopRequested = ordinary, false
	return r
}

// MarkedSuspect is an ORDINARY row on an expired cell as the index's
// SUSPECT row (MarkSuspect).
func MarkedSuspect(r ActualRow) ActualRow {
	r.Presence = suspect
	return r
}

// Retired is a RUNNING ORDINARY row as the index's RETIRING row (Retire):
// the same instance, still serving, its clock restarted; stop tells its rep
// to drain and remove it at once.
func Retired(r ActualRow, stop bool, now int64) ActualRow {
	r.Presence, r.StopRequested, r.Since = retiring, stop, now
	return r
}

// StopRequestedAt is a RETIRING row whose rep is told to stop it
// (RequestStop): its replacement is ready.
func StopRequestedAt(r ActualRow, now int64) ActualRow {
	r.StopRequested, r.Since = true, now
	return r
}

// Unassigned is a row made UNCLAIMED without a cell or an instance:
// Restart (from CRASHED) and Unassign (a stale UNCLAIMED row) do the same
// to it. The crash count and reason are kept; routable and occupied, which
// describe the instance that is gone, are cleared, and so is its net info.
func Unassigned(r ActualRow, now int64) ActualRow {
	r.State, r.CellID, r.InstanceGuid = unclaimed, "", ""
	r.Routable, r.Occupied = false, false
	r.Since = now
	return r
}

// Redefined is an ORDINARY row that serves nothing put on definitionID
// (Redefine): an UNCLAIMED row as if new, with no cell, instance, crash
// or placement error. Whatever ran it sees its row taken and stops.
func Redefined(r ActualRow, definitionID string, now int64) ActualRow {
	r = Unassigned(r, now)
	r.DefinitionID = definitionID
	r.CrashCount, r.CrashReason, r.PlacementError = 0, "", ""
	return r
}

// Placed is an UNCLAIMED row assigned to cellID (Place).
func Placed(r ActualRow, cellID string, now int64) ActualRow {
	r.CellID, r.PlacementError, r.Since = cellID, "", now
	return r
}

// PlacementFailedFor is an UNCLAIMED row that no cell fits, and why
// (PlacementFailed). Since is kept: the state does not change.
func PlacementFailedFor(r ActualRow, reason string) ActualRow {
	r.CellID, r.PlacementError = "", reason
	return r
}

// Created is the row a Create inserts: UNCLAIMED and ORDINARY, placed when
// c names a cell, at modification index 0, the first version of a row.
// Its resources are its definition's, for the caller to fill in.
func Created(c NewActualLRP, now int64) ActualRow {
	return ActualRow{
		ProcessGuid: c.ProcessGuid, Index: c.Index, Presence: ordinary, State: unclaimed,
		Domain: c.Domain, CellID: c.CellID, DefinitionID: c.DefinitionID, Since: now,
		PlacementError: c.PlacementError,
	}
}

// Autoscaled is an autoscaled LRP after w (Autoscale): its autoscaler
// state is w's and, when the count changed, its instances, its
// modification index moved on with them. A write of the status alone
// leaves the index alone.
func Autoscaled(d DesiredSchedule, w AutoscaleWrite) DesiredSchedule {
	d.Autoscaler = w.Status
	if w.Instances != w.PreviousInstances {
		d.Instances = w.Instances
		d.ModificationIndex++
	}
	return d
}

// RolloutDefinitions is where a rollout write leaves its LRP's active and
// healthy definitions, and whether the active one moved: then the LRP's
// modification index moves on too. The healthy one moving alone changes
// nothing a client asked for and leaves the index alone.
func RolloutDefinitions(w RolloutWrite, active, healthy string) (newActive, newHealthy string, activeMoved bool) {
	if w.SetHealthyDefinitionID != "" {
		healthy = w.SetHealthyDefinitionID
	}
	if w.SetActiveDefinitionID != "" && w.SetActiveDefinitionID != active {
		return w.SetActiveDefinitionID, healthy, true
	}
	return active, healthy, false
}

// StoredRollout is the record a rollout write stores, and whether a
// snapshot reads it afterwards: a settled record stays stored but is no
// longer read, a deleted one is gone.
func StoredRollout(w RolloutWrite) (rec RolloutRow, read bool) {
	rec = w.Record
	rec.ProcessGuid = w.ProcessGuid
	rec.ModificationIndex = w.ExpectModificationIndex + 1
	return rec, !w.Settled && !w.Delete
}
