package convergence

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/corkboard/corkboard/models"
)

const (
	ordinary   = models.ActualLRP_ORDINARY
	suspect    = models.ActualLRP_SUSPECT
	evacuating = models.ActualLRP_EVACUATING
	unclaimed  = models.ActualLRP_UNCLAIMED
	claimed    = models.ActualLRP_CLAIMED
	running    = models.ActualLRP_RUNNING
	crashed    = models.ActualLRP_CRASHED
)

// reconcileLRP decides for one process guid: d is its DesiredLRP (nil when
// it is no longer desired) and rows are its rows in key order.
func (p *planner) reconcileLRP(d *DesiredSchedule, rows []row) {
	for i := range rows {
		p.countRow(&rows[i])
	}
	if len(p.rollouts) > 0 {
		guid := ""
		if d != nil {
			guid = d.ProcessGuid
		} else if len(rows) > 0 {
			guid = rows[0].ProcessGuid
		}
		if p.rollouts[guid] != nil {
			p.reconciled[guid] = true
		}
	}
	if d == nil {
		for i := len(rows) - 1; i >= 0; i-- {
			if !p.evacuatingOnLostCell(&rows[i]) {
				p.removeUnwanted(&rows[i], nil)
			}
		}
		if len(rows) > 0 {
			if record := p.rollouts[rows[0].ProcessGuid]; record != nil {
				p.cleanGoneLRP(record, p.definitions[record.ProcessGuid], rows)
			}
			p.reconcileOperations(rows[0].ProcessGuid, nil, nil)
		}
		return
	}

	all := rows
	rows, validation := withoutValidation(rows)
	rows, baseline := withoutBaseline(rows)
	var covered coveredIndices
	idleExtrasKept := int32(0)
	if d.Autoscaling.IsEnabled() {
		d = p.autoscale(d, rows)
		rows, covered = p.coverIndices(d, rows)
		idleExtrasKept = p.unservedIndices(d, rows, covered)
	}
	instances := max(d.Instances, 0)
	p.placer.beginLRP()
	p.movable = p.movable[:0]
	first := 0 // rows before first have a negative index
	for first < len(rows) && rows[first].Index < 0 {
		first++
	}
	var ro *rolloutLRP
	var slots []indexRows
	if record := p.rollouts[d.ProcessGuid]; needsRollout(d, record, rows) {
		ro = p.newRollout(d, record, instances)
		ro.covered = covered
		ro.budget = p.tallyBudget(d, rows[first:], instances, covered)
		ro.group = p.groupOf(d)
		slots = wantedSlots(rows[first:], instances)
		p.planRollout(ro, slots)
	}
	i := first
	for index := int32(0); index < instances; index++ {
		if covered[index] {
			continue // its rows are gone from rows: see coverIndices
		}
		var ord, sus, evac *row
		for ; i < len(rows) && rows[i].Index == index; i++ {
			r := &rows[i]
			switch r.Presence {
			case ordinary:
				ord = r
			case suspect:
				sus = r
			case evacuating:
				evac = r
			default:
				// RETIRING rows: planRollout kept or deleted them.
			}
		}
		var stands *row
		if ro != nil {
			slot := &slots[index]
			if ro.reverting {
				// Everything waits for the healthy definition to be
				// active: the next pass rolls back from there.
				p.keepAsIs(ord)
				continue
			}
			if ro.promoted[index] {
				p.placer.keep(slot.ord.cell)
				if evac != nil {
					p.reconcileEvacuating(evac, slot.ord)
				}
				continue
			}
			if slot.ret != nil && ro.stopping[index] {
				p.requestStop(slot.ret, "its replacement has been running and routable for min_ready")
			}
			if ord != nil && sus == nil && p.startReplacement(ro, ord, slot.ret) {
				if evac != nil {
					p.reconcileEvacuating(evac, nil)
				}
				continue
			}
		}
		schedule := d
		if ro != nil && ro.phase.createsStable(index) {
			// Outside a staged phase: the index keeps the healthy
			// definition (a missing instance is created on it).
			schedule = ro.phase.stable
		}
		stands = p.reconcileIndex(schedule, index, ord, sus)
		if evac != nil {
			p.reconcileEvacuating(evac, stands)
		} else if stands == ord && sus == nil && ord != nil && p.isMovable(ord) {
			p.movable = append(p.movable, movable{row: ord.ActualRow, cell: ord.cell})
		}
	}
	// What is left has an index of instances or more: extra, removed from
	// the highest index down; then the (invalid) negative indices.
	if idleExtrasKept > 0 {
		idleExtrasKept = min(idleExtrasKept, p.surgeLeft(d, ro, instances))
	}
	for j := len(rows) - 1; j >= i; j-- {
		r := &rows[j]
		if idleExtrasKept > 0 && r.Presence == ordinary && r.State == running && r.Routable && p.cells.isPresent(r.cell) {
			// Autoscaled: an idle extra serves until every index below
			// instances does (start before stop). It is on its way out, so
			// it takes no part in the spread: the index it waits for is
			// placed as if it were gone.
			idleExtrasKept--
			p.plan.Counts.Extra++
			continue
		}
		if !p.evacuatingOnLostCell(r) {
			p.removeUnwanted(r, d)
		}
	}
	for j := first - 1; j >= 0; j-- {
		if !p.evacuatingOnLostCell(&rows[j]) {
			p.removeUnwanted(&rows[j], d)
		}
	}
	p.reconcileValidation(d, validation)
	p.reconcileBaseline(d, baseline, p.baselineWanted(d, ro, instances, rows))
	p.considerMoves(d, ro, rows[first:], p.movable, instances, covered)
	p.placer.endLRP(d)
	if ro != nil {
		// Every row, validation instances too: cleanup keeps what any
		// row runs.
		p.finishRollout(ro, instances, all)
		if ro.underway() {
			p.plan.Underway = append(p.plan.Underway, d.ProcessGuid)
		}
	}
	p.reconcileOperations(d.ProcessGuid, d, ro)
}

