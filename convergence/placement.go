package convergence

import (
	"slices"
)

// Placement happens in one batch after every LRP has been reconciled, so
// that each decision sees what every row of the snapshot already uses and
// what this pass placed before it. The rules are in doc.go; this file is
// the machinery that makes them cheap for 100,000 instances on 1,000 cells.
//
// Cells are kept in one heap per (zone, tag class), ordered by most free
// memory and then cell id. For one instance, the best cell in a zone is
// the first cell in those heaps that fits and does not run this LRP yet;
// only when there is none are the (few) cells that already run it
// compared. Capacity only shrinks during a pass, so a cell without a free
// slot leaves its heap for good, a zone without a fresh cell for an LRP
// stays so, and a (tags, resources) that fit nowhere fits nowhere for the
// rest of the pass.

// placeWhy says why an existing row is being placed; it picks the reason
// logged with the Place write.
type placeWhy uint8

const (
	whyNew placeWhy = iota
	whyUnplaced
	whyStale
	whyLostCell
	whyRestarted
	whyDraining
	whyRedefined
	whyOverloaded
)

var placeReasons = [...]string{
	whyNew:        "new instance",
	whyUnplaced:   "unclaimed without a cell",
	whyStale:      "placed again: the cell did not claim it in time",
	whyLostCell:   "placed again: its cell is not present",
	whyRestarted:  "restarted after a crash",
	whyDraining:   "placed again: its cell is draining",
	whyRedefined:  "moved to the active definition",
	whyOverloaded: "placed again: its cell is over capacity",
}

// request is one instance to place.
type request struct {
	// row is the existing row, nil for a new instance.
	row *ActualRow
	// create is the index of the new instance in Writes.Create, or -1.
	create int32
	lrp    int32
	need   need
	// avoid is a cell to use only when nothing else fits: the one that did
	// not claim this instance in time. noCell when none.
	avoid int32
	// shun are the cells where the instance's definition crashed within
	// the crash memory's window (CrashMemory), sorted: used, like avoid,
	// only when nothing else fits. Nil when none.
	shun []int32
	why  placeWhy
	// chained: an earlier write of this plan (Restart, Unassign) changes
	// the row first, so the Place must expect the version after it.
	chained bool

	cell    int32
	failure string
}

// lrpSpread is the placement state of one LRP that has instances to place
// or to move.
type lrpSpread struct {
	tags []string
	// stays[staysStart:staysEnd] are the present cells its kept rows use.
	staysStart, staysEnd int
	elig                 *eligibility
	// exhaustedFor is the need the exhausted flags of this LRP hold for.
	exhaustedFor need
	// movables[movablesStart:movablesEnd] are its instances that may move
	// (moves.go), at most moveBudget of them this pass; uneven: its zones
	// are more than one apart.
	movablesStart, movablesEnd int
	moveBudget                 int32
	uneven                     bool
}

// runsOn is one cell an LRP runs on, in a list per (LRP, zone).
type runsOn struct {
	cell, next int32
}

// eligibility is which cells an LRP's placement tags allow.
type eligibility struct {
	tags []string
	// classOK[c] reports whether tag class c has every tag.
	classOK []bool
	classes []int32
	// zones that have at least one present cell of an allowed class with
	// a free slot, in zone index order.
	zones []int32
}

type failureKey struct {
	elig *eligibility
	need need
}

type candidate struct {
	cell  int32
	count int32
}

var noCandidate = candidate{cell: noCell}

type placer struct {
	cells *cellTable

	heaps []cellHeap
	// heapOf and heapPos say where each cell sits: heap index (-1 when in
	// none) and position within it.
	heapOf  []int32
	heapPos []int32

	eligibleByTags map[string]*eligibility
	failures       map[failureKey]string

	requests []request
	lrps     []lrpSpread
	// Per (lrp, zone): instances of the LRP in the zone; whether the zone
	// has no cell left without the LRP that fits its need; the first of
	// the cells of the zone the LRP runs on (in runsOn); and, once needed,
	// those cells in a spreadHeap.
	zoneCounts []int32
	exhausted  []bool
	firstRuns  []int32
	runsOn     []runsOn
	spread     map[int]*spreadHeap
	// tallies counts the instances of an LRP on a cell, by tallyKey.
	tallies map[uint64]int32

	// stays are the present cells that rows kept by this pass use, LRP by
	// LRP; they seed each LRP's spread.
	stays        []int32
	staysStart   int
	lrpRequests0 int

	// movables are the instances of settled LRPs that may move, LRP by
	// LRP; moves are the ones chosen, placed after every request.
	movables      []movable
	movablesStart int
	pending       lrpSpread
	moves         []move

	setAside    []int32
	spreadAside []spreadEntry
	zoneOrder   []int32

	// shun is the shun list of the request or move being placed (nil
	// once a request falls back to any cell); crashed holds every (LRP,
	// definition)'s, for moves (compute.go sets it).
	shun    []int32
	crashed map[CrashPair][]int32
}

