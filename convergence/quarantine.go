package convergence

import (
	"fmt"
	"time"
)

// Cell quarantine: a quarantined cell (CellRow.Quarantined) takes no new
// placements — no new instance, restart, replacement or move goes there —
// until an operator clears it; the instances it runs keep running, and
// are neither evacuated nor counted against it. An operator quarantines a
// cell by hand (cork cell quarantine), or, with the board's
// quarantine_on_crash_spike (Config.QuarantineOnCrashSpike), the board
// does when the cell's crashes spike (QuarantineSpikes).

// CellQuarantine is a cell the board quarantines on a crash spike.
type CellQuarantine struct {
	CellID string
	// Reason gives the spike's figures.
	Reason string
	// ClearedAt is the cell's QuarantineClearedAt the decision counted
	// crashes from: the store quarantines only while it is still that, so
	// a clear that comes between the pass's read and its write wins.
	ClearedAt int64
}

// QuarantineSpikes decides which cells the board quarantines at now: every
// registered cell, not quarantined already, whose crashes spike by m's
// rule (CrashMemory.CrashSpikes) when each cell's crashes at or before its
// last clear (QuarantineClearedAt) are left out, so that a cell an
// operator cleared is quarantined again only on new crashes. The median is
// taken over every registered cell's count so filtered. Nil when m's
// window is 0.
//
// Worked example, window 10 min, spike_min 10, spike_factor 3, now 12:00:
//  1. cell-a has 12 crashes within the window (11:51–11:55), cell-b 1
//     (11:58), cell-c 0: the lower median is 1 and 12 ≥ max(10, 3 × 1), so cell-a
//     is quarantined ("crash spike: 12 crashes within 10m0s, the cells'
//     median 1").
//  2. An operator clears cell-a at 12:01. At 12:02 its 12 crashes are all
//     before the clear: 0 count, and it stays in service.
//  3. By 12:05 cell-a crashed 10 more times after the clear: 10 ≥ 10 and
//     ≥ 3 × 1, so it is quarantined again.
//  4. A cell already quarantined (by hand or by the board) gets no
//     decision whatever its crashes.
func QuarantineSpikes(m CrashMemory, crashes []CrashRow, cells []CellRow, now time.Time) []CellQuarantine {
	if m.Window <= 0 || len(cells) == 0 {
		return nil
	}
	byID := make(map[string]*CellRow, len(cells))
	ids := make([]string, 0, len(cells))
	for i := range cells {
		byID[cells[i].CellID] = &cells[i]
		ids = append(ids, cells[i].CellID)
	}
	var sinceClear []CrashRow
	for _, c := range crashes {
		if cell, ok := byID[c.CellID]; ok && c.At > cell.QuarantineClearedAt {
			sinceClear = append(sinceClear, c)
		}
	}
	var out []CellQuarantine
	for _, spike := range m.CrashSpikes(sinceClear, ids, now) {
		cell := byID[spike.CellID]
		if cell.Quarantined {
			continue
		}
		out = append(out, CellQuarantine{
			CellID:    spike.CellID,
			Reason:    fmt.Sprintf("crash spike: %d crashes within %s, the cells' median %d (quarantine_on_crash_spike)", spike.Crashes, m.Window, spike.Median),
			ClearedAt: cell.QuarantineClearedAt,
		})
	}
	return out
}