// keepAsIs leaves the ORDINARY row r (if any) as it is for this pass, its
// place in the spread kept.
func (p *planner) keepAsIs(r *row) {
	if r != nil && p.cells.isPresent(r.cell) {
		p.placer.keep(r.cell)
	}
}

// newRollout resolves the LRP's strategy for its rolling update; a fast
// rollout of the active definition gets the room the cells have for the
// active definition's instances as the snapshot's rows leave it (what
// this pass places for other LRPs is not counted: an instance that does
// not fit after all is placed on a later pass).
func (p *planner) newRollout(d *DesiredSchedule, record *RolloutRow, instances int32) *rolloutLRP {
	ro := &rolloutLRP{d: d, record: record, defs: p.definitions[d.ProcessGuid], strategy: storedStrategy(d, instances)}
	if record != nil {
		ro.outcome.operationID = record.OperationID
		if record.DefinitionID == d.ActiveDefinitionID {
			ro.turn = p.turns[d.ProcessGuid]
		}
		if record.Fast && record.DefinitionID == d.ActiveDefinitionID {
			ro.strategy = ro.strategy.FastRollout(p.cells.room(d.PlacementTags, need{memory: d.MemoryMB, disk: d.DiskMB}))
		}
	}
	ro.phase = p.newStagedPhase(ro, instances)
	return ro
}

// storedStrategy resolves d's stored strategy at instances
// (models.StoredRolloutStrategy).
func storedStrategy(d *DesiredSchedule, instances int32) models.RolloutStrategy {
	return models.StoredRolloutStrategy(instances, d.UpdateStrategy)
}

// wantedSlots gathers the ORDINARY, SUSPECT and RETIRING rows of indices
// 0..instances-1 from rows in key order (none with a negative index).
func wantedSlots(rows []row, instances int32) []indexRows {
	slots := make([]indexRows, instances)
	for index := range slots {
		slots[index].index = int32(index)
	}
	for i := range rows {
		r := &rows[i]
		if r.Index >= instances {
			break
		}
		slot := &slots[r.Index]
		switch r.Presence {
		case ordinary:
			slot.ord = r
		case suspect:
			slot.sus = r
		case retiring:
			slot.ret = r
		case evacuating:
			slot.evac = r
		}
	}
	return slots
}

