package db

import (
	"context"
	"time"

	"github.com/corkboard/corkboard/models"
)

type CellDB interface {
	// RegisterCell inserts or renews the cell, its presence expiring after
	// ttl. It emits cell_changed when the cell is new, changed, or was
	// expired. It is HeartbeatCell without a fresh start: the draining flag
	// stays as stored.
	RegisterCell(ctx context.Context, cell *models.Cell, ttl time.Duration) error
	// HeartbeatCell is RegisterCell that also says whether the cell is
	// draining afterwards. freshStart (a rep's first registration after it
	// starts) clears the flag; cell.draining in the argument is ignored.
	HeartbeatCell(ctx context.Context, cell *models.Cell, ttl time.Duration, freshStart bool) (draining bool, err error)
	// DrainCell marks the cell draining: placement puts nothing new on it
	// (it stays present). An unknown cell is ResourceNotFound; a cell that
	// drains already is left as it is. It emits cell_changed when it
	// changes the cell.
	DrainCell(ctx context.Context, cellID string) error
	// DrainCellBy is DrainCell with a deadline: from now plus deadline the
	// drain's evacuations go ahead whatever the disruption budgets
	// (convergence.DecideEvacuation). A positive deadline replaces the
	// one a drain under way has; 0 leaves it. A drain's start is recorded
	// (Cell.drain_started_at) when the cell starts draining.
	DrainCellBy(ctx context.Context, cellID string, deadline time.Duration) error
	// DrainStatus is how the cell's drain goes: its instances left, and
	// each LRP whose disruption budget holds an evacuation, with a
	// BlockedBy. An unknown cell is ResourceNotFound.
	DrainStatus(ctx context.Context, cellID string) (*models.DrainStatus, error)
	// QuarantineCell quarantines the cell: placement puts nothing new on
	// it until ClearCellQuarantine; its instances keep running. by names
	// who asked (a caller, or "board"), reason why. clearedAt ≥ 0 makes it
	// conditional on the cell's quarantine_cleared_at still being that
	// (the board's own quarantine, planned from crashes since a clear it
	// saw); -1 for any. A cell quarantined already, or cleared since, is
	// left as it is and changed is false. An unknown cell is
	// ResourceNotFound. It emits cell_changed when it changes the cell.
	QuarantineCell(ctx context.Context, cellID, reason, by string, clearedAt int64) (changed bool, err error)
	// ClearCellQuarantine clears the cell's quarantine and records by whom
	// and when (quarantine_cleared_at, quarantine_cleared_by); a cell not
	// quarantined is left as it is. An unknown cell is ResourceNotFound.
	// It emits cell_changed when it changes the cell.
	ClearCellQuarantine(ctx context.Context, cellID, by string) error
	// Cells lists every known cell, expired or not, with free capacity
	// computed from the instances placed on it.
	Cells(ctx context.Context) ([]*models.Cell, error)
	// CellsAfter is one page of Cells: at most limit cells (limit > 0)
	// whose ids sort after after, as bytes.
	CellsAfter(ctx context.Context, after string, limit int) ([]*models.Cell, error)
}

