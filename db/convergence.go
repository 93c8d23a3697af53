package db

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// ConvergenceDB loads what the convergence planner needs in a few bulk
// queries and applies its plan. Snapshot rows carry plain columns only:
// no run-definition blob is decoded (DESIGN §3).
type ConvergenceDB interface {
	// ConvergenceSnapshot loads the state for the given LRPs (all when
	// processGuids is empty). Cells and their usage are always complete,
	// since placement needs every cell's free capacity.
	ConvergenceSnapshot(ctx context.Context, processGuids []string) (*Snapshot, error)
	// ApplyConvergence performs the writes, in batched transactions. Every
	// write is conditional on the row still having the modification index
	// (and state) the snapshot saw; a row that changed since is skipped and
	// counted, left for the next pass. Events are emitted after commit.
	ApplyConvergence(ctx context.Context, writes *ConvergenceWrites) (*ConvergenceResult, error)
}

// Snapshot is the board's state as convergence reads it.
type Snapshot struct {
	Desired      []DesiredSchedule
	Actual       []ActualRow
	Cells        []CellRow
	FreshDomains []string
}

// DesiredSchedule is one DesiredLRP as scheduling sees it.
type DesiredSchedule struct {
	ProcessGuid        string
	Domain             string
	Instances          int32
	PlacementTags      []string
	ActiveDefinitionID string
	// Resources of the active definition.
	MemoryMB int32
	DiskMB   int32
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
	// Since is the Unix nanosecond time of the last state change.
	Since          int64
	PlacementError string
	Routable       bool
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
// them in this order: Delete, PromoteSuspect, MarkSuspect, Create, Restart,
// Unassign, Place, PlacementFailed — so that a row's key is free before
// another row takes it.
type ConvergenceWrites struct {
	// Delete removes rows: extra or undesired instances (retired), suspects
	// whose replacement runs, replacements of a suspect that came back.
	Delete []RowVersion
	// PromoteSuspect turns a SUSPECT row back into the ORDINARY one.
	PromoteSuspect []RowVersion
	// MarkSuspect turns an ORDINARY row on an expired cell into SUSPECT.
	MarkSuspect []RowVersion
	// Create inserts UNCLAIMED ORDINARY rows, placed when CellID is set.
	Create []NewActualLRP
	// Restart moves CRASHED rows back to UNCLAIMED (crash count kept).
	Restart []RowVersion
	// Unassign clears the cell of stale UNCLAIMED rows so they are placed
	// again.
	Unassign []RowVersion
	// Place assigns UNCLAIMED rows to cells.
	Place []Placement
	// PlacementFailed records why an UNCLAIMED row has no cell.
	PlacementFailed []PlacementFailure
}

// Empty reports whether there is nothing to write.
func (w *ConvergenceWrites) Empty() bool {
	return len(w.Delete)+len(w.PromoteSuspect)+len(w.MarkSuspect)+len(w.Create)+
		len(w.Restart)+len(w.Unassign)+len(w.Place)+len(w.PlacementFailed) == 0
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
}
