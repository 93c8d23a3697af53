package convergence

// TakeTriggered hands the runner's pending triggers to its specs, as the
// converging loop would take them.
func (r *Runner) TakeTriggered() (guids []string, full bool) { return r.takeTriggered() }
