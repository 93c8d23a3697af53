package convergence

// spreadHeap holds the cells of one zone that already run one LRP, the
// best to add another instance to on top: fewest instances of the LRP,
// then most free memory, then lowest cell id. It is only built for a zone
// where no cell without the LRP fits any more, which happens for LRPs with
// more instances than the zone has cells.
//
// Other LRPs' placements change a cell's free memory without telling this
// heap, so entries hold the key they were pushed with and are checked
// when they reach the top. During a pass keys only get worse (counts grow,
// memory shrinks), so an entry whose key is still current when on top is
// truly the best, and a stale one only needs sifting down.
type spreadHeap struct {
	entries []spreadEntry
}

type spreadEntry struct {
	cell   int32
	count  int32
	memory int64
}

func (pl *placer) spreadEntry(lrp, cell int32) spreadEntry {
	return spreadEntry{cell: cell, count: pl.tallies[tallyKey(lrp, cell)], memory: pl.cells.free[cell].memory}
}

// bestRunningCell is the best cell of the zone that runs the LRP already
// and fits n.
func (pl *placer) bestRunningCell(lrp, zone int32, n need, avoid int32) candidate {
	slot := int(lrp)*len(pl.cells.zones) + int(zone)
	h, ok := pl.spread[slot]
	if !ok {
		h = &spreadHeap{}
		for i := pl.firstRuns[slot]; i >= 0; i = pl.runsOn[i].next {
			h.entries = append(h.entries, pl.spreadEntry(lrp, pl.runsOn[i].cell))
		}
		h.init()
		pl.spread[slot] = h
	}

	t := pl.cells
	classOK := pl.lrps[lrp].elig.classOK
	found := noCandidate
	aside := pl.spreadAside[:0]
	for len(h.entries) > 0 {
		top := h.entries[0]
		if current := pl.spreadEntry(lrp, top.cell); current != top {
			h.entries[0] = current
			h.down(0)
			continue
		}
		switch {
		case t.free[top.cell].slots < 1 || !t.mayStart(top.cell) || !classOK[t.class[top.cell]] || !t.takesInstances(top.cell):
			h.pop() // never fits again in this pass
		case pl.avoided(top.cell, avoid) || !t.fits(top.cell, n):
			aside = append(aside, h.pop()) // may fit another instance
		default:
			found = candidate{cell: top.cell, count: top.count}
		}
		if found.cell != noCell {
			break
		}
	}
	for _, e := range aside {
		h.push(e)
	}
	pl.spreadAside = aside[:0]
	return found
}

func (a spreadEntry) isBetter(b spreadEntry) bool {
	switch {
	case a.count != b.count:
		return a.count < b.count
	case a.memory != b.memory:
		return a.memory > b.memory
	}
	return a.cell < b.cell
}

func (h *spreadHeap) init() {
	for i := len(h.entries)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *spreadHeap) push(e spreadEntry) {
	h.entries = append(h.entries, e)
	i := len(h.entries) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !h.entries[i].isBetter(h.entries[parent]) {
			return
		}
		h.entries[i], h.entries[parent] = h.entries[parent], h.entries[i]
		i = parent
	}
}

func (h *spreadHeap) pop() spreadEntry {
	top := h.entries[0]
	last := len(h.entries) - 1
	h.entries[0] = h.entries[last]
	h.entries = h.entries[:last]
	if last > 0 {
		h.down(0)
	}
	return top
}

func (h *spreadHeap) down(i int) {
	n := len(h.entries)
	for {
		best := i
		if l := 2*i + 1; l < n && h.entries[l].isBetter(h.entries[best]) {
			best = l
		}
		if r := 2*i + 2; r < n && h.entries[r].isBetter(h.entries[best]) {
			best = r
		}
		if best == i {
			return
		}
		h.entries[i], h.entries[best] = h.entries[best], h.entries[i]
		i = best
	}
}
