package convergence

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

const noCell int32 = -1

// capacity is what a cell has left, in wide integers so that sums of many
// rows cannot overflow.
type capacity struct {
	memory, disk, slots int64
}

// need is what one instance asks of a cell: its memory and disk, and one
// instance slot.
type need struct {
	memory, disk int32
}

// cellTable is every cell of the snapshot, indexed 0..n-1 in cell id
// order, so that comparing indices compares ids.
type cellTable struct {
	ids     []string
	byID    map[string]int32
	present []bool
	// draining cells stay present (their rows are not suspect) but take
	// no new instances; nor do quarantined ones (quarantine.go).
	draining    []bool
	quarantined []bool
	// expiresAt is Unix nanoseconds.
	expiresAt []int64
	zone      []int32
	class     []int32
	free      []capacity
	capacity  []capacity
	// startsLeft is, per cell, how many more instances this pass may give
	// it under the start governor (StartsLeft), and recentStarts the Since
	// of its counted starts, this pass's included (at startsNow); nil
	// without a limit (startLimit 0).
	startLimit   int32
	startsLeft   []int32
	recentStarts map[int32][]int64
	startsNow    int64

	zones []string
	// classes are the distinct placement tag sets, each sorted and without
	// duplicates; cells with the same set share a class.
	classes [][]string
}

func newCellTable(rows []CellRow, now int64, grace PresenceGrace) *cellTable {
	sorted := make([]*CellRow, len(rows))
	for i := range rows {
		sorted[i] = &rows[i]
	}
	slices.SortStableFunc(sorted, func(a, b *CellRow) int { return cmp.Compare(a.CellID, b.CellID) })
	sorted = slices.CompactFunc(sorted, func(a, b *CellRow) bool { return a.CellID == b.CellID })

	n := len(sorted)
	t := &cellTable{
		ids:         make([]string, n),
		byID:        make(map[string]int32, n),
		present:     make([]bool, n),
		draining:    make([]bool, n),
		quarantined: make([]bool, n),
		expiresAt:   make([]int64, n),
		zone:        make([]int32, n),
		class:       make([]int32, n),
		free:        make([]capacity, n),
		capacity:    make([]capacity, n),
	}
	zoneIndex := map[string]int32{}
	classIndex := map[string]int32{}
	for i, c := range sorted {
		t.ids[i] = c.CellID
		t.byID[c.CellID] = int32(i)
		t.present[i] = c.ExpiresAt > now || grace.keeps(c.ExpiresAt, now)
		t.draining[i] = c.Draining
		t.quarantined[i] = c.Quarantined
		t.expiresAt[i] = c.ExpiresAt
		t.capacity[i] = capacity{
			memory: int64(c.Capacity.MemoryMB),
			disk:   int64(c.Capacity.DiskMB),
			slots:  int64(c.Capacity.Instances),
		}
		// What the snapshot's rows use is charged as they load (use).
		t.free[i] = capacity{
			memory: int64(c.Capacity.MemoryMB) - int64(c.UnreadUse.MemoryMB),
			disk:   int64(c.Capacity.DiskMB) - int64(c.UnreadUse.DiskMB),
			slots:  int64(c.Capacity.Instances) - int64(c.UnreadUse.Instances),
		}
		t.zone[i] = internIndex(zoneIndex, &t.zones, c.Zone)
		tags := normalizeTags(c.PlacementTags)
		key := tagKey(tags)
		class, seen := classIndex[key]
		if !seen {
			class = int32(len(t.classes))
			classIndex[key] = class
			t.classes = append(t.classes, tags)
		}
		t.class[i] = class
	}
	// Zone indices follow first appearance in cell id order; renumber them
	// in zone name order so that every tie broken by zone index is broken
	// by name.
	t.sortZones()
	return t
}

func internIndex(index map[string]int32, names *[]string, name string) int32 {
	if i, ok := index[name]; ok {
		return i
	}
	i := int32(len(*names))
	index[name] = i
	*names = append(*names, name)
	return i
}

func (t *cellTable) sortZones() {
	order := make([]int32, len(t.zones))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(t.zones[a], t.zones[b]) })
	renumber := make([]int32, len(t.zones))
	names := make([]string, len(t.zones))
	for newIndex, old := range order {
		renumber[old] = int32(newIndex)
		names[newIndex] = t.zones[old]
	}
	t.zones = names
	for i, z := range t.zone {
		t.zone[i] = renumber[z]
	}
}

// lookup returns the index of the cell with this id, or noCell when the id
// is empty or no such cell is registered.
func (t *cellTable) lookup(cellID string) int32 {
	if cellID == "" {
		return noCell
	}
	if i, ok := t.byID[cellID]; ok {
		return i
	}
	return noCell
}

func (t *cellTable) isPresent(cell int32) bool {
	return cell != noCell && t.present[cell]
}

// isDraining reports whether the cell is registered and draining.
func (t *cellTable) isDraining(cell int32) bool {
	return cell != noCell && t.draining[cell]
}

