package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// BulkReport reconciles what a cell says it runs with the board's rows.
// Each reported instance is matched to its row by key:
//
//   - the row is the reporter's (its instance on this cell, CLAIMED or
//     RUNNING, on the reported definition): it is brought in line with the
//     report — state, net info, routable; a CLAIMED instance is never
//     routable — and written only if that changes it;
//   - the row is UNCLAIMED, placed on this cell, on the reported
//     definition: the reporter runs it already, so it is adopted as if
//     claimed (or started) by the reported instance;
//   - the reported ORDINARY instance is the cell's SUSPECT row of that
//     index (the cell was lost and is back): it is matched to that row,
//     which convergence promotes back or removes once its replacement
//     runs; until then the cell keeps running it;
//   - a reported EVACUATING instance (its cell drains) matches its
//     EVACUATING row as above, but only while the ORDINARY row of its index
//     exists and is not RUNNING: once the replacement runs (on any cell),
//     or the ORDINARY row is gone, it comes back in Stop, which is how the
//     rep learns it may stop it;
//   - a reported ORDINARY instance that is the cell's RETIRING row of its
//     index (a rolling update is replacing it) matches that row; a
//     reported RETIRING instance matches its RETIRING row. Either comes
//     back in Stop once the row has stop_requested: its replacement is
//     ready, and the rep drains it;
//   - a reported RETIRING instance that is the cell's ORDINARY row of its
//     index (its definition is active again and convergence promoted it
//     back) matches that row, and keeps running;
//   - otherwise — no row, a row of another instance or cell, a CRASHED
//     row, another definition — the instance comes back in Stop.
//
// A matched row takes the report's state, net info, routable and, while
// RUNNING, occupied.
//
// Assigned lists the cell's UNCLAIMED rows (not adopted), in key order.
// A row of this cell that the report does not mention is left alone: the
// report may predate a claim the rep made since, and the rep crashes or
// removes an instance that ends.
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
	if len(rec.writes) == 0 {
		return rec.result, nil
	}
	// The first attempt writes what was just read; one that lost a race
	// reads again, this time locking the rows, so that concurrent reports
	// of one cell queue for them instead of losing race after race until
	// their attempts run out.
	next := rec
	err = s.transactPublishing(ctx, "bulk report", func(tx *sql.Tx) ([]models.Event, error) {
		rec, next = next, nil
		if rec == nil {
			rows, err := s.reportRows(ctx, tx, cellID, instances, s.dialect.lockForUpdate())
			if err != nil {
				return nil, err
			}
			rec = reconcileReport(cellID, instances, rows, s.now().UnixNano())
		}
		// An instance that starts by its report (its start call was lost)
		// takes its definition's routes, as a start does.
		if err := s.fillRoutePorts(ctx, tx, rec.writes); err != nil {
			return nil, err
		}
		if err := s.writeActualLRPs(ctx, tx, rec.writes); err != nil {
			return nil, err
		}
		events := make([]models.Event, len(rec.writes))
		for i, w := range rec.writes {
			events[i] = models.ActualLRPChanged(w.before, w.after)
		}
		return events, nil
	})
	if err != nil {
		return nil, err
	}
	return rec.result, nil
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

type reconciliation struct {
	result *db.BulkReportResult
	writes []rowWrite
}

// reconcileReport decides the report's outcome from the rows as read.
func reconcileReport(cellID string, instances []*models.ReportedInstance, rows map[models.ActualLRPKey]*models.ActualLRP, now int64) *reconciliation {
	rec := &reconciliation{result: &db.BulkReportResult{}}
	adopted := map[models.ActualLRPKey]bool{}
	for _, r := range instances {
		key := reportedKey(r)
		row := rows[key]
		if !reportMatches(row, r, cellID) {
			row = heldUnderAnotherPresence(rows, r, cellID)
		}
		if row != nil && r.Presence == models.ActualLRP_EVACUATING && !replacementPending(rows, key) {
			row = nil
		}
		if row != nil && row.Presence == models.ActualLRP_RETIRING && row.StopRequested {
			// Its replacement is ready: this is how the rep learns it may
			// drain it. The answer names the row's presence, so a rep
			// that still holds the instance ORDINARY drains it once it
			// has seen the RETIRING row (its poll does), as RETIRING.
			stop := proto.Clone(r).(*models.ReportedInstance)
			stop.Presence = models.ActualLRP_RETIRING
			rec.result.Stop = append(rec.result.Stop, stop)
			continue
		}
		if row == nil {
			rec.result.Stop = append(rec.result.Stop, r)
			continue
		}
		if row.State == models.ActualLRP_UNCLAIMED {
			adopted[key] = true
		}
		if after := reportedVersion(row, r, now); after != nil {
			rec.writes = append(rec.writes, rowWrite{before: row, after: after})
			if after.Occupied != row.Occupied {
				rec.result.OccupancyChanged = append(rec.result.OccupancyChanged, row.ProcessGuid)
			}
		}
	}
	slices.Sort(rec.result.OccupancyChanged)
	rec.result.OccupancyChanged = slices.Compact(rec.result.OccupancyChanged)
	var assigned []*models.ActualLRP
	for key, row := range rows {
		if row.CellId == cellID && row.State == models.ActualLRP_UNCLAIMED && !adopted[key] {
			assigned = append(assigned, row)
		}
	}
	sortActualLRPs(assigned)
	rec.result.Assigned = assigned
	// Key order, so that writers of many rows lock them in one order.
	slices.SortFunc(rec.writes, func(a, b rowWrite) int { return compareActualLRPs(a.before, b.before) })
	return rec
}

