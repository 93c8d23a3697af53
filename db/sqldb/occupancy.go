package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// ReportOccupancy applies a cell's occupancy changes (DESIGN §7), in
// order: a change sets occupied on the row of its key while that row is
// RUNNING and its instance guid's on cellID; a change that finds no such
// row, or one already as the change says, is ignored. The rows that end up
// changed are written in one transaction, compare-and-set, in key order,
// through the path of the bulk report's writes (one statement on
// Postgres), each with an actual_lrp_changed event after commit.
//
// The rows are read by key, not the cell's every row: a batch of changes
// costs what it touches. When nothing changes that read is all; a lost
// race reads again, locking the rows.
//
// A change naming an instance that runs on another cell (its row holds the
// change's instance guid on a cell not cellID) refuses the whole call with
// InvalidStateTransition naming the change (models.CheckInstanceCell):
// nothing of the batch is applied. A rep never sends one, so refusing the
// batch cannot hold up an honest rep's reports; an error per change would
// need an answer the rep does not read.
func (s *SQLDB) ReportOccupancy(ctx context.Context, cellID string, changes []*models.OccupancyChange) (*db.OccupancyResult, error) {
	if cellID == "" {
		return nil, errInvalid("cell_id", "required")
	}
	for i, c := range changes {
		if c == nil {
			return nil, errInvalid(fmt.Sprintf("changes[%d]", i), "required")
		}
	}
	keys := occupancyKeys(changes)
	rows, err := s.selectActualLRPsByKey(ctx, s.conn, keys, "")
	if err != nil {
		return nil, asModelError("report occupancy", err)
	}
	writes, err := occupancyWrites(cellID, changes, rows)
	if err != nil {
		return nil, err
	}
	if len(writes) == 0 {
		return &db.OccupancyResult{}, nil
	}
	next := writes
	err = s.transactPublishing(ctx, "report occupancy", func(tx *sql.Tx) ([]models.Event, error) {
		if next == nil {
			rows, err := s.selectActualLRPsByKey(ctx, tx, keys, s.driver.lockForUpdate())
			if err != nil {
				return nil, err
			}
			if next, err = occupancyWrites(cellID, changes, rows); err != nil {
				return nil, err
			}
		}
		writes, next = next, nil
		if err := s.writeActualLRPs(ctx, tx, writes); err != nil {
			return nil, err
		}
		events := make([]models.Event, len(writes))
		for i, w := range writes {
			events[i] = models.ActualLRPChanged(w.before, w.after)
		}
		return events, nil
	})
	if err != nil {
		return nil, err
	}
	result := &db.OccupancyResult{Applied: len(writes)}
	for _, w := range writes {
		result.Changed = append(result.Changed, w.before.ProcessGuid)
	}
	// Writes are in key order: the guids come sorted.
	result.Changed = slices.Compact(result.Changed)
	return result, nil
}

// occupancyKeys lists the row keys the changes name, each once.
func occupancyKeys(changes []*models.OccupancyChange) []models.ActualLRPKey {
	seen := make(map[models.ActualLRPKey]bool, len(changes))
	keys := make([]models.ActualLRPKey, 0, len(changes))
	for _, c := range changes {
		key := occupancyKey(c)
		if !seen[key] {
			seen[key] = true
			keys = append(keys, key)
		}
	}
	return keys
}

func occupancyKey(c *models.OccupancyChange) models.ActualLRPKey {
	return models.ActualLRPKey{ProcessGuid: c.GetProcessGuid(), Index: c.GetIndex(), Presence: c.GetPresence()}
}

// occupancyWrites applies the changes, in order, to the rows as read and
// returns a write for each row whose occupied flag ends up changed, in key
// order. A change applies to a RUNNING row of its instance guid on cellID;
// one whose row holds its instance guid on another cell is an error.
func occupancyWrites(cellID string, changes []*models.OccupancyChange, read []*models.ActualLRP) ([]rowWrite, error) {
	before := make(map[models.ActualLRPKey]*models.ActualLRP, len(read))
	for _, lrp := range read {
		before[keyOf(lrp)] = lrp
	}
	after := map[models.ActualLRPKey]*models.ActualLRP{}
	for i, c := range changes {
		key := occupancyKey(c)
		row := before[key]
		if err := models.CheckInstanceCell(row, "report occupancy of", c.GetInstanceGuid(), cellID); err != nil {
			return nil, models.NewError(models.Error_InvalidStateTransition, "changes[%d]: %s", i, models.ConvertError(err).GetMessage())
		}
		if row == nil || row.State != models.ActualLRP_RUNNING || !row.BelongsTo(c.GetInstanceGuid(), cellID) {
			continue
		}
		if after[key] == nil {
			after[key] = models.NextVersion(row)
		}
		after[key].Occupied = c.GetOccupied()
	}
	var writes []rowWrite
	for key, next := range after {
		if next.Occupied != before[key].Occupied {
			writes = append(writes, rowWrite{before: before[key], after: next})
		}
	}
	// Key order, so that writers of many rows lock them in one order.
	slices.SortFunc(writes, func(a, b rowWrite) int { return compareActualLRPs(a.before, b.before) })
	return writes, nil
}
