package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// BulkReport reconciles what a cell says it runs with the board's rows:
// models.ReconcileReport decides, from the rows as read, which rows to
// write, which instances the cell stops and which rows are assigned to
// it; this writes the rows and logs their events.
//
// In the steady state — every instance reported as the board has it —
// this is one query, the cell's rows by cell_id, and no write. Otherwise
// the writes go in one transaction, compare-and-set on the rows as read,
// in key order; on Postgres as one statement. A lost race runs the
// transaction again on a fresh read.
func (s *SQLDB) BulkReport(ctx context.Context, cellID string, instances []*models.ReportedInstance) (*db.BulkReportResult, error) {
	if cellID == "" {
		return nil, errInvalid("cell_id", "required")
	}
	for i, r := range instances {
		switch {
		case r == nil:
			return nil, errInvalid(fmt.Sprintf("instances[%d]", i), "required")
		case r.State != models.ActualLRP_CLAIMED && r.State != models.ActualLRP_RUNNING:
			return nil, errInvalid(fmt.Sprintf("instances[%d].state", i), "must be CLAIMED or RUNNING, got "+r.State.String())
		}
	}
	rows, err := s.reportRows(ctx, s.conn, cellID, instances, "")
	if err != nil {
		return nil, asModelError("bulk report", err)
	}
	rec := reconcileReport(cellID, instances, rows, s.now().UnixNano())
	if len(rec.Writes) == 0 {
		return bulkReportResult(rec), nil
	}
	// The first attempt writes what was just read; one that lost a race
	// reads again, this time locking the rows, so that concurrent reports
	// of one cell queue for them instead of losing race after race until
	// their attempts run out.
	first := true
	err = s.transactPublishing(ctx, "bulk report", func(tx *sql.Tx) ([]models.Event, error) {
		if !first {
			rows, err := s.reportRows(ctx, tx, cellID, instances, s.driver.lockForUpdate())
			if err != nil {
				return nil, err
			}
			rec = reconcileReport(cellID, instances, rows, s.now().UnixNano())
		}
		first = false
		writes := make([]rowWrite, len(rec.Writes))
		for i, w := range rec.Writes {
			writes[i] = rowWrite{before: w.Before, after: w.After}
		}
		// An instance that starts by its report (its start call was lost)
		// takes its definition's routes, as a start does.
		if err := s.fillRoutePorts(ctx, tx, writes); err != nil {
			return nil, err
		}
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
	return bulkReportResult(rec), nil
}

// reportRows reads the cell's rows and the rows of reported keys placed
// elsewhere, keyed by row key; lock ("" or the dialect's FOR UPDATE) ends
// each query.
func (s *SQLDB) reportRows(ctx context.Context, q queryer, cellID string, instances []*models.ReportedInstance, lock string) (map[models.ActualLRPKey]*models.ActualLRP, error) {
	onCell, err := s.selectActualLRPs(ctx, q, "cell_id = ?"+lock, cellID)
	if err != nil {
		return nil, err
	}
	rows := make(map[models.ActualLRPKey]*models.ActualLRP, len(onCell))
	for _, lrp := range onCell {
		rows[keyOf(lrp)] = lrp
	}
	var elsewhere []models.ActualLRPKey
	wanted := map[models.ActualLRPKey]bool{}
	want := func(key models.ActualLRPKey) {
		if rows[key] == nil && !wanted[key] {
			wanted[key] = true
			elsewhere = append(elsewhere, key)
		}
	}
	for _, r := range instances {
		key := reportedKey(r)
		want(key)
		if key.Presence == models.ActualLRP_EVACUATING {
			// Whether its replacement runs yet.
			key.Presence = models.ActualLRP_ORDINARY
			want(key)
		}
	}
	found, err := s.selectActualLRPsByKey(ctx, q, elsewhere, lock)
	if err != nil {
		return nil, err
	}
	for _, lrp := range found {
		rows[keyOf(lrp)] = lrp
	}
	return rows, nil
}

// selectActualLRPsByKey reads the rows of keys (each at most once), in
// queries of at most reportKeyBatch keys; lock ("" or the dialect's FOR
// UPDATE) ends each query.
func (s *SQLDB) selectActualLRPsByKey(ctx context.Context, q queryer, keys []models.ActualLRPKey, lock string) ([]*models.ActualLRP, error) {
	var rows []*models.ActualLRP
	for start := 0; start < len(keys); start += reportKeyBatch {
		batch := keys[start:min(len(keys), start+reportKeyBatch)]
		tuples := strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", len(batch)), ", ")
		args := make([]any, 0, 3*len(batch))
		for _, key := range batch {
			args = append(args, key.ProcessGuid, key.Index, key.Presence.String())
		}
		found, err := s.selectActualLRPs(ctx, q, "(process_guid, instance_index, presence) IN ("+tuples+")"+lock, args...)
		if err != nil {
			return nil, err
		}
		rows = append(rows, found...)
	}
	return rows, nil
}

// reportKeyBatch bounds the row keys of one query: three parameters each.
const reportKeyBatch = 300

// reconcileReport decides the report's outcome from the rows as read.
func reconcileReport(cellID string, instances []*models.ReportedInstance, rows map[models.ActualLRPKey]*models.ActualLRP, now int64) models.BulkReconciliation {
	read := make([]*models.ActualLRP, 0, len(rows))
	for _, row := range rows {
		read = append(read, row)
	}
	return models.ReconcileReport(cellID, instances, read, now)
}

func bulkReportResult(rec models.BulkReconciliation) *db.BulkReportResult {
	return &db.BulkReportResult{Stop: rec.Stop, Assigned: rec.Assigned, OccupancyChanged: rec.OccupancyChanged}
}

func reportedKey(r *models.ReportedInstance) models.ActualLRPKey {
	return models.ActualLRPKey{ProcessGuid: r.ProcessGuid, Index: r.Index, Presence: r.Presence}
}

func keyOf(lrp *models.ActualLRP) models.ActualLRPKey {
	return models.ActualLRPKey{ProcessGuid: lrp.ProcessGuid, Index: lrp.Index, Presence: lrp.Presence}
}