func newPlacer(cells *cellTable) *placer {
	return &placer{cells: cells}
}

// beginLRP starts collecting stays, requests and movables for one desired
// LRP.
func (pl *placer) beginLRP() {
	pl.staysStart = len(pl.stays)
	pl.lrpRequests0 = len(pl.requests)
	pl.movablesStart = len(pl.movables)
	pl.pending = lrpSpread{}
}

// keep notes that a row of the current LRP stays on its cell. Rows on a
// draining cell do not count towards the spread: they are about to move.
// Rows on a quarantined cell do: they stay where they run.
func (pl *placer) keep(cell int32) {
	if pl.cells.isPresent(cell) && !pl.cells.isDraining(cell) {
		pl.stays = append(pl.stays, cell)
	}
}

// add queues an instance of the current LRP for placement.
func (pl *placer) add(r request) {
	r.lrp = int32(len(pl.lrps))
	r.cell = noCell
	pl.requests = append(pl.requests, r)
}

// noteMovable records the current LRP's instances that may move, at most
// budget of them; uneven: its zones are more than one apart.
func (pl *placer) noteMovable(found []movable, uneven bool, budget int32) {
	lrp := int32(len(pl.lrps))
	for _, m := range found {
		m.lrp = lrp
		pl.movables = append(pl.movables, m)
	}
	pl.pending.uneven = uneven
	pl.pending.moveBudget = budget
}

// endLRP keeps what placement needs to know of the LRP, if it queued
// requests or may move instances.
func (pl *placer) endLRP(d *DesiredSchedule) {
	if len(pl.requests) == pl.lrpRequests0 && len(pl.movables) == pl.movablesStart {
		pl.stays = pl.stays[:pl.staysStart]
		return
	}
	spread := pl.pending
	spread.tags = d.PlacementTags
	spread.staysStart, spread.staysEnd = pl.staysStart, len(pl.stays)
	spread.movablesStart, spread.movablesEnd = pl.movablesStart, len(pl.movables)
	spread.exhaustedFor = need{memory: -1}
	pl.lrps = append(pl.lrps, spread)
}

// leave takes a chosen instance out of its LRP's spread: it is leaving.
func (pl *placer) leave(m movable) {
	spread := &pl.lrps[m.lrp]
	stays := pl.stays[spread.staysStart:spread.staysEnd]
	if i := slices.Index(stays, m.cell); i >= 0 {
		stays[i] = stays[len(stays)-1]
		spread.staysEnd--
	}
}

// placeAll places every request: one instance of every LRP, then the
// second of every LRP, and so on, so that when capacity runs short every
// LRP gets its first instances before any gets its last.
func (pl *placer) placeAll() {
	if len(pl.requests) == 0 && len(pl.moves) == 0 {
		return
	}
	pl.buildHeaps()
	slots := len(pl.lrps) * len(pl.cells.zones)
	pl.zoneCounts = make([]int32, slots)
	pl.exhausted = make([]bool, slots)
	pl.firstRuns = make([]int32, slots)
	for i := range pl.firstRuns {
		pl.firstRuns[i] = -1
	}
	pl.runsOn = make([]runsOn, 0, len(pl.stays)+len(pl.requests))
	pl.tallies = make(map[uint64]int32, len(pl.stays)+len(pl.requests))
	pl.spread = map[int]*spreadHeap{}
	pl.eligibleByTags = map[string]*eligibility{}
	pl.failures = map[failureKey]string{}
	for i := range pl.lrps {
		lrp := &pl.lrps[i]
		lrp.elig = pl.eligibilityFor(lrp.tags)
		for _, cell := range pl.stays[lrp.staysStart:lrp.staysEnd] {
			pl.count(int32(i), cell)
		}
	}
	for _, i := range pl.roundOrder() {
		pl.place(&pl.requests[i])
	}
	for i := range pl.moves {
		pl.placeMove(&pl.moves[i])
	}
}

// placeMove finds a cell for the replacement of a moving instance, with
// the instance's own resources. A move off an overloaded cell takes any
// other cell that fits; a rebalance only a cell in a zone that holds fewer
// of the LRP's instances than the zone it leaves (not counting it). Never
// a cell where the instance's definition crashed within the crash
// memory's window: the instance runs where it is, and a move is not worth
// a likely crash. Otherwise the instance stays.
func (pl *placer) placeMove(mv *move) {
	n := need{memory: mv.row.MemoryMB, disk: mv.row.DiskMB}
	pl.shun = pl.crashed[CrashPair{mv.row.ProcessGuid, mv.row.DefinitionID}]
	cell := pl.choose(mv.lrp, n, mv.movable.cell)
	pl.shun = nil
	if cell == noCell || cell == mv.movable.cell {
		return
	}
	if mv.why == moveToRebalance {
		zones := len(pl.cells.zones)
		counts := pl.zoneCounts[int(mv.lrp)*zones : int(mv.lrp+1)*zones]
		if counts[pl.cells.zone[cell]] >= counts[pl.cells.zone[mv.movable.cell]] {
			return
		}
	}
	pl.assign(mv.lrp, cell, n)
	mv.cell = cell
}

