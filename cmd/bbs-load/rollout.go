package main

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/corkboard/corkboard/convergence/runner"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// The rollout scenario measures a rolling update (issue 5): -lrps LRPs of
// -instances RUNNING instances on -cells cells are all given a new
// definition with -surge and -unavailable, then convergence passes
// (snapshot, plan, apply, straight on the store as in the converge
// scenario) alternate with rounds of the cells until every rollout is
// COMPLETE.
//
// The cells report healthy at once: in a round each cell (-workers at a
// time, straight on the store, no HTTP) bulk-reports what it runs, removes
// the RETIRING instances the board told it to stop (no drain period), and
// reports again with every instance assigned to it RUNNING and routable,
// which the board adopts. So the rollout takes as long as the board's
// passes and the cells' writes, not as long as instances take to start.
//
// Figures: the planner + apply time of each pass (its compute and apply;
// the snapshot load is reported beside it), and the whole rollout, from
// the first update to the pass that finds every rollout complete.

type rolloutConfig struct {
	target      target
	layout      layout
	slots       int
	surge       string
	unavailable string
	workers     int
	maxPasses   int
}

func runRollout(ctx context.Context, args []string) error {
	cfg := rolloutConfig{layout: layout{prefix: "roll"}}
	flags := flag.NewFlagSet("bbs-load rollout", flag.ExitOnError)
	cfg.target.register(flags)
	flags.IntVar(&cfg.layout.lrps, "lrps", 1, "LRPs rolled at once")
	flags.IntVar(&cfg.layout.instances, "instances", 10000, "instances per LRP")
	flags.IntVar(&cfg.layout.cells, "cells", 100, "cells")
	flags.IntVar(&cfg.layout.zones, "zones", 4, "zones the cells are spread over")
	flags.IntVar(&cfg.slots, "cell-slots", 0, "instances each cell has room for (0: twice the instances per cell, room for the surge)")
	flags.StringVar(&cfg.surge, "surge", "25%", "max_surge of the update strategy")
	flags.StringVar(&cfg.unavailable, "unavailable", "0", "max_unavailable of the update strategy")
	flags.IntVar(&cfg.workers, "workers", 8, "cells reporting at once")
	flags.IntVar(&cfg.maxPasses, "max-passes", 200, "give up after this many passes")
	flags.Parse(args)
	l := cfg.layout
	if l.zones < 1 || l.cells%l.zones != 0 {
		// Otherwise the seeded instances are not spread evenly over the
		// zones, and the board moves them before any rollout.
		return fmt.Errorf("-cells %d must be a multiple of -zones %d", l.cells, l.zones)
	}
	if cfg.slots <= 0 {
		cfg.slots = 2 * ((l.total() + l.cells - 1) / l.cells)
	}

	d, err := openFreshDatabase(ctx, cfg.target.driver, cfg.target.dsn)
	if err != nil {
		return err
	}
	defer d.close()
	seed := newSeeder(d)
	fmt.Printf("# bbs-load rollout, driver %s, %s, surge %s unavailable %s, %d cores\n",
		d.driver, l.describe(), cfg.surge, cfg.unavailable, numCPU())

	began := time.Now()
	if err := seed.registerCells(ctx, l.cells, l.zones, cfg.slots, time.Hour); err != nil {
		return err
	}
	if err := seed.seedLRPs(ctx, l, true); err != nil {
		return err
	}
	cells := seededCells(l)
	// A first pass over the seeded state must find nothing to do: what
	// follows is the rollout's work only. It fills the mirror the passes
	// plan from, as the lease owner's runner does.
	mirror := runner.NewMirror(d.store, nil)
	if p, err := convergeMirrored(ctx, d.store, mirror, nil); err != nil {
		return err
	} else if !p.plan.Writes.Empty() {
		return fmt.Errorf("the seeded state is not at rest: a pass planned %s", describeWrites(&p.plan.Writes))
	}
	step("seeded %s, all RUNNING on v1, %d slots per cell, in %s (set-up, not measured)", l.describe(), cfg.slots, seconds(time.Since(began)))

	run := &rolloutRun{cfg: cfg, d: d, seed: seed, cells: cells, mirror: mirror}
	return run.measure(ctx)
}

