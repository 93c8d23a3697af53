package convergence

// cellHeap is a binary heap of cell indices, the cell with the most free
// memory (then the lowest id) on top. It records each cell's position in
// placer.heapPos so a cell whose free memory changed can be fixed in place.
type cellHeap struct {
	cells []int32
}

func (h *cellHeap) init(pl *placer) {
	for i := len(h.cells)/2 - 1; i >= 0; i-- {
		h.down(pl, i)
	}
}

func (h *cellHeap) push(pl *placer, cell int32) {
	h.cells = append(h.cells, cell)
	pl.heapPos[cell] = int32(len(h.cells) - 1)
	h.up(pl, len(h.cells)-1)
}

func (h *cellHeap) pop(pl *placer) int32 {
	top := h.cells[0]
	h.remove(pl, 0)
	return top
}

func (h *cellHeap) remove(pl *placer, pos int32) {
	last := len(h.cells) - 1
	removed := h.cells[pos]
	if int(pos) != last {
		h.swap(pl, int(pos), last)
	}
	h.cells = h.cells[:last]
	pl.heapPos[removed] = -1
	if int(pos) != last {
		h.fix(pl, pos)
	}
}

func (h *cellHeap) fix(pl *placer, pos int32) {
	if !h.down(pl, int(pos)) {
		h.up(pl, int(pos))
	}
}

func (h *cellHeap) up(pl *placer, i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !pl.cells.hasMoreFree(h.cells[i], h.cells[parent]) {
			return
		}
		h.swap(pl, i, parent)
		i = parent
	}
}

// down sifts the cell at i down and reports whether it moved.
func (h *cellHeap) down(pl *placer, i int) bool {
	start := i
	n := len(h.cells)
	for {
		best := i
		if l := 2*i + 1; l < n && pl.cells.hasMoreFree(h.cells[l], h.cells[best]) {
			best = l
		}
		if r := 2*i + 2; r < n && pl.cells.hasMoreFree(h.cells[r], h.cells[best]) {
			best = r
		}
		if best == i {
			return i > start
		}
		h.swap(pl, i, best)
		i = best
	}
}

func (h *cellHeap) swap(pl *placer, i, j int) {
	h.cells[i], h.cells[j] = h.cells[j], h.cells[i]
	pl.heapPos[h.cells[i]] = int32(i)
	pl.heapPos[h.cells[j]] = int32(j)
}