func (pl *placer) buildHeaps() {
	t := pl.cells
	classes := len(t.classes)
	pl.heaps = make([]cellHeap, len(t.zones)*classes)
	pl.heapOf = make([]int32, len(t.ids))
	pl.heapPos = make([]int32, len(t.ids))
	for cell := range t.ids {
		pl.heapOf[cell] = -1
		if !t.takesInstances(int32(cell)) || t.free[cell].slots < 1 || !t.mayStart(int32(cell)) {
			continue
		}
		h := t.zone[cell]*int32(classes) + t.class[cell]
		pl.heapOf[cell] = h
		pl.heapPos[cell] = int32(len(pl.heaps[h].cells))
		pl.heaps[h].cells = append(pl.heaps[h].cells, int32(cell))
	}
	for h := range pl.heaps {
		pl.heaps[h].init(pl)
	}
}

func (pl *placer) eligibilityFor(lrpTags []string) *eligibility {
	tags := normalizeTags(lrpTags)
	key := tagKey(tags)
	if e, ok := pl.eligibleByTags[key]; ok {
		return e
	}
	t := pl.cells
	e := &eligibility{tags: tags, classOK: make([]bool, len(t.classes))}
	for class, have := range t.classes {
		if includesAll(have, tags) {
			e.classOK[class] = true
			e.classes = append(e.classes, int32(class))
		}
	}
	for zone := range t.zones {
		for _, class := range e.classes {
			if len(pl.heap(int32(zone), class).cells) > 0 {
				e.zones = append(e.zones, int32(zone))
				break
			}
		}
	}
	pl.eligibleByTags[key] = e
	return e
}

func (pl *placer) heap(zone, class int32) *cellHeap {
	return &pl.heaps[zone*int32(len(pl.cells.classes))+class]
}

// roundOrder sorts request indices by their rank within their LRP, keeping
// LRP order within a rank. Requests were queued LRP by LRP.
func (pl *placer) roundOrder() []int32 {
	rank := make([]int32, len(pl.requests))
	var rounds []int32
	for i := range pl.requests {
		if i > 0 && pl.requests[i].lrp == pl.requests[i-1].lrp {
			rank[i] = rank[i-1] + 1
		}
		if int(rank[i]) == len(rounds) {
			rounds = append(rounds, 0)
		}
		rounds[rank[i]]++
	}
	start := int32(0)
	for r, n := range rounds {
		rounds[r] = start
		start += n
	}
	order := make([]int32, len(pl.requests))
	for i := range pl.requests {
		order[rounds[rank[i]]] = int32(i)
		rounds[rank[i]]++
	}
	return order
}

func (pl *placer) place(r *request) {
	lrp := &pl.lrps[r.lrp]
	failed := failureKey{elig: lrp.elig, need: r.need}
	if reason, ok := pl.failures[failed]; ok {
		r.failure = reason
		return
	}
	// First every cell but the avoided ones; when none fits, any cell:
	// neither a stale claim nor a crash leaves an instance unplaced.
	pl.shun = r.shun
	cell := pl.choose(r.lrp, r.need, r.avoid)
	pl.shun = nil
	if cell == noCell && (r.avoid != noCell || len(r.shun) > 0) {
		cell = pl.choose(r.lrp, r.need, noCell)
	}
	if cell == noCell {
		reason := explainNoFit(pl.cells, lrp.elig, r.need)
		pl.failures[failed] = reason
		r.failure = reason
		return
	}
	pl.assign(r.lrp, cell, r.need)
	r.cell = cell
}

