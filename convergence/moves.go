package convergence

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// A move takes a running instance to another cell, start before stop, the
// way a rolling update replaces one: the instance becomes its index's
// RETIRING row, still serving, and a new ORDINARY instance of the same
// definition is created on the chosen cell; once that one is ready the
// rollout rules tell the old one to stop. There are two reasons to move:
//
//   - Its cell is over capacity by the board's own accounting (the cell
//     came back smaller, or an older board overcommitted it). The planner
//     moves just enough of the cell's instances to fit again.
//   - Its LRP's instances are spread across zones more than one apart
//     (after a drain and the cell's return, or a rollout that found one
//     zone full). The planner moves instances from the fullest zone to the
//     emptiest until they are at most one apart, as placement spreads a
//     fresh desire.
//
// Only a settled LRP moves: no rollout or move under way (no RETIRING row,
// no ORDINARY row on an older definition), and for a rebalance every
// wanted index running. Each pass moves at most max(max_surge, 1) of an
// LRP's instances, and only where placement finds a cell: the target must
// fit, and for a rebalance lie in a zone with fewer of the LRP's instances
// than the one left. Placement runs first, so moves never take room from a
// missing instance. A cell that nothing can leave (no other cell fits)
// keeps its instances; nothing is stopped to make room.

type moveWhy uint8

const (
	moveOffFullCell moveWhy = iota
	moveToRebalance
)

// movable is a running instance of a settled LRP that a move may take.
type movable struct {
	row  *ActualRow
	cell int32
	// lrp is its LRP's index in the placer.
	lrp int32
}

// move is a movable instance chosen to move, and the cell placement found
// for its replacement (noCell: none fits, so it stays).
type move struct {
	movable
	why    moveWhy
	detail string
	cell   int32
}

// isMovable reports whether the ORDINARY row r, which stands for its index
// with nothing else there, could move: RUNNING, routable, on a cell that
// takes instances.
func (p *planner) isMovable(r *row) bool {
	return r.State == running && r.Routable && r.cell != noCell && p.cells.takesInstances(r.cell)
}

// considerMoves registers the LRP's movable instances with the placer when
// the LRP is settled and either one of them sits on an overloaded cell or
// its zones are uneven. found lists the movable instances, index order.
func (p *planner) considerMoves(d *DesiredSchedule, ro *rolloutLRP, rows []row, found []movable, instances int32, covered coveredIndices) {
	if len(found) == 0 || (ro != nil && (ro.outdated > 0 || hasRetiring(rows))) {
		return
	}
	onFullCell := false
	if p.overloaded != nil {
		for _, m := range found {
			if p.overloaded[m.cell] {
				onFullCell = true
				break
			}
		}
	}
	uneven := instances >= 2 && int32(len(found)) == instances && p.zonesUneven(d.PlacementTags, found)
	if !onFullCell && !uneven {
		return
	}
	if GroupHandovers(p.tallyBudget(d, rows, instances, covered), p.groupOf(d)) == 0 {
		// The LRP's disruption budget, or its group's, is spent
		// (budget.go): a move keeps its index serving until the
		// replacement is ready, but none starts while indices are down or
		// leaving beyond the budget.
		return
	}
	p.placer.noteMovable(found, uneven, max(storedStrategy(d, instances).MaxSurge, 1))
}

func hasRetiring(rows []row) bool {
	for i := range rows {
		if rows[i].Presence == retiring {
			return true
		}
	}
	return false
}

// zonesUneven reports whether two zones that can take the LRP's instances
// (a present cell that is not draining and has its tags) hold numbers of
// them more than one apart. It ignores free capacity: placement decides
// whether a move fits.
func (p *planner) zonesUneven(tags []string, found []movable) bool {
	open := p.openZones(tags)
	counts := p.zoneScratch[:0]
	for range p.cells.zones {
		counts = append(counts, 0)
	}
	p.zoneScratch = counts
	for _, m := range found {
		counts[p.cells.zone[m.cell]]++
	}
	lo, hi := int32(-1), int32(-1)
	for zone, n := range counts {
		if !open[zone] {
			continue
		}
		if lo < 0 || n < lo {
			lo = n
		}
		if n > hi {
			hi = n
		}
	}
	return hi-lo >= 2
}