// rolloutRun is one measured rollout.
type rolloutRun struct {
	cfg  rolloutConfig
	d    *database
	seed *seeder
	// mirror is the lease owner's snapshot the passes plan from.
	mirror *runner.Mirror
	cells  []*rolloutCell

	target string // the new definition's id
	// Per pass: compute + apply, each alone, snapshot, and writes planned.
	planApply, computes, applies, snapshots latencies
	mostWrites                              int
	boardTime, cellTime                     time.Duration
	passes, rounds                          int
	reports, removes                        int
}

func (r *rolloutRun) measure(ctx context.Context) error {
	l := r.cfg.layout
	began := time.Now()
	if err := r.update(ctx); err != nil {
		return err
	}
	updated := time.Since(began)

	for {
		if r.passes >= r.cfg.maxPasses {
			status, _ := r.d.store.RolloutStatus(ctx, l.guid(0))
			return fmt.Errorf("not complete after %d passes; %s: %v", r.passes, l.guid(0), status)
		}
		if err := r.pass(ctx); err != nil {
			return err
		}
		complete, err := r.seed.count(ctx, "SELECT COUNT(*) FROM rollouts WHERE state = 'COMPLETE'")
		if err != nil {
			return err
		}
		if complete == l.lrps {
			break
		}
		if err := r.round(ctx); err != nil {
			return err
		}
	}
	whole := time.Since(began)
	// As of completion: verify runs more rounds and passes.
	passes, boardTime, rounds, cellTime := r.passes, r.boardTime, r.rounds, r.cellTime
	step("every rollout COMPLETE after %d passes and %d cell rounds (%d reports, %d RETIRING rows removed)",
		r.passes, r.rounds, r.reports, r.removes)
	if err := r.verify(ctx); err != nil {
		return err
	}

	conditions := fmt.Sprintf("%s, surge %s, unavailable %s, cells report healthy at once", l.describe(), r.cfg.surge, r.cfg.unavailable)
	worst := r.planApply.percentile(1)
	figure("rollout.pass", r.d.driver, conditions,
		fmt.Sprintf("planner + apply p50 %s max %s per pass over %d passes, at most %d writes in one (planner p50 %s, apply p50 %s; snapshot p50 %s max %s)",
			seconds(r.planApply.percentile(0.5)), seconds(worst), passes, r.mostWrites,
			seconds(r.computes.percentile(0.5)), seconds(r.applies.percentile(0.5)),
			seconds(r.snapshots.percentile(0.5)), seconds(r.snapshots.percentile(1))),
		"max < 50ms", worst < 50*time.Millisecond)
	figure("rollout.whole", r.d.driver, conditions,
		fmt.Sprintf("%s from the update to every instance on the new definition, rollouts COMPLETE (updates %s, %d passes %s, %d cell rounds %s)",
			seconds(whole), seconds(updated), passes, seconds(boardTime), rounds, seconds(cellTime)),
		"< 10s", whole < 10*time.Second)
	return nil
}

