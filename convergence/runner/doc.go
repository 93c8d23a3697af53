// Package runner runs the convergence planner (package convergence) on the
// board's database: while this board owns the convergence lease, a Runner
// brings its Mirror of the snapshot up to date from the event log, calls
// convergence.Compute, and applies the plan through db.ConvergenceDB. It
// also exports the pass metrics and answers rollout dry runs on the live
// state (RolloutPlanner). Everything here does I/O; the decisions are the
// planner's.
package runner
