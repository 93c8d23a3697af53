package convergence

import (
	"slices"

	"github.com/corkboard/corkboard/models"
)

// RowVersion is a row as a plan saw it: a write applies only if the row
// still has this state and modification index.
type RowVersion struct {
	Key               models.ActualLRPKey
	State             models.ActualLRP_State
	ModificationIndex int64
}

// ConvergenceWrites is a plan in terms of rows. ApplyConvergence performs
// them in this order: Autoscale, Delete, Promote, MarkSuspect, Retire,
// RequestStop, Create, Restart, Redefine, Unassign, Place,
// PlacementFailed, Rollouts, DeleteDefinitions, Operations — so that a row's key is
// free before another row takes it, and a definition is deleted only after
// the rows that stop referencing it.
type ConvergenceWrites struct {
	// Autoscale stores autoscaled LRPs' instance counts and autoscaler
	// state, first, so that the rows this plan creates for a scale-up
	// follow the count they were created for.
	Autoscale []AutoscaleWrite
	// Delete removes rows: extra or undesired instances, suspects whose
	// replacement runs, replacements of a suspect that came back.
	Delete []RowVersion
	// Promote turns a SUSPECT row (its cell came back) or a RETIRING one
	// (running the definition that is active again, not told to stop) back
	// into the index's ORDINARY row; the ORDINARY key must be free.
	Promote []RowVersion
	// MarkSuspect turns an ORDINARY row on an expired cell into SUSPECT.
	MarkSuspect []RowVersion
	// Retire turns a RUNNING ORDINARY row on an outdated definition into
	// the index's RETIRING row (target key free): same instance, cell, net
	// info and routable, since = now, stop_requested = Stop. A Create for
	// the index on the active definition follows in the same plan.
	Retire []Retirement
	// RequestStop sets stop_requested on RETIRING rows (since = now): their
	// replacement is ready, so the rep drains and removes them.
	RequestStop []RowVersion
	// Create inserts UNCLAIMED ORDINARY rows, placed when CellID is set.
	Create []NewActualLRP
	// Restart moves CRASHED rows back to UNCLAIMED (crash count kept).
	Restart []RowVersion
	// Redefine makes an ORDINARY row that serves nothing (UNCLAIMED,
	// CLAIMED, CRASHED, or RUNNING but not routable) on an outdated
	// definition an UNCLAIMED row on DefinitionID: no cell, instance or net
	// info, crash count 0, crash reason and placement error cleared,
	// routable and occupied false, since = now. Whatever ran it sees its
	// row taken and stops. A Place or PlacementFailed of the row may follow
	// (chained, as after Restart).
	Redefine []Redefinition
	// Unassign clears the cell of stale UNCLAIMED rows so they are placed
	// again.
	Unassign []RowVersion
	// Place assigns UNCLAIMED rows to cells.
	Place []Placement
	// PlacementFailed records why an UNCLAIMED row has no cell.
	PlacementFailed []PlacementFailure
	// Rollouts writes rollout records, and with them may move an LRP's
	// healthy or active definition.
	Rollouts []RolloutWrite
	// DeleteDefinitions deletes stored definitions that cleanup no longer
	// keeps. Each is skipped, as a guard, when at apply time it is the
	// LRP's active or healthy definition or any actual LRP row references
	// it.
	DeleteDefinitions []DefinitionRef

	// Operations change operations that have not ended: their status,
	// history and lease, or start a PENDING one. Applied after Rollouts,
	// in order.
	Operations []OperationWrite

	// PlacementEpoch is the snapshot's: the writes that give rows a cell
	// (Create with a cell, Place) apply only while the store's epoch still
	// has this value, and each transaction of them moves it on by one.
	// Once another writer has placed since the snapshot was read, a Place
	// is skipped and a Create inserts its row without a cell, for the next
	// pass to place: free capacity the plan counted on may be gone. Zero
	// skips the check, for callers that place by hand.
	PlacementEpoch int64
}

// Empty reports whether there is nothing to write.
func (w *ConvergenceWrites) Empty() bool {
	return len(w.Autoscale)+len(w.Delete)+len(w.Promote)+len(w.MarkSuspect)+len(w.Retire)+len(w.RequestStop)+
		len(w.Create)+len(w.Restart)+len(w.Redefine)+len(w.Unassign)+len(w.Place)+len(w.PlacementFailed)+
		len(w.Rollouts)+len(w.DeleteDefinitions)+len(w.Operations) == 0
}

// AutoscaleWrite stores an autoscaled LRP's autoscaler state and, when the
// count changed, its instances. It applies only while the DesiredLRP still
// has ExpectModificationIndex and autoscaling enabled (no update came in
// between); otherwise it is skipped like a stale row write. A change of
// the count (Instances ≠ PreviousInstances) moves the LRP's modification
// tag on, emits desired_lrp_changed, and records an AUTOSCALE operation,
// FINISHED, whose reason is Status.LastDecision's and whose history line
// gives its arithmetic (occupied, ready_target, the formula's result, the
// clamp). A write that changes only Status (the window's recommendations)
// leaves the tag, the events and the operations alone.
type AutoscaleWrite struct {
	ProcessGuid             string
	ExpectModificationIndex int64
	PreviousInstances       int32
	Instances               int32
	Status                  *models.AutoscalerStatus
}

// Retirement starts the replacement of a running instance: Row becomes
// RETIRING; Stop asks its rep to stop it at once (max_unavailable), else
// it keeps serving until its successor is ready (max_surge).
type Retirement struct {
	Row  RowVersion
	Stop bool
}