// removeUnwanted deletes an ORDINARY, SUSPECT, EVACUATING or RETIRING row
// that is not wanted (d is its DesiredLRP, nil when gone), when the row's
// domain is fresh. In a stale domain the board may not know every desired LRP, so it
// keeps the row as it is: no restart, no placement, no suspect.
func (p *planner) removeUnwanted(r *row, d *DesiredSchedule) {
	removable := r.Presence == ordinary || r.Presence == suspect || r.Presence == evacuating || r.Presence == retiring
	if r.Presence == ordinary {
		p.plan.Counts.Extra++
	}
	if !removable || !p.fresh[r.Domain] {
		if d != nil {
			p.placer.keep(r.cell)
		}
		return
	}
	switch {
	case d == nil:
		p.delete(r, "extra: its DesiredLRP is gone")
	case r.Index < 0:
		p.delete(r, fmt.Sprintf("extra: index %d is negative", r.Index))
	default:
		p.delete(r, fmt.Sprintf("extra: index %d is not below instances %d", r.Index, max(d.Instances, 0)))
	}
}

// reconcileIndex decides for one desired index, given its ORDINARY and
// SUSPECT rows (either may be nil). It returns the row that stands as the
// index's ORDINARY instance once the plan is applied, as the snapshot saw
// it: the promoted suspect, or ord unless it is marked suspect; nil when a
// new row is created.
func (p *planner) reconcileIndex(d *DesiredSchedule, index int32, ord, sus *row) *row {
	if sus != nil {
		switch {
		case ord != nil && ord.State == running:
			p.delete(sus, "its replacement is running")
			sus = nil
		case sus.State != running && sus.State != claimed:
			p.delete(sus, "suspect is "+sus.State.String()+", no longer serving")
			sus = nil
		case p.cells.isPresent(sus.cell):
			if ord != nil {
				p.delete(ord, "suspect on cell "+sus.CellID+" is back before this replacement runs")
			}
			p.promote(sus, "cell "+sus.CellID+" is present again")
			p.placer.keep(sus.cell)
			return sus
		default:
			// Still serving from a lost cell: keep it until its
			// replacement runs or the cell comes back.
		}
	}
	if ord == nil {
		p.plan.Counts.Missing++
		why := "missing"
		if sus != nil {
			why = "replaces suspect on cell " + sus.CellID
		}
		p.create(d, index, why)
		return nil
	}
	if p.reconcileOrdinary(d, ord) {
		return nil
	}
	return ord
}

// reconcileEvacuating decides for the EVACUATING row of a wanted index,
// given the row that stands as the index's ORDINARY instance after this
// pass (nil when there is none, see reconcileIndex). The row never
// stands for the index — reconcileIndex decides as if it were not there —
// and stays, still routable, while its replacement starts. It is deleted
// when its cell's presence expired, or when the replacement has been
// RUNNING for the evacuation grace: its rep is told to stop it once the
// replacement runs and should have removed it by then.
func (p *planner) reconcileEvacuating(r *row, ord *row) {
	if p.evacuatingOnLostCell(r) {
		return
	}
	if ord == nil || ord.State != running {
		return
	}
	grace := int64(p.cfg.EvacuationGrace)
	if ranFor := p.now - ord.Since; ranFor >= grace {
		p.delete(r, fmt.Sprintf("its replacement has run for %s, over the evacuation grace of %s; the rep should have removed it",
			time.Duration(ranFor).Round(time.Second), p.cfg.EvacuationGrace))
		return
	}
	p.wakeAt(ord.Since + grace)
}

// evacuatingOnLostCell deletes r and reports true when it is an EVACUATING
// row whose cell is not present: nobody is left to stop it or to report
// it, and the index's ORDINARY row is handled on its own.
func (p *planner) evacuatingOnLostCell(r *row) bool {
	if r.Presence != evacuating || p.cells.isPresent(r.cell) {
		return false
	}
	p.delete(r, "evacuating, but "+p.cellGone(r))
	return true
}

