package convergence

import (
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// Mark is where the database stood at one moment, for db.ConvergenceFeedDB.
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
	// FreezeWindows are every stored freeze window, read each pass
	// (models.FreezeActive decides which is active at the pass's time).
	FreezeWindows []*models.FreezeWindow
	// BudgetGroups are every stored budget group, read each pass like
	// FreezeWindows: the disruption budgets LRPs share (budget.go,
	// GroupBudget). A Partial snapshot holds every LRP of each group one
	// of its LRPs names, so each group is tallied whole.
	BudgetGroups []*models.BudgetGroup
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
	// BoardRollouts, in a Partial snapshot, are the unsettled rollout
	// records of every LRP, read or not: the rollout governor counts the
	// rollouts in flight across the board (GovernRollouts). Nil: Rollouts
	// are all there are (a full snapshot, or a dry run of one LRP, which
	// then assumes its rollout has a slot).
	BoardRollouts []RolloutRow
	// Crashes are the board's crashes within the crash memory's window
	// (Config.CrashMemory), every LRP's, read whole every pass like
	// FreezeWindows (an older one in the slice is ignored).
	Crashes []CrashRow
	// CheckFailures are the failing health checks of instances as their
	// cells last reported them (the board's signals keep them, not the
	// database), any LRP's, at most one per (LRP, definition, index): a
	// rollout's blocked_by names a waiting instance's (CheckFailing).
	CheckFailures []models.CheckFailure
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
	// Fast: the rollout is a fast one (a rollback or abort asked fast, or
	// an automatic revert): the planner rolls it with
	// models.RolloutStrategy.FastRollout.
	Fast bool
	// Judgement is the rollout's analysis, failure policy, bake and
	// verdicts (docs/analysis.md), nil when its update asked for none.
	// Immutable like Stage.
	Judgement *models.RolloutJudgement
	// AdmittedAt is when the rollout governor admitted the rollout (Unix
	// nanoseconds; 0 while it waits, or before its first pass): from then
	// it may move instances and holds a slot while it goes on (HoldsSlot).
	// QueuePosition is its place in the governor's queue (from 1; 0 when
	// not queued) and QueueReason says so in words (QueueReason).
	AdmittedAt    int64
	QueuePosition int32
	QueueReason   string
	// FreezeExemption says why an active freeze window does not hold the
	// rollout ("revert", "override"; models.FreezeHolds); "" when one does.
	FreezeExemption string
	// BlockedBy is what holds the rollout, as the last pass diagnosed it
	// (DiagnoseRollout); nil while nothing does. Immutable like Stage.
	BlockedBy *models.BlockedBy
}

// Equal reports whether r and o hold the same record (RolloutRow has
// pointer fields, so == compares the stage's and judgement's addresses).
func (r RolloutRow) Equal(o RolloutRow) bool {
	rs, os := r.Stage, o.Stage
	rj, oj := r.Judgement, o.Judgement
	rb, ob := r.BlockedBy, o.BlockedBy
	r.Stage, o.Stage = nil, nil
	r.Judgement, o.Judgement = nil, nil
	r.BlockedBy, o.BlockedBy = nil, nil
	return r == o && proto.Equal(rs, os) && proto.Equal(rj, oj) && proto.Equal(rb, ob)
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
	// DisruptionBudget as stored; nil means the strategy's max_unavailable
	// (models.ResolveDisruptionBudget, budget.go).
	DisruptionBudget *models.DisruptionBudget
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
func (r *ActualRow) Key() models.ActualLRPKey {
	return models.ActualLRPKey{ProcessGuid: r.ProcessGuid, Index: r.Index, Presence: r.Presence}
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
	// Quarantined: placement puts nothing new on the cell until an
	// operator clears it (quarantine.go); QuarantineClearedAt is when one
	// last did (Unix nanoseconds, 0 for never).
	Quarantined         bool
	QuarantineClearedAt int64
	// UnreadUse is what the rows that the snapshot does not hold use on
	// the cell: zero in a full snapshot, the other LRPs' rows in a
	// partial one.
	UnreadUse Resources
	// UnreadStarts are the Since of the rows the snapshot does not hold
	// that count as recent starts on the cell (RecentStart), for the start
	// governor: nil in a full snapshot; in a partial one, filled only
	// while the board has a max_starts_per_cell_per_second.
	UnreadStarts []int64
}

// Resources is memory, disk and an instance count.
type Resources struct {
	MemoryMB  int32
	DiskMB    int32
	Instances int32
}

// OperationRow is an operation that has not ended, as convergence sees it.
type OperationRow struct {
	ID          string
	ProcessGuid string
	Sequence    int64
	Kind        models.Operation_Kind
	// Status is PENDING or IN_PROGRESS.
	Status models.Operation_Status
	// DefinitionID is the definition a change of definition activates;
	// DefinitionStored reports whether it is still stored (a PENDING
	// operation whose definition cleanup deleted cannot run).
	DefinitionID     string
	DefinitionStored bool
	// The resources of that definition (0 when it is not stored): a
	// validation instance of it needs them placed.
	MemoryMB int32
	DiskMB   int32
	// The lease of an IN_PROGRESS operation: its owner ("" for none) and
	// when it expires, Unix nanoseconds.
	LeaseOwner     string
	LeaseExpiresAt int64
	CreatedAt      int64
	// ModificationIndex grows by one with every write of the operation;
	// OperationWrite is compare-and-set on it.
	ModificationIndex int64
	// BlockedBy is what the last pass found holding the operation's
	// validation under way (OperationWrite.SetBlockedBy), nil for none.
	BlockedBy *models.BlockedBy
}

// DesiredOf returns guid's DesiredLRP in the snapshot, nil when it holds
// none.
func (s *Snapshot) DesiredOf(guid string) *DesiredSchedule {
	for i := range s.Desired {
		if s.Desired[i].ProcessGuid == guid {
			return &s.Desired[i]
		}
	}
	return nil
}
