package models

import (
	"cmp"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
)

// RowChange is one row's next version over the version it was read at.
type RowChange struct {
	Before, After *ActualLRP
}

// BulkReconciliation is what a cell's bulk report comes to.
type BulkReconciliation struct {
	// Writes bring matched rows in line with the report, in key order (so
	// that writers of many rows lock them in one order). Each announces
	// actual_lrp_changed.
	Writes []RowChange
	// Stop lists the reported instances the cell is to stop.
	Stop []*ReportedInstance
	// Assigned lists the cell's UNCLAIMED rows it has not adopted, in key
	// order.
	Assigned []*ActualLRP
	// OccupancyChanged lists, sorted and once each, the process guids of
	// the rows whose occupied flag a write changes.
	OccupancyChanged []string
}

// ReconcileReport matches what cell cellID says it runs (reported) with
// the board's rows as read (rows: the cell's own, and those of the
// reported keys, and, for a reported EVACUATING instance, the ORDINARY row
// of its index, wherever they are placed) at now. Each reported instance
// is matched to its row by key:
//
//  1. The row is the reporter's (its instance on this cell, CLAIMED or
//     RUNNING, on the reported definition): it is brought in line with the
//     report — state, net info, routable; a CLAIMED instance is never
//     routable, nor a validation instance — and written only if that
//     changes it.
//  2. The row is UNCLAIMED, placed on this cell, on the reported
//     definition: the reporter runs it already, so it is adopted as if
//     claimed (or started) by the reported instance.
//  3. The reported ORDINARY instance is the cell's SUSPECT row of that
//     index (the cell was lost and is back): it is matched to that row,
//     which convergence promotes back or removes once its replacement
//     runs; until then the cell keeps running it.
//  4. A reported EVACUATING instance (its cell drains) matches its
//     EVACUATING row as above, but only while the ORDINARY row of its
//     index exists and is not RUNNING: once the replacement runs (on any
//     cell), or the ORDINARY row is gone, it comes back in Stop, which is
//     how the rep learns it may stop it.
//  5. A reported ORDINARY instance that is the cell's RETIRING row of its
//     index (a rolling update is replacing it) matches that row; a
//     reported RETIRING instance matches its RETIRING row. Either comes
//     back in Stop, as RETIRING, once the row has stop_requested: its
//     replacement is ready, and the rep drains it.
//  6. A reported RETIRING instance that is the cell's ORDINARY row of its
//     index (its definition is active again and convergence promoted it
//     back) matches that row, and keeps running.
//  7. Otherwise — no row, a row of another instance or cell, a CRASHED
//     row, another definition — the instance comes back in Stop.
//
// A matched row takes the report's state, net info, routable and, while
// RUNNING, occupied; since moves to now when its state changes. A row of
// this cell that the report does not mention is left alone: the report
// may predate a claim the rep made since, and the rep crashes or removes
// an instance that ends.
//
// Worked example, cell-1 reports web/0 ORDINARY ig-a RUNNING on v1 and
// web/1 ORDINARY ig-b RUNNING on v1; the board has web/0 ORDINARY ig-a
// CLAIMED on cell-1, web/1 ORDINARY CRASHED, and web/2 ORDINARY UNCLAIMED
// placed on cell-1:
//
//  1. web/0 is the reporter's (rule 1): written RUNNING with the report's
//     net info and routable, since now.
//  2. web/1's row is CRASHED (rule 7): ig-b comes back in Stop.
//  3. web/2 is not reported: left alone, and Assigned (the rep claims it).
func ReconcileReport(cellID string, reported []*ReportedInstance, rows []*ActualLRP, now int64) BulkReconciliation {
	byKey := make(map[rowKey]*ActualLRP, len(rows))
	for _, row := range rows {
		byKey[keyOfRow(row)] = row
	}
	var rec BulkReconciliation
	adopted := map[rowKey]bool{}
	for _, r := range reported {
		key := keyOfReported(r)
		row := byKey[key]
		if !reportMatches(row, r, cellID) {
			row = storedUnderAnotherPresence(byKey, r, cellID)
		}
		if row != nil && r.Presence == ActualLRP_EVACUATING && !replacementPending(byKey, key) {
			row = nil
		}
		if row != nil && row.Presence == ActualLRP_RETIRING && row.StopRequested {
			// Its replacement is ready: this is how the rep learns it may
			// drain it. The answer names the row's presence, so a rep
			// that still holds the instance ORDINARY drains it once it
			// has seen the RETIRING row (its poll does), as RETIRING.
			stop := proto.Clone(r).(*ReportedInstance)
			stop.Presence = ActualLRP_RETIRING
			rec.Stop = append(rec.Stop, stop)
			continue
		}
		if row == nil {
			rec.Stop = append(rec.Stop, r)
			continue
		}
		if row.State == ActualLRP_UNCLAIMED {
			adopted[key] = true
		}
		if after := reportedVersion(row, r, now); after != nil {
			rec.Writes = append(rec.Writes, RowChange{Before: row, After: after})
			if after.Occupied != row.Occupied {
				rec.OccupancyChanged = append(rec.OccupancyChanged, row.ProcessGuid)
			}
		}
	}
	slices.Sort(rec.OccupancyChanged)
	rec.OccupancyChanged = slices.Compact(rec.OccupancyChanged)
	for key, row := range byKey {
		if row.CellId == cellID && row.State == ActualLRP_UNCLAIMED && !adopted[key] {
			rec.Assigned = append(rec.Assigned, row)
		}
	}
	slices.SortFunc(rec.Assigned, CompareActualLRPKeys)
	slices.SortFunc(rec.Writes, func(a, b RowChange) int { return CompareActualLRPKeys(a.Before, b.Before) })
	return rec
}

