package main

import (
	"context"
	"fmt"
	"time"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/convergence/runner"
	"github.com/corkboard/corkboard/db"
)

// pass is one convergence pass as the runner makes it: load the snapshot,
// compute the plan, apply its writes.
type pass struct {
	snapshot, compute, apply time.Duration
	plan                     *convergence.Plan
	result                   *convergence.ConvergenceResult
}

func (p pass) total() time.Duration { return p.snapshot + p.compute + p.apply }

func (p pass) writes() int { return writeCount(&p.plan.Writes) }

func convergeOnce(ctx context.Context, s db.DB) (pass, error) {
	return convergeFor(ctx, s, nil)
}

// convergeFor runs one pass over the LRPs named (all when nil), reading
// them whole, as a runner does at takeover.
func convergeFor(ctx context.Context, s db.DB, guids []string) (pass, error) {
	return convergeWith(ctx, s, func() (*convergence.Snapshot, error) { return s.ConvergenceSnapshot(ctx, guids) }, nil)
}

// convergeMirrored runs one pass over the LRPs named (all when nil) from
// a mirror, as the lease owner's runner does between takeovers.
func convergeMirrored(ctx context.Context, s db.DB, m *runner.Mirror, guids []string) (pass, error) {
	return convergeWith(ctx, s, func() (*convergence.Snapshot, error) { return m.Snapshot(ctx, guids) }, m.Applied)
}

// convergeWith plans from the snapshot read gives and applies the plan,
// telling applied (when set) how that went.
func convergeWith(ctx context.Context, s db.DB, read func() (*convergence.Snapshot, error),
	applied func(*convergence.ConvergenceWrites, *convergence.ConvergenceResult, error)) (pass, error) {
	p, err := planWith(read)
	if err != nil {
		return p, err
	}
	computed := time.Now()
	p.result = &convergence.ConvergenceResult{}
	if !p.plan.Writes.Empty() {
		p.result, err = s.ApplyConvergence(ctx, &p.plan.Writes)
		if applied != nil {
			applied(&p.plan.Writes, p.result, err)
		}
		if err != nil {
			return p, fmt.Errorf("apply convergence: %w", err)
		}
	}
	p.apply = time.Since(computed)
	return p, nil
}

// planWith reads a snapshot and computes its plan, applying nothing.
func planWith(read func() (*convergence.Snapshot, error)) (pass, error) {
	var p pass
	began := time.Now()
	snapshot, err := read()
	if err != nil {
		return p, fmt.Errorf("convergence snapshot: %w", err)
	}
	loaded := time.Now()
	p.snapshot = loaded.Sub(began)
	p.plan = convergence.Compute(snapshot, loaded, convergence.DefaultConfig())
	p.compute = time.Since(loaded)
	return p, nil
}

func writeCount(w *convergence.ConvergenceWrites) int {
	return len(w.Delete) + len(w.Promote) + len(w.MarkSuspect) + len(w.Retire) + len(w.RequestStop) +
		len(w.Create) + len(w.Restart) + len(w.Redefine) + len(w.Unassign) + len(w.Place) + len(w.PlacementFailed) +
		len(w.Rollouts) + len(w.DeleteDefinitions)
}

func describeWrites(w *convergence.ConvergenceWrites) string {
	out := fmt.Sprintf("%d deletes, %d promotions, %d suspects, %d creates, %d restarts, %d unassigns, %d places, %d placement failures",
		len(w.Delete), len(w.Promote), len(w.MarkSuspect), len(w.Create),
		len(w.Restart), len(w.Unassign), len(w.Place), len(w.PlacementFailed))
	// The rollout groups, only when there are any: the other scenarios
	// never have them.
	if n := len(w.Retire) + len(w.RequestStop) + len(w.Redefine) + len(w.Rollouts) + len(w.DeleteDefinitions); n > 0 {
		out += fmt.Sprintf(", %d retirements, %d stop requests, %d redefinitions, %d rollout records, %d definition deletes",
			len(w.Retire), len(w.RequestStop), len(w.Redefine), len(w.Rollouts), len(w.DeleteDefinitions))
	}
	return out
}
