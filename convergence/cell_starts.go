package convergence

import (
	"fmt"
	"slices"
	"time"
)

// The start governor bounds how fast one cell is asked to start
// instances (Config.MaxStartsPerCellPerSecond, the board's
// max_starts_per_cell_per_second): a cell told to start 300 instances at
// once downloads, unpacks and boots them all together and every one of
// them misses its start timeout. Placement is where an instance is given
// to a cell, so placement is where the limit holds: a cell that started
// its share within the last StartWindow takes nothing new this pass, and
// the instances wait, unplaced, for the next pass, which the plan's
// NextWake brings when the oldest of those starts leaves the window.

// StartWindow is the window max_starts_per_cell_per_second counts starts
// over.
const StartWindow = time.Second

// RecentStart reports whether a row counts as a start on its cell within
// the StartWindow ending at now: an ORDINARY row on a cell, UNCLAIMED,
// CLAIMED or RUNNING, whose last state change (Since) is within the
// window. Placement sets Since, and a state change only moves it later,
// so every instance placed on a cell within the window and still there
// counts: the count may be higher than the placements (an instance placed
// earlier that turned RUNNING within the window counts too), which only
// makes the limit stricter, never looser. EVACUATING, SUSPECT and RETIRING
// rows are copies of instances already started, and a CRASHED row has
// left its cell.
func RecentStart(r *ActualRow, now int64) bool {
	if r.Presence != ordinary || r.CellID == "" {
		return false
	}
	if r.State != unclaimed && r.State != claimed && r.State != running {
		return false
	}
	return r.Since <= now && now-r.Since < int64(StartWindow)
}

// StartsLeft decides how many instances a cell may still be given at now
// under limit starts per StartWindow (0: no limit, left is then -1), given
// the Since of the rows that count as its recent starts (RecentStart); an
// entry outside the window does not count. When left is 0, again is when
// the oldest counted start leaves the window and the cell may start
// another; 0 otherwise.
//
// Worked example, limit 3, now 12:00:10.000:
//  1. Starts at 12:00:09.200, 12:00:09.700 and 12:00:08.900: the last is
//     outside the window (1.1 s ago), so 2 count and 1 is left.
//  2. A fourth start at 12:00:09.950: 3 count, none is left, and the
//     cell may start again at 12:00:10.200, when the start of 09.200
//     leaves the window.
//  3. No limit (0): left is -1 whatever the starts.
//  4. Limit 3 and five starts within the window (the limit was lowered,
//     or another board placed): none is left, never a negative count.
func StartsLeft(limit int32, starts []int64, now int64) (left int32, again int64) {
	if limit <= 0 {
		return -1, 0
	}
	var counted []int64
	for _, since := range starts {
		if since <= now && now-since < int64(StartWindow) {
			counted = append(counted, since)
		}
	}
	if int32(len(counted)) < limit {
		return limit - int32(len(counted)), 0
	}
	// The cell starts again once all but limit-1 of the counted starts
	// have left the window: at the (len-limit+1)-th oldest's end.
	slices.Sort(counted)
	return 0, counted[len(counted)-int(limit)] + int64(StartWindow)
}

// startLimitReason is the placement error of an instance that waits for
// the start governor: every cell it would fit on started its share within
// the last second.
func startLimitReason(limit int32) string {
	return fmt.Sprintf("waiting to start: every cell that fits has started max_starts_per_cell_per_second (%d) instances within the last second", limit)
}