// reportMatches reports whether the board's row is the reported instance,
// or an UNCLAIMED row on the cell that the reported instance may take.
func reportMatches(row *models.ActualLRP, r *models.ReportedInstance, cellID string) bool {
	if row == nil || row.DefinitionId != r.DefinitionId {
		return false
	}
	if models.CheckTransition(row, r.State, r.InstanceGuid, cellID) != nil {
		return false
	}
	switch row.State {
	case models.ActualLRP_UNCLAIMED:
		return row.CellId == cellID
	case models.ActualLRP_CLAIMED, models.ActualLRP_RUNNING:
		return row.BelongsTo(r.InstanceGuid, cellID)
	}
	return false
}

// heldUnderAnotherPresence is the cell's row of r's index that the
// reported instance r is under a presence the rep has not seen yet, or
// nil:
//
//   - reported ORDINARY, held SUSPECT: the cell's presence lapsed and it is
//     back (reportRows read its SUSPECT rows with the rest of the cell's
//     rows);
//   - reported ORDINARY, held RETIRING: a rolling update or a move is
//     replacing it; it keeps running (and serving) until the board asks
//     it to stop;
//   - reported RETIRING, held ORDINARY: its definition is active again and
//     convergence promoted it back.
func heldUnderAnotherPresence(rows map[models.ActualLRPKey]*models.ActualLRP, r *models.ReportedInstance, cellID string) *models.ActualLRP {
	var presences []models.ActualLRP_Presence
	switch r.Presence {
	case models.ActualLRP_ORDINARY:
		presences = []models.ActualLRP_Presence{models.ActualLRP_SUSPECT, models.ActualLRP_RETIRING}
	case models.ActualLRP_RETIRING:
		presences = []models.ActualLRP_Presence{models.ActualLRP_ORDINARY}
	}
	for _, presence := range presences {
		key := reportedKey(r)
		key.Presence = presence
		row := rows[key]
		if row != nil && row.BelongsTo(r.InstanceGuid, cellID) && reportMatches(row, r, cellID) {
			return row
		}
	}
	return nil
}

// replacementPending reports whether the index of the EVACUATING row key
// still waits for its replacement: its ORDINARY row exists and is not
// RUNNING. The evacuating instance keeps running until then.
func replacementPending(rows map[models.ActualLRPKey]*models.ActualLRP, key models.ActualLRPKey) bool {
	key.Presence = models.ActualLRP_ORDINARY
	ordinary := rows[key]
	return ordinary != nil && ordinary.State != models.ActualLRP_RUNNING
}

// reportedVersion is the row brought in line with the report, or nil when
// it is in line already.
func reportedVersion(row *models.ActualLRP, r *models.ReportedInstance, now int64) *models.ActualLRP {
	routable := r.Routable && r.State == models.ActualLRP_RUNNING && !models.IsValidationIndex(row.Index)
	occupied := r.Occupied && r.State == models.ActualLRP_RUNNING
	if row.State == r.State && row.InstanceGuid == r.InstanceGuid &&
		sameNetInfo(row.NetInfo, r.NetInfo) && row.Routable == routable && row.Occupied == occupied {
		return nil
	}
	after := nextVersion(row)
	if row.State != r.State {
		after.Since = now
	}
	after.State = r.State
	after.InstanceGuid = r.InstanceGuid
	after.NetInfo = cloneNetInfo(r.NetInfo)
	after.Routable = routable
	after.Occupied = occupied
	after.PlacementError = ""
	return after
}

func reportedKey(r *models.ReportedInstance) models.ActualLRPKey {
	return models.ActualLRPKey{ProcessGuid: r.ProcessGuid, Index: r.Index, Presence: r.Presence}
}

func keyOf(lrp *models.ActualLRP) models.ActualLRPKey {
	return models.ActualLRPKey{ProcessGuid: lrp.ProcessGuid, Index: lrp.Index, Presence: lrp.Presence}
}
