package db

import (
	"context"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// ConvergenceDB loads what the convergence planner needs in a few bulk
// queries and applies its plan. Snapshot rows carry plain columns only:
// no run-definition blob is decoded (DESIGN §3).
type ConvergenceDB interface {
	// ConvergenceSnapshot loads the state for the given LRPs (all when
	// processGuids is empty). Cells and their usage are always complete,
	// since placement needs every cell's free capacity: a snapshot of some
	// LRPs lists every cell, and each cell's UnreadUse carries what the
	// rows of the other LRPs use on it, read in the same transaction as
	// the rows it holds.
	ConvergenceSnapshot(ctx context.Context, processGuids []string) (*Snapshot, error)
	// ApplyConvergence performs the writes, in batched transactions. Every
	// write is conditional on the row still having the modification index
	// (and state) the snapshot saw; a row that changed since is skipped and
	// counted, left for the next pass. Events are emitted after commit.
	ApplyConvergence(ctx context.Context, writes *ConvergenceWrites) (*ConvergenceResult, error)
}

// ConvergenceFeedDB lets the convergence lease holder keep a snapshot in
// memory and read only what changed: where the database stands (a mark),
// which LRPs the event log says changed since the last mark, those LRPs'
// rows, and the cells.
type ConvergenceFeedDB interface {
	// ConvergenceMark first moves every committed write's events into the
	// log, then reads the placement epoch and the log's head: every write
	// committed before the call is at a position at or below LogHead.
	ConvergenceMark(ctx context.Context) (Mark, error)
	// ConvergenceChanges lists the process guids named by the log's events
	// at positions after..upTo (cell events excluded), sorted, each once.
	// Lost is true when the log no longer keeps all of those positions
	// (trimmed): the caller must read everything again.
	ConvergenceChanges(ctx context.Context, after, upTo uint64) (guids []string, lost bool, err error)
	// ConvergenceRows reads the given LRPs' desired, actual, rollout,
	// definition and operation rows as ConvergenceSnapshot does, each LRP in
	// one transaction, without cells: a Partial snapshot whose Cells and
	// FreshDomains are empty and whose PlacementEpoch is 0.
	ConvergenceRows(ctx context.Context, processGuids []string) (*Snapshot, error)
	// ConvergenceCells reads every cell (in cell id order, UnreadUse zero)
	// and the fresh domains (sorted).
	ConvergenceCells(ctx context.Context) ([]CellRow, []string, error)
}

// Mark is where the database stood at one moment, for ConvergenceFeedDB.
type Mark struct {
	PlacementEpoch int64
	LogHead        uint64
}

// Snapshot is the board's state as convergence reads it.
//
// What a cell has in use is its UnreadUse plus the resources of the
// snapshot's rows that name it (any state, any presence): every row of
// the database that names the cell, counted once.
type Snapshot struct {
	Desired      []DesiredSchedule
	Actual       []ActualRow
	Cells        []CellRow
	FreshDomains []string
	// Partial: only some LRPs were read (a targeted pass). Decisions that
	// need every row of a cell wait for a full snapshot.
	Partial bool
	// PlacementEpoch counts the applied writes that placed instances, read
	// before anything else: a plan from this snapshot places only while it
	// is unchanged (ConvergenceWrites.PlacementEpoch).
	PlacementEpoch int64
	// Rollouts are the rollout records of the LRPs read that are not
	// settled (a rollout under way, failed, or definitions waiting for
	// cleanup), desired or not, in process guid order.
	Rollouts []RolloutRow
	// Definitions lists the stored definitions of every LRP that has a
	// record in Rollouts: process guid order, then newest first (created_at
	// descending, then definition id descending).
	Definitions []DefinitionRow
	// Operations are the operations of the LRPs read that have not ended
	// (PENDING or IN_PROGRESS), desired or not, in process guid order, then
	// sequence order.
	Operations []OperationRow
}

// RolloutRow is an LRP's rollout record (table rollouts): where its
// rolling update stands as the planner last wrote it.
type RolloutRow struct {
	ProcessGuid string
	State       models.RolloutStatus_State
	Reason      string
	// DefinitionID is the definition the rollout moves the instances to:
	// the active definition when the record was written.
	DefinitionID string
	// FailedDefinitionID, with state REVERTED: the definition that failed.
	FailedDefinitionID string
	// Unix nanoseconds: start, last index completed (or the start), end (0
	// while it goes on).
	StartedAt  int64
	ProgressAt int64
	FinishedAt int64
	// UpdatedInstances and InFlight as the planner last counted them (see
	// models.RolloutStatus). A pass that counts more updated instances has
	// seen progress.
	UpdatedInstances int32
	InFlight         int32
	// ModificationIndex grows by one with every write of the record;
	// RolloutWrite is compare-and-set on it.
	ModificationIndex int64
	// OperationID is the operation that started the rollout ("" for a
	// rollout older than operations).
	OperationID string
	// Stage is the staged phase of a staged rollout, nil otherwise. Its
	// stored fields are the phase's (prior, target, rate, seed, times,
	// pause); share_percent, allowed_instances, active_instances and
	// target_at are computed by whoever reads it, never stored. Planner
	// and store treat it as immutable: a change is a new message.
	Stage *models.RolloutStage
}

// Equal reports whether r and o hold the same record (RolloutRow has a
// pointer field, so == compares the stage's address).
func (r RolloutRow) Equal(o RolloutRow) bool {
	rs, os := r.Stage, o.Stage
	r.Stage, o.Stage = nil, nil
	return r == o && proto.Equal(rs, os)
}

// StartedRollout is the record of a rollout of processGuid to definition
// to that starts at now (Unix nanoseconds): PROGRESSING, nothing counted
// yet, started by operation operationID, in the staged phase stage (nil:
// not staged). The store writes it when a definition becomes active; a
// rollout plan starts its simulation from the same record.
func StartedRollout(processGuid, to, reason, operationID string, stage *models.RolloutStage, now int64) RolloutRow {
	return RolloutRow{
		ProcessGuid:  processGuid,
		State:        models.RolloutStatus_PROGRESSING,
		Reason:       reason,
		DefinitionID: to,
		StartedAt:    now,
		ProgressAt:   now,
		OperationID:  operationID,
		Stage:        stage,
	}
}

// RollingReason is the reason of a rollout that an update starts, moving
// the instances from definition from to definition to.
func RollingReason(from, to string) string {
	return "rolling from " + from + " to " + to
}

// DefinitionRow is one stored definition as cleanup and staged phases see
// it: a staged phase creates the instances outside its cohort on the
// healthy definition, with that definition's resources.
type DefinitionRow struct {
	ProcessGuid  string
	DefinitionID string
	CreatedAt    int64
	MemoryMB     int32
	DiskMB       int32
}

// DesiredSchedule is one DesiredLRP as scheduling sees it.
type DesiredSchedule struct {
	ProcessGuid        string
	Domain             string
	Instances          int32
	PlacementTags      []string
	ActiveDefinitionID string
	// HealthyDefinitionID is the last definition that completed a rollout.
	HealthyDefinitionID string
	// UpdateStrategy as stored; nil means every default.
	UpdateStrategy *models.UpdateStrategy
	// Resources of the active definition.
	MemoryMB int32
	DiskMB   int32
	// Autoscaling as stored: nil (or disabled) when instances holds.
	Autoscaling *models.Autoscaling
	// Autoscaler is the autoscaler's state as last written (nil before its
	// first decision). Planner and store treat it as immutable.
	Autoscaler *models.AutoscalerStatus
	// ModificationIndex is the DesiredLRP's modification tag index when
	// read: an AutoscaleWrite applies only while it is unchanged.
	ModificationIndex int64
}

// ActualRow is one ActualLRP row as scheduling sees it.
type ActualRow struct {
	ProcessGuid  string
	Index        int32
	Presence     models.ActualLRP_Presence
	State        models.ActualLRP_State
	Domain       string
	InstanceGuid string
	CellID       string
	DefinitionID string
	CrashCount   int32
	// CrashReason is the reason of the row's last crash, if any.
	CrashReason string
	// Since is the Unix nanosecond time of the last state change.
	Since          int64
	PlacementError string
	Routable       bool
	Occupied       bool
	// StopRequested: a RETIRING row its rep has been told to stop.
	StopRequested bool
	// ModificationIndex is the row's modification_tag_index when read;
	// writes from a plan are conditional on it.
	ModificationIndex int64
	// Resources of the row's own definition.
	MemoryMB int32
	DiskMB   int32
}

// Key names the row.
func (r *ActualRow) Key() ActualLRPKey {
	return ActualLRPKey{ProcessGuid: r.ProcessGuid, Index: r.Index, Presence: r.Presence}
}

// CellRow is one cell as placement sees it.
type CellRow struct {
	CellID        string
	Zone          string
	Capacity      Resources
	PlacementTags []string
	// ExpiresAt is when presence ends, Unix nanoseconds.
	ExpiresAt int64
	// Draining: placement puts nothing new on the cell; it stays present.
	Draining bool
	// UnreadUse is what the rows that the snapshot does not hold use on
	// the cell: zero in a full snapshot, the other LRPs' rows in a
	// partial one.
	UnreadUse Resources
}

// Resources is memory, disk and an instance count.
type Resources struct {
	MemoryMB  int32
	DiskMB    int32
	Instances int32
}

// RowVersion is a row as a plan saw it: a write applies only if the row
// still has this state and modification index.
type RowVersion struct {
	Key               ActualLRPKey
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
	// Delete removes rows: extra or undesired instances (retired), suspects
	// whose replacement runs, replacements of a suspect that came back.
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
