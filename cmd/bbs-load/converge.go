package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"time"

	"github.com/corkboard/corkboard/convergence/runner"
	"github.com/corkboard/corkboard/db/dialect"
)

// The converge scenario measures convergence passes (snapshot, plan,
// apply) straight on the store, with no HTTP in between:
//
//  1. steady state: every instance RUNNING on a present cell, nothing to
//     fix; -passes passes after one warm-up pass.
//  2. repairs: some instances deleted (missing), some CRASHED (crash 1,
//     restarts at once), some LRPs lowered by one instance (extra); one
//     pass, then a second that must find nothing to do.
//  3. placement: every LRP removed, -place-lrps new LRPs desired (UNCLAIMED,
//     no cell), one pass that must place them all on the now empty cells.

type convergeConfig struct {
	target target
	layout layout
	slots  int
	passes int
	// fullPasses is how many full-read passes are measured (passes when
	// negative).
	fullPasses int
	repairs    bool
	missing    float64
	crashed    float64
	extra      float64
	placeLRPs  int
}

func runConverge(ctx context.Context, args []string) error {
	cfg := convergeConfig{layout: layout{prefix: "lrp"}}
	flags := flag.NewFlagSet("bbs-load converge", flag.ExitOnError)
	cfg.target.register(flags)
	flags.IntVar(&cfg.layout.lrps, "lrps", 50000, "LRPs in the steady state")
	flags.IntVar(&cfg.layout.instances, "instances", 5, "instances per LRP")
	flags.IntVar(&cfg.layout.cells, "cells", 1000, "cells")
	flags.IntVar(&cfg.layout.zones, "zones", 4, "zones the cells are spread over")
	flags.IntVar(&cfg.slots, "cell-slots", 300, "instances each cell has room for (256 MB, 512 MB disk each)")
	flags.IntVar(&cfg.passes, "passes", 20, "measured steady-state passes")
	flags.IntVar(&cfg.fullPasses, "full-passes", -1, "measured full-read passes (-passes when negative)")
	flags.BoolVar(&cfg.repairs, "repairs", true, "run the repair pass")
	flags.Float64Var(&cfg.missing, "missing", 0.05, "fraction of instances deleted for the repair pass")
	flags.Float64Var(&cfg.crashed, "crashed", 0.01, "fraction of instances crashed for the repair pass")
	flags.Float64Var(&cfg.extra, "extra", 0.01, "fraction of instances made extra (their LRP lowered by one) for the repair pass")
	flags.IntVar(&cfg.placeLRPs, "place-lrps", 20000, "new LRPs (of -instances each) to place in the placement pass")
	flags.Parse(args)

	d, err := openFreshDatabase(ctx, cfg.target.driver, cfg.target.dsn)
	if err != nil {
		return err
	}
	defer d.close()
	seed := newSeeder(d)
	l := cfg.layout
	fmt.Printf("# bbs-load converge, driver %s, %s, %d cores\n", d.driver, l.describe(), numCPU())

	began := time.Now()
	if err := seed.registerCells(ctx, l.cells, l.zones, cfg.slots, time.Hour); err != nil {
		return err
	}
	if err := seed.seedLRPs(ctx, l, true); err != nil {
		return err
	}
	step("seeded %s, all RUNNING, in %s (set-up, not measured)", l.describe(), seconds(time.Since(began)))

	if err := convergeSteady(ctx, d, cfg); err != nil {
		return err
	}
	if cfg.repairs {
		if err := convergeRepairs(ctx, d, seed, cfg); err != nil {
			return err
		}
	}
	return convergePlacement(ctx, d, seed, cfg)
}

func convergeSteady(ctx context.Context, d *database, cfg convergeConfig) error {
	l := cfg.layout
	nothingToDo := func(p pass) error {
		if !p.plan.Writes.Empty() || p.plan.Counts.Running != l.total() {
			return fmt.Errorf("steady state: expected nothing to do for %d running instances, got %s (counts %+v)",
				l.total(), describeWrites(&p.plan.Writes), p.plan.Counts)
		}
		return nil
	}
	// The lease owner's passes, from its mirror; the warm-up pass fills it
	// (the read at takeover).
	mirror := runner.NewMirror(d.store, nil)
	steady, err := measurePasses(cfg.passes, func() (pass, error) { return convergeMirrored(ctx, d.store, mirror, nil) }, nothingToDo)
	if err != nil {
		return err
	}
	if mirror.FullReads != 1 {
		return fmt.Errorf("steady state: the mirror read everything %d times, want once (the warm-up)", mirror.FullReads)
	}
	target, limit := steadyTarget(d.driver, l.total())
	p99 := steady.total.percentile(0.99)
	figure("converge.steady-pass", d.driver,
		fmt.Sprintf("%s, all RUNNING, nothing to fix, from the lease owner's mirror, %d passes after 1 warm-up", l.describe(), cfg.passes),
		steady.summary(), target, limit > 0 && p99 < limit)

	fullPasses := cfg.fullPasses
	if fullPasses < 0 {
		fullPasses = cfg.passes
	}
	full, err := measurePasses(fullPasses, func() (pass, error) { return convergeOnce(ctx, d.store) }, nothingToDo)
	if err != nil {
		return err
	}
	figure("converge.full-read-pass", d.driver,
		fmt.Sprintf("%s, all RUNNING, nothing to fix, every row read (as at takeover and every full_read_interval), %d passes after 1 warm-up", l.describe(), fullPasses),
		full.summary(), "", false)
	return convergeTargeted(ctx, d, mirror, cfg)
}