// choose finds the best cell for one instance of lrp: the fitting cell
// that minimizes (instances of the LRP in the cell's zone, instances of
// the LRP on the cell, -free memory, cell id).
func (pl *placer) choose(lrp int32, n need, avoid int32) int32 {
	spread := &pl.lrps[lrp]
	zones := len(pl.cells.zones)
	counts := pl.zoneCounts[int(lrp)*zones : int(lrp+1)*zones]
	if spread.exhaustedFor != n {
		clear(pl.exhausted[int(lrp)*zones : int(lrp+1)*zones])
		spread.exhaustedFor = n
	}

	// Zones by how many instances of the LRP they hold, fewest first.
	order := append(pl.zoneOrder[:0], spread.elig.zones...)
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && counts[order[j]] < counts[order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	pl.zoneOrder = order

	for i := 0; i < len(order); {
		level := counts[order[i]]
		best := noCandidate
		for ; i < len(order) && counts[order[i]] == level; i++ {
			if c := pl.bestInZone(lrp, order[i], n, avoid); pl.better(c, best) {
				best = c
			}
		}
		if best.cell != noCell {
			return best.cell
		}
	}
	return noCell
}

func (pl *placer) better(c, than candidate) bool {
	switch {
	case c.cell == noCell:
		return false
	case than.cell == noCell:
		return true
	case c.count != than.count:
		return c.count < than.count
	}
	return pl.cells.hasMoreFree(c.cell, than.cell)
}

func (pl *placer) bestInZone(lrp, zone int32, n need, avoid int32) candidate {
	flag := int(lrp)*len(pl.cells.zones) + int(zone)
	if !pl.exhausted[flag] {
		if cell := pl.bestFreshCell(lrp, zone, n, avoid); cell != noCell {
			return candidate{cell: cell}
		}
		if !pl.avoidsIn(zone, avoid) {
			pl.exhausted[flag] = true
		}
	}
	return pl.bestRunningCell(lrp, zone, n, avoid)
}

// bestFreshCell is the cell with the most free memory in the zone that
// fits n, has an allowed tag class and does not run the LRP yet.
func (pl *placer) bestFreshCell(lrp, zone int32, n need, avoid int32) int32 {
	best := noCell
	for _, class := range pl.lrps[lrp].elig.classes {
		cell := pl.topFresh(pl.heap(zone, class), lrp, n, avoid)
		if cell != noCell && (best == noCell || pl.cells.hasMoreFree(cell, best)) {
			best = cell
		}
	}
	return best
}

func (pl *placer) topFresh(h *cellHeap, lrp int32, n need, avoid int32) int32 {
	t := pl.cells
	found := noCell
	aside := pl.setAside[:0]
	for len(h.cells) > 0 {
		cell := h.cells[0]
		f := &t.free[cell]
		if f.memory < int64(n.memory) {
			break // no cell further down has more memory
		}
		if f.slots < 1 || !t.mayStart(cell) {
			h.pop(pl) // full for the rest of the pass
			continue
		}
		if f.disk < int64(n.disk) || pl.avoided(cell, avoid) || pl.runs(lrp, cell) {
			aside = append(aside, h.pop(pl))
			continue
		}
		found = cell
		break
	}
	for _, cell := range aside {
		h.push(pl, cell)
	}
	pl.setAside = aside[:0]
	return found
}

// avoided reports whether cell is avoid or shunned by the request being
// placed.
func (pl *placer) avoided(cell, avoid int32) bool {
	return cell == avoid || (len(pl.shun) > 0 && slices.Contains(pl.shun, cell))
}

// avoidsIn reports whether a cell of zone is avoided: then a zone without
// a fresh cell for this request may still have one for the next.
func (pl *placer) avoidsIn(zone, avoid int32) bool {
	if avoid != noCell && pl.cells.zone[avoid] == zone {
		return true
	}
	for _, cell := range pl.shun {
		if pl.cells.zone[cell] == zone {
			return true
		}
	}
	return false
}

func (pl *placer) assign(lrp, cell int32, n need) {
	f := &pl.cells.free[cell]
	f.memory -= int64(n.memory)
	f.disk -= int64(n.disk)
	f.slots--
	pl.cells.started(cell)
	h := &pl.heaps[pl.heapOf[cell]]
	if f.slots < 1 || !pl.cells.mayStart(cell) {
		h.remove(pl, pl.heapPos[cell])
	} else {
		h.fix(pl, pl.heapPos[cell])
	}
	pl.count(lrp, cell)
}

func tallyKey(lrp, cell int32) uint64 {
	return uint64(lrp)<<32 | uint64(uint32(cell))
}

func (pl *placer) runs(lrp, cell int32) bool {
	_, ok := pl.tallies[tallyKey(lrp, cell)]
	return ok
}

// count adds one instance of lrp on cell to the spread.
func (pl *placer) count(lrp, cell int32) {
	key := tallyKey(lrp, cell)
	n := pl.tallies[key] + 1
	pl.tallies[key] = n
	slot := int(lrp)*len(pl.cells.zones) + int(pl.cells.zone[cell])
	pl.zoneCounts[slot]++
	if n > 1 {
		return
	}
	pl.runsOn = append(pl.runsOn, runsOn{cell: cell, next: pl.firstRuns[slot]})
	pl.firstRuns[slot] = int32(len(pl.runsOn) - 1)
	if h, ok := pl.spread[slot]; ok {
		h.push(pl.spreadEntry(lrp, cell))
	}
}
