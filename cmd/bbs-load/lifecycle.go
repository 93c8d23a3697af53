package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/models"
)

// The lifecycle scenario measures the writes reps make, through the real
// HTTP API of an in-process board: -cells simulated cells register, the
// instances are placed on them by one convergence pass, each cell learns
// its assignments from a bulk report, then every cell claims and starts
// its instances as fast as it can (-in-flight requests at a time).
// Throughput is (claims + starts) / elapsed.

type lifecycleConfig struct {
	target         target
	layout         layout
	inFlight       int
	convergeDuring bool
}

func runLifecycle(ctx context.Context, args []string) error {
	cfg := lifecycleConfig{layout: layout{prefix: "lc"}}
	flags := flag.NewFlagSet("bbs-load lifecycle", flag.ExitOnError)
	cfg.target.register(flags)
	flags.IntVar(&cfg.layout.cells, "cells", 32, "concurrent simulated cells")
	flags.IntVar(&cfg.layout.zones, "zones", 4, "zones the cells are spread over")
	flags.IntVar(&cfg.layout.lrps, "lrps", 5000, "LRPs to claim and start")
	flags.IntVar(&cfg.layout.instances, "instances", 5, "instances per LRP")
	flags.IntVar(&cfg.inFlight, "in-flight", 1, "requests each cell has in flight at once")
	flags.BoolVar(&cfg.convergeDuring, "converge-during", false, "run convergence passes back to back while the cells claim and start")
	flags.Parse(args)

	d, b, err := openServedDatabase(ctx, cfg.target)
	if err != nil {
		return err
	}
	defer d.close()
	defer b.stop()
	l := cfg.layout
	fmt.Printf("# bbs-load lifecycle against an in-process board on %s, %d cells, %d instances, %d cores\n",
		d.driver, l.cells, l.total(), numCPU())

	cells, err := registerSimulatedCells(ctx, b.url, l, (l.total()/l.cells+1)*2)
	if err != nil {
		return err
	}
	seed := newSeeder(d)
	if err := seed.seedLRPs(ctx, l, false); err != nil {
		return err
	}
	placement, err := convergeOnce(ctx, d.store)
	if err != nil {
		return err
	}
	if len(placement.plan.Writes.Place) != l.total() {
		return fmt.Errorf("placement pass planned %s, want %d places", describeWrites(&placement.plan.Writes), l.total())
	}
	assigned, err := collectAssignments(ctx, cells)
	if err != nil {
		return err
	}
	if assigned != l.total() {
		return fmt.Errorf("cells were assigned %d instances, want %d", assigned, l.total())
	}
	step("seeded %d UNCLAIMED instances, placed them in one pass (%s), cells learned their assignments from bulk reports (set-up, not measured)",
		l.total(), seconds(placement.total()))

	var converger *backgroundConverger
	if cfg.convergeDuring {
		converger = startBackgroundConverger(ctx, d.store)
	}
	lat := &latencies{}
	began := time.Now()
	err = claimAndStartAll(ctx, cells, cfg.inFlight, lat)
	elapsed := time.Since(began)
	var passes string
	if converger != nil {
		n, skipped, convergeErr := converger.stop()
		if convergeErr != nil {
			return convergeErr
		}
		passes = fmt.Sprintf(", %d convergence passes alongside (%d writes skipped as stale)", n, skipped)
	}
	if err != nil {
		return err
	}

	if err := seed.verifyAllRunning(ctx, l.total(), "every claim and start"); err != nil {
		return err
	}

	ops := 2 * l.total()
	perSecond := float64(ops) / elapsed.Seconds()
	target, met := "", true
	if d.driver == string(dialect.Postgres) && !cfg.convergeDuring {
		target, met = "≥ 5000 ops/s on postgres", perSecond >= 5000
	}
	figure("lifecycle.claim-start", d.driver,
		fmt.Sprintf("%d cells × %d in flight, %d claims + %d starts over HTTP%s", l.cells, cfg.inFlight, l.total(), l.total(), passes),
		fmt.Sprintf("%.0f ops/s (%d ops in %s), latency %s", perSecond, ops, seconds(elapsed), lat.summary()),
		target, met)
	return nil
}