// reconcileOrdinary decides for the ORDINARY row of a wanted index and
// reports whether it marked the row suspect (a replacement takes its key).
func (p *planner) reconcileOrdinary(d *DesiredSchedule, r *row) (markedSuspect bool) {
	present := p.cells.isPresent(r.cell)
	switch r.State {
	case running:
		if present {
			p.placer.keep(r.cell)
			return false
		}
		p.markSuspect(r, p.cellGone(r))
		p.create(d, r.Index, "replaces suspect on cell "+r.CellID)
		return true
	case claimed:
		if present {
			p.placer.keep(r.cell)
			return false
		}
		p.unassign(r, "claimed, but "+p.cellGone(r))
		p.requestPlace(r, whyLostCell, true, noCell)
	case unclaimed:
		p.reconcileUnclaimed(r, present)
	case crashed:
		p.reconcileCrashed(r)
	default:
		p.placer.keep(r.cell)
	}
	return false
}

func (p *planner) reconcileUnclaimed(r *row, present bool) {
	switch {
	case r.CellID == "":
		p.requestPlace(r, whyUnplaced, false, noCell)
	case !present:
		p.unassign(r, "placed, but "+p.cellGone(r))
		p.requestPlace(r, whyLostCell, true, noCell)
	case p.cells.isDraining(r.cell):
		p.unassign(r, "placed, but cell "+r.CellID+" is draining")
		p.requestPlace(r, whyDraining, true, noCell)
	case p.isOverloaded(r.cell):
		p.unassign(r, "placed, but cell "+r.CellID+" is over capacity")
		p.requestPlace(r, whyOverloaded, true, r.cell)
	case p.now-r.Since >= int64(p.cfg.StaleUnclaimed):
		p.unassign(r, fmt.Sprintf("cell %s did not claim it within %s", r.CellID, p.cfg.StaleUnclaimed))
		p.requestPlace(r, whyStale, true, r.cell)
	default:
		p.placer.keep(r.cell)
		p.wakeAt(r.Since + int64(p.cfg.StaleUnclaimed))
	}
}

func (p *planner) reconcileCrashed(r *row) {
	delay, restarts := p.cfg.CrashPolicy.RestartDelay(r.CrashCount)
	if !restarts {
		p.plan.Counts.GaveUp++
		p.placer.keep(r.cell)
		return
	}
	if due := r.Since + int64(delay); p.now < due {
		p.placer.keep(r.cell)
		p.wakeAt(due)
		return
	}
	why := fmt.Sprintf("crash %d, restarts at once", r.CrashCount)
	if delay > 0 {
		why = fmt.Sprintf("crash %d, backoff of %s is over", r.CrashCount, delay)
	}
	p.restart(r, why)
	p.requestPlace(r, whyRestarted, true, noCell)
}

// cellGone says why the row's cell does not count as present.
func (p *planner) cellGone(r *row) string {
	switch {
	case r.CellID == "":
		return "it names no cell"
	case r.cell == noCell:
		return "cell " + r.CellID + " is not registered"
	}
	ago := time.Duration(p.now - p.cells.expiresAt[r.cell]).Round(time.Second)
	return fmt.Sprintf("presence of cell %s expired %s ago", r.CellID, ago)
}

func version(r *ActualRow) RowVersion {
	return RowVersion{Key: r.Key(), State: r.State, ModificationIndex: r.ModificationIndex}
}

// versionAfterWrite is the version a row has once one earlier write of the
// plan (Restart or Unassign, both leaving it UNCLAIMED) has been applied:
// every applied write bumps the modification index by exactly one.
func versionAfterWrite(r *ActualRow) RowVersion {
	return RowVersion{Key: r.Key(), State: unclaimed, ModificationIndex: r.ModificationIndex + 1}
}

func (p *planner) delete(r *row, why string) {
	p.leaves(r)
	p.plan.Writes.Delete = append(p.plan.Writes.Delete, version(r.ActualRow))
	p.plan.Reasons.Delete = append(p.plan.Reasons.Delete, why)
}

func (p *planner) promote(r *row, why string) {
	p.plan.Writes.Promote = append(p.plan.Writes.Promote, version(r.ActualRow))
	p.plan.Reasons.Promote = append(p.plan.Reasons.Promote, why)
}