// openZones are, by zone index, the zones with a present cell that is not
// draining and has every tag of tags.
func (p *planner) openZones(tags []string) []bool {
	if len(tags) == 0 && p.openZonesUntagged != nil {
		return p.openZonesUntagged // most LRPs: no key to build
	}
	tags = normalizeTags(tags)
	key := tagKey(tags)
	if open, ok := p.openZonesByTags[key]; ok {
		return open
	}
	t := p.cells
	open := make([]bool, len(t.zones))
	for cell := range t.ids {
		if t.takesInstances(int32(cell)) && includesAll(t.classes[t.class[cell]], tags) {
			open[t.zone[cell]] = true
		}
	}
	if p.openZonesByTags == nil {
		p.openZonesByTags = map[string][]bool{}
	}
	p.openZonesByTags[key] = open
	if len(tags) == 0 {
		p.openZonesUntagged = open
	}
	return open
}

// findOverloaded notes the cells whose rows use more than their capacity
// in memory, disk or instance slots. Only a full snapshot can say which
// rows to move off a cell, so a partial one moves nothing.
func (p *planner) findOverloaded(s *Snapshot) {
	if s.Partial {
		return
	}
	for cell, f := range p.cells.free {
		if f.memory < 0 || f.disk < 0 || f.slots < 0 {
			if p.overloaded == nil {
				p.overloaded = make([]bool, len(p.cells.ids))
				p.freed = make([]capacity, len(p.cells.ids))
			}
			p.overloaded[cell] = true
		}
	}
}

// isOverloaded reports whether cell is over capacity.
func (p *planner) isOverloaded(cell int32) bool {
	return p.overloaded != nil && cell != noCell && p.overloaded[cell]
}

// leaves notes that r stops using its cell with this pass's writes
// (deleted, unassigned, moved onto another definition), which matters only
// for an overloaded cell: what leaves need not be moved.
func (p *planner) leaves(r *row) {
	if p.isOverloaded(r.cell) {
		f := &p.freed[r.cell]
		f.memory += int64(r.MemoryMB)
		f.disk += int64(r.DiskMB)
		f.slots++
	}
}

// decideMoves picks the instances to move, once every LRP is reconciled
// and before placement: first off overloaded cells, cell by cell, then to
// even out zones, LRP by LRP. A chosen instance no longer counts towards
// its LRP's spread (it is leaving), so its replacement is placed like a
// new instance would be.
func (p *planner) decideMoves() {
	pl := p.placer
	if len(pl.movables) == 0 {
		return
	}
	chosen := make(map[*ActualRow]bool)
	budget := make([]int32, len(pl.lrps))
	for i := range pl.lrps {
		budget[i] = pl.lrps[i].moveBudget
	}
	take := func(m movable, why moveWhy, detail string) {
		chosen[m.row] = true
		budget[m.lrp]--
		pl.moves = append(pl.moves, move{movable: m, why: why, detail: detail, cell: noCell})
		pl.leave(m)
	}

	for cell, overloaded := range p.overloaded {
		if !overloaded {
			continue
		}
		excess := p.excess(int32(cell))
		if excess.memory <= 0 && excess.disk <= 0 && excess.slots <= 0 {
			continue
		}
		detail := p.describeExcess(int32(cell), excess)
		var candidates []movable
		for _, m := range pl.movables {
			if m.cell == int32(cell) {
				candidates = append(candidates, m)
			}
		}
		slices.SortFunc(candidates, compareEvictions)
		for _, m := range candidates {
			if excess.memory <= 0 && excess.disk <= 0 && excess.slots <= 0 {
				break
			}
			if budget[m.lrp] < 1 {
				continue
			}
			take(m, moveOffFullCell, detail)
			excess.memory -= int64(m.row.MemoryMB)
			excess.disk -= int64(m.row.DiskMB)
			excess.slots--
		}
	}

	zones := len(p.cells.zones)
	for lrp := range pl.lrps {
		spread := &pl.lrps[lrp]
		if !spread.uneven {
			continue
		}
		open := p.openZones(spread.tags)
		counts := make([]int32, zones)
		for _, cell := range pl.stays[spread.staysStart:spread.staysEnd] {
			counts[p.cells.zone[cell]]++
		}
		mine := pl.movables[spread.movablesStart:spread.movablesEnd]
		for budget[lrp] > 0 {
			from, to := int32(-1), int32(-1)
			for zone := range zones {
				z := int32(zone)
				if open[zone] && (to < 0 || counts[z] < counts[to]) {
					to = z
				}
				if (from < 0 || counts[z] > counts[from]) && hasMovableIn(p.cells, mine, chosen, z) {
					from = z
				}
			}
			if from < 0 || to < 0 || counts[from]-counts[to] < 2 {
				break
			}
			victim := pickRebalanceVictim(p.cells, mine, chosen, from)
			take(victim, moveToRebalance, describeZones(p.cells, counts, open))
			counts[from]--
			counts[to]++
		}
	}
}

