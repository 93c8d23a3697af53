// Package db declares the board's storage seam: one interface per aggregate.
// db/sqldb is the one implementation, over SQLite, Postgres and MySQL.
//
// Every method returns *models.Error values for outcomes a client can act
// on (ResourceNotFound, ResourceExists, ResourceConflict, InvalidRequest), so
// handlers pass them through unchanged.
package db

import (
	"context"
	"time"

	"github.com/corkboard/corkboard/models"
)

// DB is everything the board stores.
type DB interface {
	DomainDB
	DesiredLRPDB
	DefinitionDB
	ActualLRPDB
	CellDB
	ActualLRPLifecycleDB
	LeaseDB
	ConvergenceDB
	ConvergenceFeedDB
	RolloutDB
	OperationDB
	FreezeDB
	BudgetGroupDB
}

// BudgetGroupDB stores budget groups (models.BudgetGroup): disruption
// budgets shared by the LRPs that name them.
type BudgetGroupDB interface {
	// SetBudgetGroup stores a valid group, new or replacing the one of its
	// name, stamped with the board's time and requestedBy.
	SetBudgetGroup(ctx context.Context, g *models.BudgetGroup, requestedBy string) (*models.BudgetGroup, error)
	// RemoveBudgetGroup deletes a group at the request of requestedBy; an
	// unknown name is ResourceNotFound. The LRPs that name it keep naming
	// it: their group counts as not defined.
	RemoveBudgetGroup(ctx context.Context, name, requestedBy string) error
	// BudgetGroups lists every group in name order (bytes).
	BudgetGroups(ctx context.Context) ([]*models.BudgetGroup, error)
}

// FreezeDB stores freeze windows (models.FreezeWindow): periods during
// which no rollout starts or progresses but reverts and overrides.
type FreezeDB interface {
	// AddFreezeWindow stores a valid window stamped with the board's
	// time and requestedBy (who asked, as an operation names its caller);
	// a name already stored is ResourceExists.
	AddFreezeWindow(ctx context.Context, w *models.FreezeWindow, requestedBy string) (*models.FreezeWindow, error)
	// RemoveFreezeWindow deletes a window at the request of requestedBy;
	// an unknown name is ResourceNotFound.
	RemoveFreezeWindow(ctx context.Context, name, requestedBy string) error
	// FreezeWindows lists every window in name order (bytes), and the
	// board's time (the database's clock) when it read them, for
	// models.FreezeActive.
	FreezeWindows(ctx context.Context) ([]*models.FreezeWindow, time.Time, error)
}

type DomainDB interface {
	// UpsertDomain marks domain fresh for ttl; ttl 0 keeps it fresh forever.
	UpsertDomain(ctx context.Context, domain string, ttl time.Duration) error
	// FreshDomains lists domains that have not expired.
	FreshDomains(ctx context.Context) ([]*models.Domain, error)
}

// DesiredLRPFilter narrows list reads; zero values match everything.
type DesiredLRPFilter struct {
	Domain       string
	ProcessGuids []string
	// After, when set, starts the list after this process guid; Limit > 0
	// reads at most that many. Lists come in process guid order (bytes).
	After string
	Limit int
	// KeepEncoded lets EachDesiredLRP and EachDesiredLRPSchedulingInfo
	// hand fields still encoded (models.KeepEncoded): each LRP's
	// definition and routes, for a caller that only encodes them again as
	// protobuf. They may come decoded all the same; other reads ignore it.
	KeepEncoded bool
}

type DesiredLRPDB interface {
	// DesireLRP stores the DesiredLRP, its first definition (active), and one
	// UNCLAIMED ActualLRP per index stamped with that definition, in one
	// transaction. An existing guid is ResourceExists and changes nothing.
	DesireLRP(ctx context.Context, lrp *models.DesiredLRP) (*models.DesiredLRP, error)
	// DesiredLRPByProcessGuid returns the LRP with its active definition.
	DesiredLRPByProcessGuid(ctx context.Context, processGuid string) (*models.DesiredLRP, error)
	// DesiredLRPs returns matching LRPs with their active definitions.
	DesiredLRPs(ctx context.Context, filter DesiredLRPFilter) ([]*models.DesiredLRP, error)
	// EachDesiredLRP is DesiredLRPs handing each LRP to fn as it is read,
	// in one query (per batch of guids), so that a caller streaming a
	// whole list holds one LRP at a time. An error from fn stops the read
	// and is returned.
	EachDesiredLRP(ctx context.Context, filter DesiredLRPFilter, fn func(*models.DesiredLRP) error) error
	// DesiredLRPSchedulingInfos returns matching LRPs without run definitions.
	DesiredLRPSchedulingInfos(ctx context.Context, filter DesiredLRPFilter) ([]*models.DesiredLRPSchedulingInfo, error)
	// EachDesiredLRPSchedulingInfo is DesiredLRPSchedulingInfos as
	// EachDesiredLRP is DesiredLRPs.
	EachDesiredLRPSchedulingInfo(ctx context.Context, filter DesiredLRPFilter, fn func(*models.DesiredLRPSchedulingInfo) error) error
	// UpdateDesiredLRP applies the update; see models.DesiredLRPUpdate.
	UpdateDesiredLRP(ctx context.Context, processGuid string, update *models.DesiredLRPUpdate) (*models.DesiredLRP, error)
	// RemoveDesiredLRP deletes the LRP and its UNCLAIMED instances. Claimed
	// and running instances stay for the rep and convergence to stop; the
	// definitions stay while anything references them.
	RemoveDesiredLRP(ctx context.Context, processGuid string) error
}

