package runner

import (
	"time"

	"github.com/corkboard/corkboard/convergence"
)

// TakeTriggered hands the runner's pending triggers to its specs, as the
// converging loop would take them.
func (r *Runner) TakeTriggered() (guids []string, full bool) { return r.takeTriggered() }

// SpliceGuids is spliceRuns over rows that are their own guids.
func SpliceGuids(rows, fresh, changed []string) []string {
	return spliceRuns(rows, fresh, changed, func(s *string) string { return *s })
}

// TriggeredPassWait is triggeredPassWait, for its table.
var TriggeredPassWait = triggeredPassWait

// PruneUntil is pruneUntil, for its specs.
var PruneUntil = pruneUntil

// PartialStarts is the UnreadStarts a partial snapshot of guids (sorted)
// gives each cell of cells, from rows, at now, with the start governor on.
func PartialStarts(rows []convergence.ActualRow, cells []convergence.CellRow, guids []string, now time.Time) map[string][]int64 {
	m := &Mirror{now: func() time.Time { return now }, StartsLimited: true}
	p := m.partial(&convergence.Snapshot{Actual: rows, Cells: cells}, guids)
	out := map[string][]int64{}
	for _, c := range p.Cells {
		if len(c.UnreadStarts) > 0 {
			out[c.CellID] = c.UnreadStarts
		}
	}
	return out
}

// PartialDesired is the process guids of the DesiredLRPs a partial
// snapshot of guids (sorted) holds, from desired (sorted).
func PartialDesired(desired []convergence.DesiredSchedule, guids []string) []string {
	m := &Mirror{now: time.Now}
	var out []string
	for _, d := range m.partial(&convergence.Snapshot{Desired: desired}, guids).Desired {
		out = append(out, d.ProcessGuid)
	}
	return out
}