// Redefinition puts an ORDINARY row that serves nothing on DefinitionID.
type Redefinition struct {
	Row          RowVersion
	DefinitionID string
}

// RolloutWrite stores an LRP's rollout record. It applies only if the
// record still has ExpectModificationIndex (0: there is no record yet) and
// the LRP's active definition is still ExpectActiveDefinitionID ("" when
// the LRP is gone); otherwise it is skipped like a stale row write. The
// store emits rollout_changed with the resulting status (and
// desired_lrp_changed when the LRP's definitions move).
type RolloutWrite struct {
	ProcessGuid              string
	ExpectModificationIndex  int64
	ExpectActiveDefinitionID string
	// Record is what to store; its ProcessGuid is ProcessGuid and its
	// ModificationIndex is ignored (the store sets the expected one + 1).
	Record RolloutRow
	// Settled: the rollout is over and cleanup has nothing left to wait
	// for; the snapshot no longer reads the record.
	Settled bool
	// Delete removes the record instead of storing it: the LRP is gone
	// and so is every definition it had.
	Delete bool
	// SetHealthyDefinitionID, when set, becomes the LRP's healthy
	// definition (a rollout completed).
	SetHealthyDefinitionID string
	// SetActiveDefinitionID, when set, becomes the LRP's active definition
	// (auto-revert); the LRP's modification tag moves on.
	SetActiveDefinitionID string
}

// DefinitionRef names one stored definition.
type DefinitionRef struct {
	ProcessGuid  string
	DefinitionID string
}

type NewActualLRP struct {
	ProcessGuid  string
	Index        int32
	Domain       string
	DefinitionID string
	// CellID places the row at once; empty leaves it for placement.
	CellID string
	// PlacementError, when no cell fits.
	PlacementError string
}

type Placement struct {
	Row    RowVersion
	CellID string
}

type PlacementFailure struct {
	Row    RowVersion
	Reason string
}

// ConvergenceResult counts what was written and what was skipped because
// the row changed after the snapshot.
type ConvergenceResult struct {
	Applied int
	Skipped int
	// PlacementEpoch is the epoch after this apply's placements, when the
	// plan placed and no other writer placed meanwhile; 0 when unknown (the
	// plan carried no epoch, or another writer's placement refused it).
	PlacementEpoch int64
}

// ProcessGuids lists the LRPs the writes touch, sorted, each once.
func (w *ConvergenceWrites) ProcessGuids() []string {
	var guids []string
	rows := func(versions ...RowVersion) {
		for _, v := range versions {
			guids = append(guids, v.Key.ProcessGuid)
		}
	}
	rows(w.Delete...)
	rows(w.Promote...)
	rows(w.MarkSuspect...)
	rows(w.RequestStop...)
	rows(w.Restart...)
	rows(w.Unassign...)
	for _, r := range w.Retire {
		rows(r.Row)
	}
	for _, r := range w.Redefine {
		rows(r.Row)
	}
	for _, p := range w.Place {
		rows(p.Row)
	}
	for _, p := range w.PlacementFailed {
		rows(p.Row)
	}
	for _, c := range w.Create {
		guids = append(guids, c.ProcessGuid)
	}
	for _, a := range w.Autoscale {
		guids = append(guids, a.ProcessGuid)
	}
	for _, r := range w.Rollouts {
		guids = append(guids, r.ProcessGuid)
	}
	for _, d := range w.DeleteDefinitions {
		guids = append(guids, d.ProcessGuid)
	}
	for _, o := range w.Operations {
		guids = append(guids, o.ProcessGuid)
	}
	slices.Sort(guids)
	return slices.Compact(guids)
}

// OperationWrite changes an operation that has not ended. It applies only
// if the operation still has ExpectModificationIndex; otherwise it is
// skipped like a stale row write. Every applied write emits
// operation_changed.
type OperationWrite struct {
	ID                      string
	ProcessGuid             string
	ExpectModificationIndex int64
	// Status, when set, is the status the operation moves to (allowed by
	// models.CheckOperationTransition), with Reason; the store stamps
	// started_at on IN_PROGRESS and finished_at on an ending status.
	Status models.Operation_Status
	Reason string
	// History lines to append, stamped with the time of the write.
	History []string
	// LeaseOwner, when set, takes (or renews) the lease until
	// LeaseExpiresAt.
	LeaseOwner     string
	LeaseExpiresAt int64
	// ReleaseLease gives the lease up: the operation has no owner until a
	// board takes it up (ReleaseLeases). Not with LeaseOwner.
	ReleaseLease bool
	// Start applies the request a PENDING operation holds, as the API
	// would have when it arrived: it activates the operation's definition
	// (and the rest of the update), writes the rollout record with the
	// operation's id, and moves the operation to IN_PROGRESS (FINISHED when
	// the definition is already the active one), leased to LeaseOwner.
	// A VALIDATE operation (an update with validate) starts in two steps:
	// from PENDING its validation starts (IN_PROGRESS, nothing applied);
	// once validated, a Start of the IN_PROGRESS operation applies it.
	// Status is ignored with Start.
	Start bool
	// FailedValidation says the write ends a VALIDATE operation in ERROR
	// because validation refused its definition: the store records that
	// the definition failed validation (models.DefinitionSummary), so that
	// a plain rollback never goes to it (models.RollbackTarget).
	FailedValidation bool
	// SetBlockedBy says the write sets what holds the validation of a
	// VALIDATE operation that stays IN_PROGRESS validating: BlockedBy
	// (DiagnoseValidation), nil when nothing does any longer. The store
	// keeps it with the operation, which shows it as its blocked_by while
	// it validates.
	SetBlockedBy bool
	BlockedBy    *models.BlockedBy
}