// CompareActualLRPKeys orders rows by key: process guid, index, presence.
func CompareActualLRPKeys(a, b *ActualLRP) int {
	return cmp.Or(
		strings.Compare(a.ProcessGuid, b.ProcessGuid),
		cmp.Compare(a.Index, b.Index),
		cmp.Compare(a.Presence, b.Presence),
	)
}

type rowKey struct {
	processGuid string
	index       int32
	presence    ActualLRP_Presence
}

func keyOfRow(lrp *ActualLRP) rowKey {
	return rowKey{lrp.ProcessGuid, lrp.Index, lrp.Presence}
}

func keyOfReported(r *ReportedInstance) rowKey {
	return rowKey{r.ProcessGuid, r.Index, r.Presence}
}

// reportMatches reports whether the board's row is the reported instance,
// or an UNCLAIMED row on the cell that the reported instance may take.
func reportMatches(row *ActualLRP, r *ReportedInstance, cellID string) bool {
	if row == nil || row.DefinitionId != r.DefinitionId {
		return false
	}
	if CheckTransition(row, r.State, r.InstanceGuid, cellID) != nil {
		return false
	}
	switch row.State {
	case ActualLRP_UNCLAIMED:
		return row.CellId == cellID
	case ActualLRP_CLAIMED, ActualLRP_RUNNING:
		return row.BelongsTo(r.InstanceGuid, cellID)
	}
	return false
}

// storedUnderAnotherPresence is the cell's row of r's index that the
// reported instance r is under a presence the rep has not seen yet, or
// nil:
//
//   - reported ORDINARY, stored SUSPECT: the cell's presence lapsed and it is
//     back;
//   - reported ORDINARY, stored RETIRING: a rolling update or a move is
//     replacing it; it keeps running (and serving) until the board asks
//     it to stop;
//   - reported RETIRING, stored ORDINARY: its definition is active again and
//     convergence promoted it back.
func storedUnderAnotherPresence(rows map[rowKey]*ActualLRP, r *ReportedInstance, cellID string) *ActualLRP {
	var presences []ActualLRP_Presence
	switch r.Presence {
	case ActualLRP_ORDINARY:
		presences = []ActualLRP_Presence{ActualLRP_SUSPECT, ActualLRP_RETIRING}
	case ActualLRP_RETIRING:
		presences = []ActualLRP_Presence{ActualLRP_ORDINARY}
	}
	for _, presence := range presences {
		key := keyOfReported(r)
		key.presence = presence
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
func replacementPending(rows map[rowKey]*ActualLRP, key rowKey) bool {
	key.presence = ActualLRP_ORDINARY
	ordinary := rows[key]
	return ordinary != nil && ordinary.State != ActualLRP_RUNNING
}

// reportedVersion is the row brought in line with the report, or nil when
// it is in line already.
func reportedVersion(row *ActualLRP, r *ReportedInstance, now int64) *ActualLRP {
	routable := RoutableWhenStarted(row.Index, r.Routable && r.State == ActualLRP_RUNNING)
	occupied := r.Occupied && r.State == ActualLRP_RUNNING
	if row.State == r.State && row.InstanceGuid == r.InstanceGuid &&
		SameNetInfo(row.NetInfo, r.NetInfo) && row.Routable == routable && row.Occupied == occupied {
		return nil
	}
	after := NextVersion(row)
	if row.State != r.State {
		after.Since = now
	}
	after.State = r.State
	after.InstanceGuid = r.InstanceGuid
	after.NetInfo = CloneNetInfo(r.NetInfo)
	after.Routable = routable
	after.Occupied = occupied
	after.PlacementError = ""
	return after
}
