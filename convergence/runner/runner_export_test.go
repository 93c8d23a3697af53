package runner

// TakeTriggered hands the runner's pending triggers to its specs, as the
// converging loop would take them.
func (r *Runner) TakeTriggered() (guids []string, full bool) { return r.takeTriggered() }

// SpliceGuids is spliceRuns over rows that are their own guids.
func SpliceGuids(rows, fresh, changed []string) []string {
	return spliceRuns(rows, fresh, changed, func(s *string) string { return *s })
}

// PruneUntil is pruneUntil, for its specs.
var PruneUntil = pruneUntil