func (p *planner) markSuspect(r *row, why string) {
	p.plan.Writes.MarkSuspect = append(p.plan.Writes.MarkSuspect, version(r.ActualRow))
	p.plan.Reasons.MarkSuspect = append(p.plan.Reasons.MarkSuspect, why)
}

func (p *planner) unassign(r *row, why string) {
	p.leaves(r)
	p.plan.Writes.Unassign = append(p.plan.Writes.Unassign, version(r.ActualRow))
	p.plan.Reasons.Unassign = append(p.plan.Reasons.Unassign, why)
}

func (p *planner) restart(r *row, why string) {
	p.plan.Writes.Restart = append(p.plan.Writes.Restart, version(r.ActualRow))
	p.plan.Reasons.Restart = append(p.plan.Reasons.Restart, why)
}

// create adds a new UNCLAIMED ORDINARY row on the active definition and
// queues it for placement; placement fills in its cell or error.
func (p *planner) create(d *DesiredSchedule, index int32, why string) {
	w := &p.plan.Writes
	w.Create = append(w.Create, NewActualLRP{
		ProcessGuid:  d.ProcessGuid,
		Index:        index,
		Domain:       d.Domain,
		DefinitionID: d.ActiveDefinitionID,
	})
	p.plan.Reasons.Create = append(p.plan.Reasons.Create, why)
	p.placer.add(request{
		create: int32(len(w.Create) - 1),
		need:   need{memory: d.MemoryMB, disk: d.DiskMB},
		avoid:  noCell,
		shun:   p.avoided[CrashPair{d.ProcessGuid, d.ActiveDefinitionID}],
		why:    whyNew,
	})
}

// requestPlace queues an existing row for placement with the resources of
// its own definition. chained: an earlier write of this plan makes it
// UNCLAIMED without a cell first.
func (p *planner) requestPlace(r *row, why placeWhy, chained bool, avoid int32) {
	p.placer.add(request{
		row:     r.ActualRow,
		create:  -1,
		need:    need{memory: r.MemoryMB, disk: r.DiskMB},
		avoid:   avoid,
		shun:    p.avoided[CrashPair{r.ProcessGuid, r.DefinitionID}],
		why:     why,
		chained: chained,
	})
}

// crashNote says how a placed request's crash memory (request.shun)
// weighed: the cells it avoided, or that it went to one of them because
// no other cell fit. "" when it shuns no cell.
func (p *planner) crashNote(r *request) string {
	if len(r.shun) == 0 {
		return ""
	}
	window := p.cfg.CrashMemory.Window
	if slices.Contains(r.shun, r.cell) {
		return fmt.Sprintf("; on cell %s though its definition crashed there within %s: no other cell fits", p.cells.ids[r.cell], window)
	}
	names := make([]string, len(r.shun))
	for i, cell := range r.shun {
		names[i] = p.cells.ids[cell]
	}
	return fmt.Sprintf("; avoids %s, where its definition crashed within %s", strings.Join(names, ", "), window)
}

// emitPlacements turns placement results into writes, in the order the
// requests were queued (process guid, then index).
func (p *planner) emitPlacements() {
	w := &p.plan.Writes
	reasons := &p.plan.Reasons
	for i := range p.placer.requests {
		r := &p.placer.requests[i]
		if r.cell == noCell {
			p.plan.Counts.Unplaced++
		}
		if r.create >= 0 {
			if r.cell != noCell {
				w.Create[r.create].CellID = p.cells.ids[r.cell]
				reasons.Create[r.create] += p.crashNote(r)
			} else {
				w.Create[r.create].PlacementError = r.failure
			}
			continue
		}
		v := version(r.row)
		if r.chained {
			v = versionAfterWrite(r.row)
		}
		if r.cell != noCell {
			w.Place = append(w.Place, Placement{Row: v, CellID: p.cells.ids[r.cell]})
			reasons.Place = append(reasons.Place, placeReasons[r.why]+p.crashNote(r))
			continue
		}
		if !r.chained && r.row.PlacementError == r.failure {
			continue // the row already says so
		}
		w.PlacementFailed = append(w.PlacementFailed, PlacementFailure{Row: v, Reason: r.failure})
		reasons.PlacementFailed = append(reasons.PlacementFailed, placeReasons[r.why])
	}
}