// RolloutDB reads and steers rolling updates. Every change of an LRP's
// active definition (an update with a new definition, a rollback, an
// abort) stores its rollout record as PROGRESSING in the same transaction
// and emits rollout_changed; convergence does the rest.
type RolloutDB interface {
	// RolloutStatus reports where the LRP's rollout stands: state NONE
	// when it never changed definition. Per-definition counts are read
	// live; updated_instances and in_flight are as convergence last
	// counted them. Unknown guid: ResourceNotFound.
	RolloutStatus(ctx context.Context, processGuid string) (*models.RolloutStatus, error)
	// Rollback re-activates a kept definition (see models.RollbackRequest
	// for the default when definitionID is empty). An unknown definition
	// is ResourceNotFound; the active one, or no older one to go back to,
	// is InvalidStateTransition. Nothing is written then. With fast the
	// rollout is a fast one (models.RolloutStrategy.FastRollout).
	Rollback(ctx context.Context, processGuid, definitionID string, fast bool) (*models.RolloutStatus, error)
	// AbortRollout rolls back to the healthy definition (models.AbortTarget),
	// fast as Rollback's; InvalidStateTransition when it is already active.
	AbortRollout(ctx context.Context, processGuid string, fast bool) (*models.RolloutStatus, error)

	// Staged phases (models.StagedRollout; the arithmetic is in
	// models/rollout_stage.go). An update with a new definition and staged
	// stores its record PROGRESSING with a stage: prior 0, the target and
	// rate asked, the seed asked or models.DefaultStageSeed, started and
	// watching since the update. A rollback or an abort stores no stage
	// (going back is never staged). The three calls below each record an
	// operation (PROMOTE, PAUSE, RESUME; FINISHED), write the record
	// compare-and-set, emit rollout_changed, and answer the status, as
	// models.DecideStage decides. Each is InvalidStateTransition, writing
	// nothing, when the LRP has no staged rollout to its active definition
	// that is PROGRESSING or HOLDING (models.StageUnderWay).

	// PromoteRollout starts the next phase from the share that stands now
	// (models.StageShare): prior that share, target toPercent (not below
	// it: InvalidRequest naming to_percent), rate as given (nil: at once),
	// started and watching since now, not paused, the same seed. The
	// record becomes PROGRESSING, its progress (the deadline's start) now.
	PromoteRollout(ctx context.Context, processGuid string, toPercent float64, rate *models.SafeRate) (*models.RolloutStatus, error)
	// PauseRollout freezes the phase's clock: paused at now, the reason
	// "paused by <requested_by>" (the context's OperationNote; "paused" without one).
	// Already paused: InvalidStateTransition.
	PauseRollout(ctx context.Context, processGuid string) (*models.RolloutStatus, error)
	// ResumeRollout starts the clock again: the paused time is added to
	// paused_nanos and to the record's progress time (the deadline does not
	// run while paused), watching since now, the reason cleared. Not
	// paused: InvalidStateTransition.
	ResumeRollout(ctx context.Context, processGuid string) (*models.RolloutStatus, error)

	// EditRollout changes the limits of the LRP's rollout under way, as
	// models.DecideRolloutEdit decides from the LRP and its record read
	// locked: the fields of the update strategy the edit sets, and for a
	// staged rollout its phase. In one transaction it writes the strategy
	// and the record, moves the LRP's modification tag on, records an EDIT
	// operation (FINISHED, its history line what changed, from and to), and
	// emits desired_lrp_changed, rollout_changed and operation_changed. No
	// instance is written: the next convergence pass plans with the new
	// limits. A refusal (InvalidRequest, InvalidStateTransition,
	// ResourceNotFound) writes nothing.
	EditRollout(ctx context.Context, edit *models.EditRolloutRequest) (*models.RolloutStatus, error)

	// RecordVerdict appends verdict to the judgement of the LRP's rollout
	// to definitionID (models.RolloutJudgement.WithVerdict) while that
	// rollout is judged (models.Judged) and the definition active, adds
	// the verdict's line to the history of the operation that started
	// the rollout, and emits rollout_changed and operation_changed. A
	// rollout that moved on meanwhile (another definition, HELD, FAILED,
	// REVERTED, COMPLETE) is a ResourceConflict and nothing is written.
	RecordVerdict(ctx context.Context, processGuid, definitionID string, verdict *models.AnalysisVerdict) error
}

type DefinitionDB interface {
	// Definitions lists the stored definitions of an LRP, newest first.
	Definitions(ctx context.Context, processGuid string) ([]*models.DefinitionSummary, error)
	// Definition returns one stored definition.
	Definition(ctx context.Context, processGuid, definitionID string) (*models.LRPDefinition, error)
}

// ActualLRPFilter narrows list reads; zero values match everything.
type ActualLRPFilter struct {
	Domain      string
	CellID      string
	ProcessGuid string
	Index       *int32
	// After, when set, starts the list after this row; Limit > 0 reads at
	// most that many. Lists come in (process guid, index, presence name)
	// order, guids as bytes.
	After *models.ActualLRPKey
	Limit int
}

type ActualLRPDB interface {
	ActualLRPs(ctx context.Context, filter ActualLRPFilter) ([]*models.ActualLRP, error)
	// EachActualLRP is ActualLRPs as EachDesiredLRP is DesiredLRPs.
	EachActualLRP(ctx context.Context, filter ActualLRPFilter, fn func(*models.ActualLRP) error) error
}