// simulatedCell is a rep without processes: it speaks the cell API only.
type simulatedCell struct {
	index    int
	client   *client.CellClient
	assigned []*models.ActualLRP
}

// registerSimulatedCells registers the layout's cells through the API,
// each with room for slots instances.
// collectAssignments has every cell bulk-report running nothing, keeps
// what the board assigns it, and counts the assignments.
func collectAssignments(ctx context.Context, cells []*simulatedCell) (int, error) {
	assigned := 0
	for _, c := range cells {
		result, err := c.client.BulkReport(ctx, nil)
		if err != nil {
			return 0, fmt.Errorf("bulk report of %s: %w", c.client.CellID(), err)
		}
		c.assigned = result.Assigned
		assigned += len(c.assigned)
	}
	return assigned, nil
}

func registerSimulatedCells(ctx context.Context, url string, l layout, slots int) ([]*simulatedCell, error) {
	cells := cellClients(url, l)
	for _, c := range cells {
		if _, err := c.client.RegisterCell(ctx, benchCell(c.index, l.zones, slots)); err != nil {
			return nil, fmt.Errorf("register %s: %w", c.client.CellID(), err)
		}
	}
	return cells, nil
}

func pooledHTTPClient(connections int) *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns = connections
	transport.MaxIdleConnsPerHost = connections
	return &http.Client{Transport: transport, Timeout: 2 * time.Minute}
}

// claimAndStartAll has every cell claim then start each of its assigned
// instances, with inFlight instances of a cell under way at once.
func claimAndStartAll(ctx context.Context, cells []*simulatedCell, inFlight int, lat *latencies) error {
	var wg sync.WaitGroup
	var failed firstError
	for _, c := range cells {
		next := make(chan int)
		for range inFlight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					if err := c.claimAndStart(ctx, c.assigned[i], i, lat); err != nil {
						failed.set(err)
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(next)
			for i := range c.assigned {
				if failed.get() != nil {
					return
				}
				next <- i
			}
		}()
	}
	wg.Wait()
	return failed.get()
}

func (c *simulatedCell) claimAndStart(ctx context.Context, lrp *models.ActualLRP, port int, lat *latencies) error {
	instance := client.Instance{
		ProcessGuid:  lrp.GetProcessGuid(),
		Index:        lrp.GetIndex(),
		InstanceGuid: instanceGuid(lrp.GetProcessGuid(), int(lrp.GetIndex())),
	}
	began := time.Now()
	if _, err := c.client.ClaimActualLRP(ctx, instance); err != nil {
		return fmt.Errorf("%s claims %s/%d: %w", c.client.CellID(), instance.ProcessGuid, instance.Index, err)
	}
	claimed := time.Now()
	lat.add(claimed.Sub(began))
	if _, err := c.client.StartActualLRP(ctx, instance, netInfo(c.index, port), true); err != nil {
		return fmt.Errorf("%s starts %s/%d: %w", c.client.CellID(), instance.ProcessGuid, instance.Index, err)
	}
	lat.add(time.Since(claimed))
	return nil
}

// backgroundConverger runs convergence passes back to back until stopped.
type backgroundConverger struct {
	cancel  context.CancelFunc
	done    chan struct{}
	passes  int
	skipped int
	err     error
}

func startBackgroundConverger(ctx context.Context, s db.DB) *backgroundConverger {
	ctx, cancel := context.WithCancel(ctx)
	c := &backgroundConverger{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			p, err := convergeOnce(ctx, s)
			if err != nil {
				if ctx.Err() == nil {
					c.err = err
				}
				return
			}
			c.passes++
			c.skipped += p.result.Skipped
		}
	}()
	return c
}

func (c *backgroundConverger) stop() (passes, skipped int, err error) {
	c.cancel()
	<-c.done
	return c.passes, c.skipped, c.err
}