// steadyTarget is the target for a steady pass over total
// instances: 1,000,000 within 1 s (2 s on SQLite), 250,000 within 250 ms.
func steadyTarget(driver string, total int) (string, time.Duration) {
	switch {
	case total >= 1_000_000 && driver == string(dialect.SQLite):
		return "p99 < 2s", 2 * time.Second
	case total >= 1_000_000:
		return "p99 < 1s", time.Second
	case total >= 250_000:
		return "p99 < 250ms", 250 * time.Millisecond
	}
	return "", 0
}

// passTimes are the durations of measured passes.
type passTimes struct {
	total, snapshots, computes *latencies
}

func newPassTimes() passTimes {
	return passTimes{&latencies{}, &latencies{}, &latencies{}}
}

// add records the durations of one pass.
func (t passTimes) add(p pass) {
	t.total.add(p.total())
	t.snapshots.add(p.snapshot)
	t.computes.add(p.compute)
}

func (t passTimes) summary() string {
	return fmt.Sprintf("p50 %s p99 %s max %s (snapshot p50 %s, compute p50 %s)",
		seconds(t.total.percentile(0.5)), seconds(t.total.percentile(0.99)), seconds(t.total.percentile(1)),
		seconds(t.snapshots.percentile(0.5)), seconds(t.computes.percentile(0.5)))
}

// measurePasses runs a warm-up pass and n measured ones, each checked.
func measurePasses(n int, run func() (pass, error), check func(pass) error) (passTimes, error) {
	t := newPassTimes()
	for i := 0; i <= n; i++ {
		p, err := run()
		if err != nil {
			return t, err
		}
		if err := check(p); err != nil {
			return t, err
		}
		if i == 0 {
			continue // warm-up
		}
		t.add(p)
	}
	return t, nil
}

// convergeTargeted measures passes for one LRP among all the others, as a
// desire, an update or the rollout tick triggers them: the LRP's rows are
// read again, and what every other LRP uses on each cell comes from the
// mirror.
func convergeTargeted(ctx context.Context, d *database, mirror *runner.Mirror, cfg convergeConfig) error {
	l := cfg.layout
	i := 0
	t, err := measurePasses(cfg.passes, func() (pass, error) {
		guid := l.guid(i * l.lrps / (cfg.passes + 1))
		i++
		return convergeMirrored(ctx, d.store, mirror, []string{guid})
	}, func(p pass) error {
		if !p.plan.Writes.Empty() {
			return fmt.Errorf("targeted pass: expected nothing to do, got %s", describeWrites(&p.plan.Writes))
		}
		return nil
	})
	if err != nil {
		return err
	}
	figure("converge.targeted-pass", d.driver,
		fmt.Sprintf("one LRP of %s, all RUNNING, from the lease owner's mirror, %d passes after 1 warm-up", l.describe(), cfg.passes),
		t.summary(), "", false)
	return nil
}

// breakage is the instances the repair pass must fix.
type breakage struct {
	missing, crashed []instanceKey
	extraLRPs        []string
}

type instanceKey struct {
	guid  string
	index int
}

// chooseBreakage spreads the broken instances evenly over the layout,
// each instance broken at most one way: the highest index of each lowered
// LRP becomes extra, then missing and crashed instances are taken from the
// rest.
func chooseBreakage(l layout, missing, crashed, extra float64) breakage {
	var b breakage
	used := map[int]bool{}
	total := l.total()
	extraLRPs := int(math.Round(extra * float64(total)))
	for i := range min(extraLRPs, l.lrps) {
		lrp := i * l.lrps / extraLRPs
		b.extraLRPs = append(b.extraLRPs, l.guid(lrp))
		used[lrp*l.instances+l.instances-1] = true
	}
	pick := func(fraction float64, offset int) []instanceKey {
		n := int(math.Round(fraction * float64(total)))
		var keys []instanceKey
		for i := range n {
			k := (i*total/n + offset) % total
			for used[k] {
				k = (k + 1) % total
			}
			used[k] = true
			keys = append(keys, instanceKey{guid: l.guid(k / l.instances), index: k % l.instances})
		}
		return keys
	}
	b.missing = pick(missing, 0)
	b.crashed = pick(crashed, 1)
	return b
}