// excess is how far the cell's rows that stay past this pass go over its
// capacity, per resource; zero or less where they fit.
func (p *planner) excess(cell int32) capacity {
	f, freed := p.cells.free[cell], p.freed[cell]
	return capacity{memory: -(f.memory + freed.memory), disk: -(f.disk + freed.disk), slots: -(f.slots + freed.slots)}
}

// describeExcess says what the cell has too much of, e.g. "cell-a is over
// capacity: 3 instances in 2 slots".
func (p *planner) describeExcess(cell int32, excess capacity) string {
	c := p.cells.capacity[cell]
	var over []string
	if excess.slots > 0 {
		over = append(over, fmt.Sprintf("%d instances in %d slots", c.slots+excess.slots, c.slots))
	}
	if excess.memory > 0 {
		over = append(over, fmt.Sprintf("%d MB of %d MB memory", c.memory+excess.memory, c.memory))
	}
	if excess.disk > 0 {
		over = append(over, fmt.Sprintf("%d MB of %d MB disk", c.disk+excess.disk, c.disk))
	}
	return fmt.Sprintf("cell %s is over capacity: %s", p.cells.ids[cell], strings.Join(over, ", "))
}

// compareEvictions orders the instances on an overloaded cell for moving:
// idle before occupied, then the highest index, then process guid.
func compareEvictions(a, b movable) int {
	return cmp.Or(
		compareBools(a.row.Occupied, b.row.Occupied),
		cmp.Compare(b.row.Index, a.row.Index),
		strings.Compare(a.row.ProcessGuid, b.row.ProcessGuid),
	)
}

// compareBools orders false before true.
func compareBools(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

func hasMovableIn(t *cellTable, mine []movable, chosen map[*ActualRow]bool, zone int32) bool {
	for _, m := range mine {
		if !chosen[m.row] && t.zone[m.cell] == zone {
			return true
		}
	}
	return false
}

// pickRebalanceVictim is the instance to move out of zone: idle before
// occupied, then from the cell holding most of the LRP's instances, then
// the highest index.
func pickRebalanceVictim(t *cellTable, mine []movable, chosen map[*ActualRow]bool, zone int32) movable {
	onCell := map[int32]int{}
	for _, m := range mine {
		if !chosen[m.row] {
			onCell[m.cell]++
		}
	}
	var best movable
	found := false
	for _, m := range mine {
		if chosen[m.row] || t.zone[m.cell] != zone {
			continue
		}
		if !found || cmp.Or(
			compareBools(m.row.Occupied, best.row.Occupied),
			cmp.Compare(onCell[best.cell], onCell[m.cell]),
			cmp.Compare(best.row.Index, m.row.Index),
		) < 0 {
			best, found = m, true
		}
	}
	return best
}

// describeZones lists the LRP's instances per open zone, e.g. "zones z1
// and z2 hold 5 and 1 instances".
func describeZones(t *cellTable, counts []int32, open []bool) string {
	var names, numbers []string
	for zone, n := range counts {
		if open[zone] || n > 0 {
			names = append(names, t.zones[zone])
			numbers = append(numbers, fmt.Sprint(n))
		}
	}
	return fmt.Sprintf("zones %s hold %s instances", joinWithAnd(names), joinWithAnd(numbers))
}

// emitMoves turns the moves placement found a cell for into a Retire of
// the instance, kept serving, and a Create of its replacement on that
// cell.
func (p *planner) emitMoves() {
	w := &p.plan.Writes
	for _, mv := range p.placer.moves {
		if mv.cell == noCell {
			continue
		}
		r := mv.row
		target := p.cells.ids[mv.cell]
		why := mv.detail
		if mv.why == moveToRebalance {
			why = "rebalancing: " + why
		}
		w.Retire = append(w.Retire, Retirement{Row: version(r)})
		p.plan.Reasons.Retire = append(p.plan.Reasons.Retire,
			fmt.Sprintf("%s; moving to cell %s, kept serving until its replacement is ready", why, target))
		w.Create = append(w.Create, NewActualLRP{
			ProcessGuid: r.ProcessGuid, Index: r.Index, Domain: r.Domain, DefinitionID: r.DefinitionID, CellID: target,
		})
		p.plan.Reasons.Create = append(p.plan.Reasons.Create,
			fmt.Sprintf("replaces an instance moving off cell %s: %s", r.CellID, why))
		p.plan.Underway = append(p.plan.Underway, r.ProcessGuid)
	}
	// Reconciled LRPs came in guid order; moves add theirs after.
	slices.Sort(p.plan.Underway)
	p.plan.Underway = slices.Compact(p.plan.Underway)
}