// update gives every LRP the new definition and the strategy, as
// `cork update` would, through the store.
func (r *rolloutRun) update(ctx context.Context) error {
	l := r.cfg.layout
	def := benchDefinition()
	def.Action.Env = []*models.EnvironmentVariable{{Name: "VERSION", Value: "v2"}}
	strategy := &models.UpdateStrategy{MaxSurge: r.cfg.surge, MaxUnavailable: r.cfg.unavailable}
	var failed firstError
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := range r.cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < l.lrps && failed.get() == nil; i += r.cfg.workers {
				lrp, err := r.d.store.UpdateDesiredLRP(ctx, l.guid(i), &models.DesiredLRPUpdate{Definition: def, UpdateStrategy: strategy})
				if err != nil {
					failed.set(fmt.Errorf("update %s: %w", l.guid(i), err))
					return
				}
				mu.Lock()
				r.target = lrp.GetActiveDefinitionId()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed.get()
}

func (r *rolloutRun) pass(ctx context.Context) error {
	p, err := convergeMirrored(ctx, r.d.store, r.mirror, nil)
	if err != nil {
		return err
	}
	r.passes++
	r.boardTime += p.total()
	r.planApply.add(p.compute + p.apply)
	r.computes.add(p.compute)
	r.applies.add(p.apply)
	r.snapshots.add(p.snapshot)
	r.mostWrites = max(r.mostWrites, p.writes())
	if p.plan.Counts.Unplaced != 0 {
		return fmt.Errorf("pass %d left %d instances unplaced: the cells are too small (-cell-slots)", r.passes, p.plan.Counts.Unplaced)
	}
	return nil
}

// round has every cell report, remove what it was told to stop, and
// report its new instances RUNNING.
func (r *rolloutRun) round(ctx context.Context) error {
	began := time.Now()
	var failed firstError
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := range r.cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(r.cells) && failed.get() == nil; i += r.cfg.workers {
				reports, removes, err := r.cells[i].round(ctx, r.d.store)
				if err != nil {
					failed.set(err)
					return
				}
				mu.Lock()
				r.reports += reports
				r.removes += removes
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	r.rounds++
	r.cellTime += time.Since(began)
	return failed.get()
}

// verify checks the outcome: every rollout COMPLETE with the new
// definition healthy, every instance ORDINARY and RUNNING on it, and,
// after the cells removed the last RETIRING instances, a pass with
// nothing left to do.
func (r *rolloutRun) verify(ctx context.Context) error {
	l := r.cfg.layout
	for i := range l.lrps {
		status, err := r.d.store.RolloutStatus(ctx, l.guid(i))
		if err != nil {
			return err
		}
		if status.GetState() != models.RolloutStatus_COMPLETE || status.GetActiveDefinitionId() != r.target ||
			status.GetHealthyDefinitionId() != r.target || int(status.GetUpdatedInstances()) != l.instances {
			return fmt.Errorf("rollout of %s ended as %v", l.guid(i), status)
		}
	}
	onTarget, err := r.seed.count(ctx, "SELECT COUNT(*) FROM actual_lrps WHERE presence = 'ORDINARY' AND state = 'RUNNING' AND definition_id = ?", r.target)
	if err != nil {
		return err
	}
	if onTarget != l.total() {
		return fmt.Errorf("after the rollout %d of %d instances run the new definition", onTarget, l.total())
	}
	for range 5 {
		if err := r.round(ctx); err != nil {
			return err
		}
		p, err := convergeMirrored(ctx, r.d.store, r.mirror, nil)
		if err != nil {
			return err
		}
		if p.plan.Writes.Empty() {
			break
		}
	}
	left, err := r.seed.count(ctx, "SELECT COUNT(*) FROM actual_lrps WHERE presence <> 'ORDINARY' OR definition_id <> ?", r.target)
	if err != nil {
		return err
	}
	if left != 0 {
		return fmt.Errorf("after the rollout and the cells' last removals %d rows are not ORDINARY on the new definition", left)
	}
	step("verified: %d rollouts COMPLETE, all %d instances ORDINARY and RUNNING on the new definition, no RETIRING row left", l.lrps, onTarget)
	return nil
}

// rolloutCell is a simulated cell that keeps what it runs and learns from
// its bulk reports what to start and what to stop.
type rolloutCell struct {
	id        string
	number    int
	instances map[string]*cellInstance // by instance guid
	started   int
}

type cellInstance struct {
	processGuid  string
	index        int32
	instanceGuid string
	definitionID string
	// presence as the cell knows it: RETIRING once a newer instance of its
	// index was assigned to this cell; an instance whose successor went to
	// another cell is still reported ORDINARY, and the board matches it
	// to its RETIRING row.
	presence models.ActualLRP_Presence
	netInfo  *models.NetInfo
}

// seededCells are the cells running the seeded instances, with the net
// info the seed gave them, so that their first report changes nothing.
func seededCells(l layout) []*rolloutCell {
	v1 := models.GenerateDefinitionID(benchDefinition())
	cells := make([]*rolloutCell, l.cells)
	for i := range cells {
		cells[i] = &rolloutCell{id: cellID(i), number: i, instances: map[string]*cellInstance{}}
	}
	for lrp := range l.lrps {
		for index := range l.instances {
			guid := l.guid(lrp)
			cell := l.cellOf(lrp, index)
			k := lrp*l.instances + index
			cells[cell].instances[instanceGuid(guid, index)] = &cellInstance{
				processGuid: guid, index: int32(index), instanceGuid: instanceGuid(guid, index),
				definitionID: v1, presence: models.ActualLRP_ORDINARY, netInfo: netInfo(cell, k/l.cells),
			}
		}
	}
	return cells
}

func (c *rolloutCell) reported() []*models.ReportedInstance {
	out := make([]*models.ReportedInstance, 0, len(c.instances))
	for _, instance := range c.instances {
		out = append(out, &models.ReportedInstance{
			ProcessGuid:  instance.processGuid,
			Index:        instance.index,
			Presence:     instance.presence,
			InstanceGuid: instance.instanceGuid,
			DefinitionId: instance.definitionID,
			State:        models.ActualLRP_RUNNING,
			NetInfo:      instance.netInfo,
			Routable:     true,
		})
	}
	return out
}

// round is one report, the removals it calls for, and, when instances were
// assigned, a second report with them RUNNING.
func (c *rolloutCell) round(ctx context.Context, store db.DB) (reports, removes int, err error) {
	result, err := store.BulkReport(ctx, c.id, c.reported())
	if err != nil {
		return 0, 0, fmt.Errorf("bulk report of %s: %w", c.id, err)
	}
	reports++
	n, err := c.stop(ctx, store, result.Stop)
	removes += n
	if err != nil || len(result.Assigned) == 0 {
		return reports, removes, err
	}
	c.start(result.Assigned)
	result, err = store.BulkReport(ctx, c.id, c.reported())
	if err != nil {
		return reports, removes, fmt.Errorf("bulk report of %s: %w", c.id, err)
	}
	reports++
	n, err = c.stop(ctx, store, result.Stop)
	return reports, removes + n, err
}

// stop drops the instances the board does not want and removes the rows of
// the RETIRING ones, as a rep does once it has stopped them.
func (c *rolloutCell) stop(ctx context.Context, store db.DB, stop []*models.ReportedInstance) (int, error) {
	removed := 0
	for _, s := range stop {
		instance, ok := c.instances[s.GetInstanceGuid()]
		if !ok {
			continue
		}
		delete(c.instances, s.GetInstanceGuid())
		if s.GetPresence() != models.ActualLRP_RETIRING && instance.presence != models.ActualLRP_RETIRING {
			continue
		}
		key := models.ActualLRPKey{ProcessGuid: instance.processGuid, Index: instance.index, Presence: models.ActualLRP_RETIRING}
		if err := store.RemoveActualLRP(ctx, key, models.Caller{InstanceGuid: instance.instanceGuid, CellID: c.id}); err != nil {
			return removed, fmt.Errorf("%s: remove RETIRING %s/%d: %w", c.id, instance.processGuid, instance.index, err)
		}
		removed++
	}
	return removed, nil
}

// start runs the assigned instances at once; an instance of another
// definition that ran the index on this cell keeps running as RETIRING.
func (c *rolloutCell) start(assigned []*models.ActualLRP) {
	for _, a := range assigned {
		for _, instance := range c.instances {
			if instance.processGuid == a.GetProcessGuid() && instance.index == a.GetIndex() &&
				instance.presence == models.ActualLRP_ORDINARY && instance.definitionID != a.GetDefinitionId() {
				instance.presence = models.ActualLRP_RETIRING
			}
		}
		c.started++
		instanceGuid := fmt.Sprintf("%s-%d-r%d", a.GetProcessGuid(), a.GetIndex(), c.started)
		c.instances[instanceGuid] = &cellInstance{
			processGuid: a.GetProcessGuid(), index: a.GetIndex(), instanceGuid: instanceGuid,
			definitionID: a.GetDefinitionId(), presence: models.ActualLRP_ORDINARY,
			// Ports 2000-4499 on the cell: the seeded instances use the
			// ones below.
			netInfo: netInfo(c.number, 2000+c.started%2500),
		}
	}
}