func convergeRepairs(ctx context.Context, d *database, seed *seeder, cfg convergeConfig) error {
	l := cfg.layout
	b := chooseBreakage(l, cfg.missing, cfg.crashed, cfg.extra)
	if err := seed.breakInstances(ctx, b); err != nil {
		return err
	}
	step("broke %d instances: %d missing (deleted), %d crashed (CRASHED, crash 1), %d extra (their LRP lowered by one)",
		len(b.missing)+len(b.crashed)+len(b.extraLRPs), len(b.missing), len(b.crashed), len(b.extraLRPs))

	p, err := convergeOnce(ctx, d.store)
	if err != nil {
		return err
	}
	w := &p.plan.Writes
	if len(w.Create) != len(b.missing) || len(w.Restart) != len(b.crashed) || len(w.Delete) != len(b.extraLRPs) || p.plan.Counts.Unplaced != 0 {
		return fmt.Errorf("repair pass planned %s, %d unplaced; want %d creates, %d restarts, %d deletes",
			describeWrites(w), p.plan.Counts.Unplaced, len(b.missing), len(b.crashed), len(b.extraLRPs))
	}
	if p.result.Skipped != 0 {
		return fmt.Errorf("repair pass skipped %d of %d writes on an idle database", p.result.Skipped, p.writes())
	}
	step("repair pass: %s; applied %d, skipped %d", describeWrites(w), p.result.Applied, p.result.Skipped)

	second, err := convergeOnce(ctx, d.store)
	if err != nil {
		return err
	}
	if !second.plan.Writes.Empty() {
		return fmt.Errorf("the pass after the repairs still planned %s", describeWrites(&second.plan.Writes))
	}
	ordinary, err := seed.count(ctx, "SELECT COUNT(*) FROM actual_lrps WHERE presence = 'ORDINARY' AND state <> 'CRASHED'")
	if err != nil {
		return err
	}
	if want := l.total() - len(b.extraLRPs); ordinary != want {
		return fmt.Errorf("after the repairs %d instances are not CRASHED, want %d", ordinary, want)
	}
	step("verified: the next pass has nothing to do; %d instances, none CRASHED", ordinary)
	figure("converge.repair-pass", d.driver,
		fmt.Sprintf("%s; %d missing, %d crashed, %d extra", l.describe(), len(b.missing), len(b.crashed), len(b.extraLRPs)),
		fmt.Sprintf("%s until all %d writes persisted (snapshot %s, compute %s, apply %s)",
			seconds(p.total()), p.writes(), seconds(p.snapshot), seconds(p.compute), seconds(p.apply)),
		"< 2s", p.total() < 2*time.Second)
	return nil
}

func convergePlacement(ctx context.Context, d *database, seed *seeder, cfg convergeConfig) error {
	if cfg.placeLRPs <= 0 {
		return nil
	}
	if err := seed.clearLRPs(ctx); err != nil {
		return err
	}
	l := layout{prefix: "new", lrps: cfg.placeLRPs, instances: cfg.layout.instances, cells: cfg.layout.cells, zones: cfg.layout.zones}
	if err := seed.seedLRPs(ctx, l, false); err != nil {
		return err
	}
	step("removed every LRP; desired %d LRPs × %d = %d UNCLAIMED instances without a cell", l.lrps, l.instances, l.total())

	p, err := convergeOnce(ctx, d.store)
	if err != nil {
		return err
	}
	if len(p.plan.Writes.Place) != l.total() || p.plan.Counts.Unplaced != 0 {
		return fmt.Errorf("placement pass planned %s, %d unplaced; want %d places", describeWrites(&p.plan.Writes), p.plan.Counts.Unplaced, l.total())
	}
	placed, err := seed.count(ctx, "SELECT COUNT(*) FROM actual_lrps WHERE state = 'UNCLAIMED' AND cell_id <> '' AND placement_error = ''")
	if err != nil {
		return err
	}
	if placed != l.total() {
		return fmt.Errorf("after the placement pass %d of %d instances are placed", placed, l.total())
	}
	step("verified: all %d instances placed on a cell", placed)
	figure("converge.place-pass", d.driver,
		fmt.Sprintf("%d new instances = %d LRPs × %d, %d empty cells in %d zones", l.total(), l.lrps, l.instances, l.cells, l.zones),
		fmt.Sprintf("%s to place all (snapshot %s, compute %s, apply %s)",
			seconds(p.total()), seconds(p.snapshot), seconds(p.compute), seconds(p.apply)),
		"< 10s", p.total() < 10*time.Second)
	return nil
}
