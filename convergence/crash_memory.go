package convergence

import (
	"cmp"
	"slices"
	"time"
)

// CrashRow is one crash of an instance as the board remembers it (table
// cell_crashes): the crash path of the store writes it in the crash's own
// transaction, because a CRASHED row forgets its cell (models.DecideLifecycle
// clears cell_id). Every board reads the same rows, so every board plans
// the same placements from them.
type CrashRow struct {
	ProcessGuid string
	// DefinitionID is the definition the crashed instance ran.
	DefinitionID string
	// CellID is the cell it crashed on.
	CellID string
	// At is when it crashed, Unix nanoseconds (the database's clock).
	At int64
}

// CrashMemory is how the planner uses the crashes of the recent past.
//
// Placement: an instance of definition D of an LRP (new, restarted, moved
// or replacing another) avoids the cells where D of that LRP crashed
// within Window, as long as another cell fits; when none does it is placed
// on one of them anyway, never left unplaced because of a crash. The pair
// is (LRP, definition), since definition ids are chosen per LRP: a
// definition that crashes on a cell says nothing of the next one.
//
// Report: a cell whose crashes within Window, across every LRP, number at
// least SpikeMin and at least SpikeFactor times the median of the
// registered cells' counts is reported as a crash spike (Plan.CrashSpikes).
// The median is the lower one: the count at position (n-1)/2 of the n
// registered cells' counts in ascending order, cells without a crash
// counting 0.
//
// Worked example, Window 10 min, SpikeMin 10, SpikeFactor 3, now 12:00:
//  1. web's definition v1 crashed on cell-a at 11:55 and on cell-b at
//     11:40; web's v2 crashed on cell-c at 11:58.
//  2. A restart of web/0 on v1 avoids cell-a (5 min ago); cell-b is
//     outside the window (20 min ago) and may be used again.
//  3. A new web instance on v2 avoids cell-c, not cell-a: v1's crash
//     there says nothing of v2.
//  4. If cell-a is the only cell with room, web/0 is placed on cell-a.
//  5. Cells a, b, c, d have 12, 1, 0, 3 crashes in the window: sorted
//     0, 1, 3, 12, the lower median is 1, so cell-a (12 ≥ 10 and
//     12 ≥ 3 × 1) is a spike; cell-d (3 < 10) is not.
//  6. With 12, 5, 5, 6, the median is 5 and 12 < 3 × 5: no spike, the
//     crashes are spread over the cells rather than peculiar to one.
//
// Window 0 turns both off.
type CrashMemory struct {
	Window      time.Duration
	SpikeMin    int32
	SpikeFactor int32
}

// MaxCrashWindow is the longest CrashMemory.Window: the store keeps a
// crash that long, then forgets it (db/sqldb prunes older rows).
const MaxCrashWindow = time.Hour

// DefaultCrashMemory remembers crashes for 10 min and reports a cell with
// at least 10 crashes and 3 times the median.
func DefaultCrashMemory() CrashMemory {
	return CrashMemory{Window: 10 * time.Minute, SpikeMin: 10, SpikeFactor: 3}
}

// remembers reports whether a crash at at is within the window at now.
func (m CrashMemory) remembers(at, now int64) bool {
	return m.Window > 0 && now-at < int64(m.Window)
}

// CrashPair names one definition of one LRP.
type CrashPair struct {
	ProcessGuid, DefinitionID string
}

// AvoidedCells lists, per (LRP, definition), the cells where it crashed
// within the window at now, sorted and each once: the cells placement
// uses for its instances only when nothing else fits.
func (m CrashMemory) AvoidedCells(crashes []CrashRow, now time.Time) map[CrashPair][]string {
	avoided := map[CrashPair][]string{}
	for _, c := range crashes {
		if m.remembers(c.At, now.UnixNano()) {
			pair := CrashPair{c.ProcessGuid, c.DefinitionID}
			avoided[pair] = append(avoided[pair], c.CellID)
		}
	}
	for pair, cells := range avoided {
		slices.Sort(cells)
		avoided[pair] = slices.Compact(cells)
	}
	return avoided
}

// CellCrashSpike is a cell whose crashes within the window spike.
type CellCrashSpike struct {
	CellID string
	// Crashes on the cell within the window, across every LRP, and the
	// lower median of the registered cells' counts it was judged against.
	Crashes int32
	Median  int32
}

// CrashSpikes lists, in cell id order, the registered cells whose crashes
// within the window spike at now (see CrashMemory). Crashes on cells not
// in cells are not counted: there is nothing to report them on.
func (m CrashMemory) CrashSpikes(crashes []CrashRow, cells []string, now time.Time) []CellCrashSpike {
	if m.Window <= 0 || len(cells) == 0 {
		return nil
	}
	counts := make(map[string]int32, len(cells))
	for _, cell := range cells {
		counts[cell] = 0
	}
	for _, c := range crashes {
		if n, ok := counts[c.CellID]; ok && m.remembers(c.At, now.UnixNano()) {
			counts[c.CellID] = n + 1
		}
	}
	sorted := make([]int32, 0, len(counts))
	for _, n := range counts {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	median := sorted[(len(sorted)-1)/2]
	var spikes []CellCrashSpike
	for cell, n := range counts {
		if n >= m.SpikeMin && int64(n) >= int64(m.SpikeFactor)*int64(median) {
			spikes = append(spikes, CellCrashSpike{CellID: cell, Crashes: n, Median: median})
		}
	}
	slices.SortFunc(spikes, func(a, b CellCrashSpike) int { return cmp.Compare(a.CellID, b.CellID) })
	return spikes
}

// avoidedCells turns AvoidedCells into cell indices, leaving out the
// cells that are not registered.
func avoidedCells(m CrashMemory, crashes []CrashRow, cells *cellTable, now int64) map[CrashPair][]int32 {
	byIndex := map[CrashPair][]int32{}
	for pair, ids := range m.AvoidedCells(crashes, time.Unix(0, now)) {
		for _, id := range ids {
			if cell, ok := cells.byID[id]; ok {
				byIndex[pair] = append(byIndex[pair], cell)
			}
		}
	}
	return byIndex
}
