package db

import (
	"context"

	"github.com/corkboard/corkboard/convergence"
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
	ConvergenceSnapshot(ctx context.Context, processGuids []string) (*convergence.Snapshot, error)
	// ApplyConvergence performs the writes, in batched transactions. Every
	// write is conditional on the row still having the modification index
	// (and state) the snapshot saw; a row that changed since is skipped and
	// counted, left for the next pass. Events are emitted after commit.
	ApplyConvergence(ctx context.Context, writes *convergence.ConvergenceWrites) (*convergence.ConvergenceResult, error)
}

// ConvergenceFeedDB lets the convergence lease owner keep a snapshot in
// memory and read only what changed: where the database stands (a mark),
// which LRPs the event log says changed since the last mark, those LRPs'
// rows, and the cells.
type ConvergenceFeedDB interface {
	// ConvergenceMark first moves every committed write's events into the
	// log, then reads the placement epoch and the log's head: every write
	// committed before the call is at a position at or below LogHead.
	ConvergenceMark(ctx context.Context) (convergence.Mark, error)
	// ConvergenceChanges lists the process guids named by the log's events
	// at positions after..upTo (cell and freeze window events excluded),
	// sorted, each once.
	// Lost is true when the log no longer keeps all of those positions
	// (trimmed): the caller must read everything again.
	ConvergenceChanges(ctx context.Context, after, upTo uint64) (guids []string, lost bool, err error)
	// ConvergenceRows reads the given LRPs' desired, actual, rollout,
	// definition and operation rows as ConvergenceSnapshot does, each LRP in
	// one transaction, without cells: a Partial snapshot whose Cells and
	// FreshDomains are empty and whose PlacementEpoch is 0.
	ConvergenceRows(ctx context.Context, processGuids []string) (*convergence.Snapshot, error)
	// ConvergenceCells reads every cell (in cell id order, UnreadUse zero)
	// and the fresh domains (sorted).
	ConvergenceCells(ctx context.Context) ([]convergence.CellRow, []string, error)
}
