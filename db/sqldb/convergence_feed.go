package sqldb

import (
	"context"
	"database/sql"
	"slices"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ db.ConvergenceFeedDB = (*SQLDB)(nil)

// ConvergenceMark sequences what is committed, then reads the placement
// epoch and the log's head together.
//
// Sequencing first is what makes the mark a bound: a write that committed
// before this call, but whose events were still in the outbox, gets its
// positions now, at or below the head read next. The epoch comes before
// any row the caller reads after the mark, as ConvergenceSnapshot reads
// it first.
func (s *SQLDB) ConvergenceMark(ctx context.Context) (convergence.Mark, error) {
	if err := s.logCommitted(ctx); err != nil {
		return convergence.Mark{}, asModelError("read convergence mark", err)
	}
	var epoch, head int64
	err := s.queryRow(ctx, s.conn, `SELECT e.epoch, h.position FROM placement_epoch e, event_log_head h
 WHERE e.id = 1 AND h.id = 1`).Scan(&epoch, &head)
	if err == sql.ErrNoRows {
		return convergence.Mark{}, errInvalidRecord("placement_epoch or event_log_head has no row: the database was not migrated by this version")
	}
	if err != nil {
		return convergence.Mark{}, asModelError("read convergence mark", err)
	}
	return convergence.Mark{PlacementEpoch: epoch, LogHead: uint64(head)}, nil
}

// ConvergenceChanges reads the keys of the events at positions
// after+1..upTo that name an LRP (models.EventNamesLRP: not those of
// cells, freeze windows and budget groups, which the snapshot reads whole)
// and of the bundles there, which hold only such events (bundle.go). The
// log has no holes, so it holds all of them exactly when its first row
// past after holds after+1, as its first event (a row of one event at
// after+1, or a bundle beginning there) or a later one (a bundle that
// began at or before after: marks fall between rows, but this reads any
// after).
func (s *SQLDB) ConvergenceChanges(ctx context.Context, after, upTo uint64) ([]string, bool, error) {
	if upTo <= after {
		return nil, false, nil
	}
	var first int64
	err := s.queryRow(ctx, s.conn, "SELECT position - event_count + 1 FROM event_log WHERE position > ? ORDER BY position LIMIT 1", int64(after)).Scan(&first)
	if err == sql.ErrNoRows {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, asModelError("read convergence changes", err)
	}
	if uint64(first) > after+1 {
		return nil, true, nil
	}
	var guids []string
	err = s.eachRow(ctx, s.conn, `SELECT DISTINCT event_type, event_key FROM event_log
 WHERE position > ? AND position <= ?`, []any{int64(after), int64(upTo)},
		func(rows *sql.Rows) error {
			var eventType, guid string
			if err := rows.Scan(&eventType, &guid); err != nil {
				return err
			}
			if eventType == bundleType || models.EventNamesLRP(eventType) {
				guids = append(guids, guid)
			}
			return nil
		})
	if err != nil {
		return nil, false, asModelError("read convergence changes", err)
	}
	// Sorted here, as bytes, so every dialect's collation gives one order;
	// a guid with events and bundles was read once for each.
	slices.Sort(guids)
	return slices.Compact(guids), false, nil
}

// ConvergenceRows reads the LRPs' rows in one read-only transaction, as
// ConvergenceSnapshot reads a targeted snapshot, without the cells or
// what the other LRPs use on them.
func (s *SQLDB) ConvergenceRows(ctx context.Context, processGuids []string) (*convergence.Snapshot, error) {
	if len(processGuids) == 0 {
		return &convergence.Snapshot{Partial: true}, nil
	}
	parts, err := s.snapshotParts(ctx, processGuids)
	if err != nil {
		return nil, asModelError("load convergence rows", err)
	}
	r := newSnapshotReader(s)
	err = s.readConsistently(ctx, func(tx *sql.Tx) error { return r.readLRPs(ctx, tx, parts[0]) })
	if err != nil {
		return nil, asModelError("load convergence rows", err)
	}
	snap := joinSnapshotParts([]*snapshotReader{r})
	snap.Partial = true
	return snap, nil
}

// ConvergenceCells reads the cells and the fresh domains in one read-only
// transaction.
func (s *SQLDB) ConvergenceCells(ctx context.Context) ([]convergence.CellRow, []string, error) {
	r := newSnapshotReader(s)
	if err := s.readCells(ctx, r); err != nil {
		return nil, nil, asModelError("load convergence cells", err)
	}
	return r.cells, r.freshDomains, nil
}