// limitStarts applies the start governor: recent are the Since of each
// cell's recent starts (RecentStart) among the rows read, to which each
// cell's UnreadStarts are added. Nothing without a limit.
func (t *cellTable) limitStarts(limit int32, rows []CellRow, recent map[int32][]int64, now int64) {
	if limit <= 0 {
		return
	}
	for i := range rows {
		if cell := t.lookup(rows[i].CellID); cell != noCell {
			recent[cell] = append(recent[cell], rows[i].UnreadStarts...)
		}
	}
	t.startLimit, t.recentStarts, t.startsNow = limit, recent, now
	t.startsLeft = make([]int32, len(t.ids))
	for cell := range t.ids {
		t.startsLeft[cell], _ = StartsLeft(limit, recent[int32(cell)], now)
	}
}

// startsAgain is when a cell without starts left may start again.
func (t *cellTable) startsAgain(cell int32) int64 {
	_, again := StartsLeft(t.startLimit, t.recentStarts[cell], t.startsNow)
	return again
}

// mayStart reports whether the start governor lets the cell be given
// another instance this pass.
func (t *cellTable) mayStart(cell int32) bool {
	return t.startsLeft == nil || t.startsLeft[cell] != 0
}

// started charges one start to the cell's budget.
func (t *cellTable) started(cell int32) {
	if t.startsLeft != nil && t.startsLeft[cell] > 0 {
		t.startsLeft[cell]--
		t.recentStarts[cell] = append(t.recentStarts[cell], t.startsNow)
	}
}

// takesInstances reports whether placement may put instances on the cell:
// present, not draining and not quarantined.
func (t *cellTable) takesInstances(cell int32) bool {
	return t.present[cell] && !t.draining[cell] && !t.quarantined[cell]
}

// quarantine marks the cells this pass quarantines: it places nothing on
// them already.
func (t *cellTable) quarantine(cells []CellQuarantine) {
	for _, q := range cells {
		if cell := t.lookup(q.CellID); cell != noCell {
			t.quarantined[cell] = true
		}
	}
}

// use charges a row's resources to the cell it names, whatever its state
// or presence: until the row is gone or moved, the cell keeps room for it.
func (t *cellTable) use(cell int32, r *ActualRow) {
	f := &t.free[cell]
	f.memory -= int64(r.MemoryMB)
	f.disk -= int64(r.DiskMB)
	f.slots--
}

func (t *cellTable) fits(cell int32, n need) bool {
	f := &t.free[cell]
	return f.memory >= int64(n.memory) && f.disk >= int64(n.disk) && f.slots >= 1 && t.mayStart(cell)
}

// room counts how many more instances of need the cells could take that
// placement may use for an LRP with the given tags (present, not
// draining, every tag), as their free capacity stands: per cell the
// fewest of its free slots, memory / need.memory and disk / need.disk
// (a need of 0 does not bound). Capped at the largest int32.
func (t *cellTable) room(tags []string, n need) int32 {
	want := normalizeTags(tags)
	var total int64
	for cell := range t.ids {
		if !t.takesInstances(int32(cell)) || !includesAll(t.classes[t.class[cell]], want) {
			continue
		}
		f := t.free[cell]
		fit := f.slots
		if n.memory > 0 {
			fit = min(fit, f.memory/int64(n.memory))
		}
		if n.disk > 0 {
			fit = min(fit, f.disk/int64(n.disk))
		}
		total += max(fit, 0)
	}
	return int32(min(total, math.MaxInt32))
}

// hasMoreFree orders cells for placement: most free memory first, then
// cell id.
func (t *cellTable) hasMoreFree(a, b int32) bool {
	fa, fb := t.free[a].memory, t.free[b].memory
	if fa != fb {
		return fa > fb
	}
	return a < b
}

// normalizeTags returns the tags sorted and without duplicates, copying
// only when they are not already in that form.
func normalizeTags(tags []string) []string {
	if len(tags) == 0 {
		return nil
	}
	normal := true
	for i := 1; i < len(tags); i++ {
		if tags[i-1] >= tags[i] {
			normal = false
			break
		}
	}
	if normal {
		return tags
	}
	sorted := slices.Clone(tags)
	slices.Sort(sorted)
	return slices.Compact(sorted)
}

// tagKey names a normalized tag set. Each tag is prefixed with its length,
// so no two sets share a key whatever bytes the tags hold.
func tagKey(normalized []string) string {
	if len(normalized) == 0 {
		return ""
	}
	var b strings.Builder
	for _, tag := range normalized {
		b.WriteString(strconv.Itoa(len(tag)))
		b.WriteByte(':')
		b.WriteString(tag)
	}
	return b.String()
}

// includesAll reports whether the sorted set has every tag of the sorted
// set want.
func includesAll(have, want []string) bool {
	i := 0
	for _, w := range want {
		for i < len(have) && have[i] < w {
			i++
		}
		if i == len(have) || have[i] != w {
			return false
		}
		i++
	}
	return true
}