// ActualLRPLifecycleDB is what reps call. Every method checks
// models.CheckTransition and that the row is placed on or owned by the
// calling cell; a violation is an error and writes nothing. Each write is
// compare-and-set on the row's modification tag and emits its events after
// commit.
type ActualLRPLifecycleDB interface {
	// ClaimActualLRP: UNCLAIMED (placed on caller's cell) → CLAIMED.
	ClaimActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller) (*models.ActualLRP, error)
	// StartActualLRP: → RUNNING with net info. On a row other than
	// ORDINARY (EVACUATING, SUSPECT, RETIRING) it only changes a RUNNING
	// row's net info and routable: a rep marks such an instance unroutable
	// before it stops it.
	StartActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller, netInfo *models.NetInfo, routable bool) (*models.ActualLRP, error)
	// CrashActualLRP: → CRASHED, crash_count + 1, reason kept. Whether and
	// when it restarts is convergence's decision (the crash policy).
	CrashActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller, reason string) (*models.ActualLRP, error)
	// FailActualLRP: the cell cannot run an instance placed on it → back to
	// UNCLAIMED without a cell, placement_error set.
	FailActualLRP(ctx context.Context, key models.ActualLRPKey, cellID, placementError string) (*models.ActualLRP, error)
	// RemoveActualLRP deletes the caller's row.
	RemoveActualLRP(ctx context.Context, key models.ActualLRPKey, caller models.Caller) error
	// EvacuateActualLRP hands the caller's instance of (processGuid, index)
	// over to a replacement, start-before-stop, in one transaction:
	//   - the ORDINARY row is RUNNING and the caller's: an EVACUATING copy
	//     of it is inserted (still running, still routable) and the
	//     ORDINARY row becomes UNCLAIMED on no cell, for convergence to
	//     place elsewhere; keepRunning is true. A repeat (the EVACUATING
	//     row already is the caller's) writes nothing and answers true.
	//   - the ORDINARY row is CLAIMED by the caller, or UNCLAIMED placed on
	//     its cell: it becomes UNCLAIMED on no cell; keepRunning is false.
	//   - either row holds the caller's instance guid on another cell: the
	//     call is refused with InvalidStateTransition and writes nothing.
	//   - anything else writes nothing; keepRunning is false.
	// An index whose EVACUATING row belongs to another instance is
	// ResourceConflict for a RUNNING caller: the earlier evacuation must
	// finish (its row be removed) first; the caller keeps running and asks
	// again.
	EvacuateActualLRP(ctx context.Context, processGuid string, index int32, caller models.Caller) (keepRunning bool, err error)
	// BulkReport reconciles what a cell says it runs with the board's rows:
	// rows of the cell that are CLAIMED/RUNNING are brought in line with the
	// report (claimed → running, net info, routable, occupied), instances
	// the board has no row for (or a row owned by another instance) come
	// back in Stop, and UNCLAIMED rows placed on the cell come back in
	// Assigned. A reported EVACUATING instance stays (not in Stop) while
	// its EVACUATING row is that instance and the ORDINARY row of its index
	// exists and is not RUNNING; once the replacement runs, or either row is
	// gone, it comes back in Stop. A reported instance that is the cell's
	// RETIRING row of its index (reported ORDINARY or RETIRING) stays
	// while the row has no stop_requested, and comes back in Stop, with
	// presence RETIRING, once it has.
	BulkReport(ctx context.Context, cellID string, instances []*models.ReportedInstance) (*BulkReportResult, error)
	// ReportOccupancy applies a cell's occupancy changes, in order, in one
	// transaction: a change sets occupied on the row of its key only while
	// that row is RUNNING and its instance guid's on cellID, and is written
	// (tag bumped, actual_lrp_changed emitted after commit) only when that
	// changes the row. A change that matches no such row is ignored, not
	// an error: the instance may have stopped or moved since. A change
	// naming an instance that runs on another cell (its row holds the
	// change's instance guid on a cell not cellID) refuses the whole batch
	// with InvalidStateTransition, and nothing of it is applied.
	ReportOccupancy(ctx context.Context, cellID string, changes []*models.OccupancyChange) (*OccupancyResult, error)
	// LogHealth appends a definition_health event per entry of a cell's
	// health report to the event log, in order, in one transaction, and
	// writes nothing else: the board's signals add the events up
	// (package signals).
	LogHealth(ctx context.Context, cellID string, health []*models.DefinitionHealth) error
}

// OccupancyResult is what ReportOccupancy changed.
type OccupancyResult struct {
	// Applied is how many rows changed.
	Applied int
	// Changed lists the process guids of those rows, sorted, each once:
	// an autoscaled LRP's count depends on them, so they are worth a
	// convergence pass at once.
	Changed []string
}

type BulkReportResult struct {
	Stop     []*models.ReportedInstance
	Assigned []*models.ActualLRP
	// OccupancyChanged lists, in order, the process guids of the rows
	// whose occupied flag the report changes: an autoscaled LRP's count
	// depends on it, so they are worth a convergence pass at once.
	OccupancyChanged []string
}

// LeaseDB grants named leases (e.g. "convergence") to one owner at a time,
// so several boards can share one database.
type LeaseDB interface {
	// AcquireLease takes or renews the lease for owner until now+ttl and
	// returns the number of owner's tenure (see db/rowlock); 0 when another
	// owner has an unexpired lease. Writes made under the lease carry the
	// tenure (WithFence) and are refused once it moved.
	AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (int64, error)
	// ReleaseLease gives the lease up if owner owns it.
	ReleaseLease(ctx context.Context, name, owner string) error
}

// A Fence is a lease tenure that writes are made under: storage refuses a
// write whose context carries a fence (WithFence) unless, in the writing
// transaction, Owner still owns Lease in tenure number Tenure (db/rowlock.Check). The
// convergence runner puts its tenure's fence on every pass, so that a board
// that lost the lease — partitioned from the database while another board
// took over, say — cannot write what it planned under the old tenure.
type Fence struct {
	Lease  string
	Owner  string
	Tenure int64
}

type fenceKey struct{}

// WithFence returns ctx carrying f: the writes made with it are f's.
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceOf returns the fence ctx carries, if any.
func FenceOf(ctx context.Context) (Fence, bool) {
	f, ok := ctx.Value(fenceKey{}).(Fence)
	return f, ok
}
