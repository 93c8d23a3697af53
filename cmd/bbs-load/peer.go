package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/convergence/runner"
	"github.com/corkboard/corkboard/models"
)

// The peer scenario is the workload Diego's BBS was measured on side by
// side with Corkboard (issues 18 and 28), so that the figures compare: a
// fresh database, bin/bbs started on it as its own process, -cells cells
// registered over HTTP, then, all with -clients client goroutines over
// HTTP:
//
//  1. desire -lrps one-instance LRPs of ~1 KB each (a run action with
//     args and 3 environment variables, one port, one route);
//  2. the board places them with its own convergence (the passes each
//     desire triggers); the cells learn their assignments from a bulk
//     report;
//  3. claim + start every instance, the clients taking the cells'
//     instances in turn;
//  4. steady convergence passes with nothing to fix, measured in-process
//     on the same database as the converge scenario does (snapshot + plan;
//     the board's own passes are an hour apart and do not interfere);
//  5. whole lists, -list-rounds each, one after the other: desired LRPs
//     with definitions, scheduling infos, actual LRPs; a list's time is
//     from sending the request to the answer's last byte, decoding not
//     included (the answer is decoded and checked afterwards);
//  6. -updates annotation updates of random LRPs;
//  7. instances 1→2: -scale distinct random LRPs (default -updates, at
//     most -lrps) updated from 1 instance to 2, each once, so that the
//     figure is the write's and not contention on one row; the board then
//     places the new instances (waited for, not measured);
//  8. instances 2→1: the same LRPs back to 1, each once; the board then
//     removes the extra instances (waited for, not measured);
//  9. the board's peak RSS over the whole run (VmHWM);
//  10. with the board stopped, the database's bytes per LRP: every table
//     with its indexes, divided by -lrps (see databaseBytes for how each
//     dialect measures).
//
// -migrate board leaves the fresh database empty for the board binary to
// migrate with its own migrations, so that this load generator can drive
// an older board (an older board refuses a database migrated by a newer
// binary). Everything but step 4 goes through HTTP or reads tables every
// schema has; step 4 runs this binary's planner and store in-process, so
// it is measured only when the board's schema is this binary's, and
// skipped with a line saying so otherwise (the converge scenario of each
// commit compares the planners).
//
// The targets are the issues', set for Postgres on a 2-core machine; they
// are printed on every dialect so that the figures read side by side.
// Issue 28 sets its targets as ratios to a48ab90 in the same run, which
// hack/bench-compare.sh prints; here the instances steps' target is 5×
// a48ab90's figure in that issue, the annotation update keeps issue 18's
// rate and adds issue 28's p99, and the database's bytes have none.

type peerConfig struct {
	target     target
	bbs        string
	lrps       int
	cells      int
	zones      int
	clients    int
	passes     int
	listRounds int
	updates    int
	scale      int
	migrate    string
	timeout    time.Duration
}

// The -migrate choices.
const (
	migrateByLoad  = "load"
	migrateByBoard = "board"
)

func runPeer(ctx context.Context, args []string) error {
	var cfg peerConfig
	flags := flag.NewFlagSet("bbs-load peer", flag.ExitOnError)
	cfg.target.register(flags)
	flags.StringVar(&cfg.bbs, "bbs", "bin/bbs", "the bbs binary to start")
	flags.IntVar(&cfg.lrps, "lrps", 10000, "one-instance LRPs to desire")
	flags.IntVar(&cfg.cells, "cells", 100, "cells")
	flags.IntVar(&cfg.zones, "zones", 4, "zones the cells are spread over")
	flags.IntVar(&cfg.clients, "clients", 16, "concurrent client goroutines")
	flags.IntVar(&cfg.passes, "passes", 10, "measured steady convergence passes, after one warm-up")
	flags.IntVar(&cfg.listRounds, "list-rounds", 5, "whole lists of each kind, one after the other")
	flags.IntVar(&cfg.updates, "updates", 10000, "annotation updates of random LRPs")
	flags.IntVar(&cfg.scale, "scale", 0, "distinct LRPs scaled from 1 instance to 2 and back, each once per step (0: -updates, at most -lrps)")
	flags.StringVar(&cfg.migrate, "migrate", migrateByLoad, `who migrates the fresh database: "load", this binary before the board starts; "board", the board binary at its start, with its own migrations (to drive an older board)`)
	flags.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "give up when the board has not placed every instance by then")
	flags.Parse(args)
	if _, err := os.Stat(cfg.bbs); err != nil {
		return fmt.Errorf("-bbs %s: %w (make build makes it)", cfg.bbs, err)
	}
	if cfg.lrps < 1 || cfg.cells < 1 || cfg.zones < 1 || cfg.clients < 1 || cfg.passes < 1 || cfg.listRounds < 1 || cfg.updates < 1 || cfg.scale < 0 {
		return errors.New("-lrps, -cells, -zones, -clients, -passes, -list-rounds and -updates must be at least 1, -scale at least 0")
	}
	if cfg.scale == 0 {
		cfg.scale = min(cfg.updates, cfg.lrps)
	}
	if cfg.scale > cfg.lrps {
		return fmt.Errorf("-scale %d: there are only %d LRPs to scale, each once", cfg.scale, cfg.lrps)
	}
	began := time.Now()

	var d *database
	var err error
	switch cfg.migrate {
	case migrateByLoad:
		d, err = openFreshDatabase(ctx, cfg.target.driver, cfg.target.dsn)
	case migrateByBoard:
		d, err = createDatabase(ctx, cfg.target.driver, cfg.target.dsn)
	default:
		err = fmt.Errorf("-migrate %q: want %q or %q", cfg.migrate, migrateByLoad, migrateByBoard)
	}
	if err != nil {
		return err
	}
	defer d.close()
	lrpBytes := proto.Size(peerLRP("peer-000000", 1))
	fmt.Printf("# bbs-load peer of %s on %s, %d one-instance LRPs of %d bytes, %d cells in %d zones, %d clients, %d cores, load %s\n",
		cfg.bbs, d.driver, cfg.lrps, lrpBytes, cfg.cells, cfg.zones, cfg.clients, numCPU(), loadAverage())

	// An hour between full passes: the desires trigger the placing passes,
	// and no full pass runs while the figures are measured.
	board, err := startBBS(rssConfig{bbs: cfg.bbs, interval: time.Hour}, d)
	if err != nil {
		return err
	}
	defer board.stop()
	if _, err := waitForFirstPass(ctx, board, cfg.timeout); err != nil {
		return err
	}
	if cfg.migrate == migrateByBoard {
		current, status, err := d.openStoreIfCurrent(ctx)
		if err != nil {
			return err
		}
		step("the board migrated the database to %04d (this binary's latest: %04d)", status.Current, status.Latest)
		if !current {
			step("the in-process steady pass reads this binary's schema: not measured on this board")
		}
	}
	// Every cell has room for twice its share of the instances.
	l := layout{prefix: "peer", lrps: cfg.lrps, instances: 1, cells: cfg.cells, zones: cfg.zones}
	cells, err := registerSimulatedCells(ctx, board.url, l, l.total()/l.cells*2+1)
	if err != nil {
		return err
	}
	step("bin/bbs started, %d cells registered over HTTP (set-up)", cfg.cells)
	conditions := fmt.Sprintf("bin/bbs, %d one-instance LRPs of %d bytes, %d cells, %d clients over HTTP", cfg.lrps, lrpBytes, cfg.cells, cfg.clients)

	load := newLoader(board.url, cfg.clients)
	load.lrp = peerLRP
	cpu := newCPUMeter(ctx, d, board.cmd.Process.Pid)
	cpuBefore := cpu.sample()
	desired, err := load.desireClosedLoop(ctx, "peer", cfg.lrps, cfg.clients, 1)
	if err != nil {
		return err
	}
	desireRate, desireP99 := desired.perSecond(), desired.latencies.percentile(0.99)
	figure("peer.desire", d.driver, conditions,
		fmt.Sprintf("%.0f req/s (%d in %s), latency %s, %s", desireRate, cfg.lrps, seconds(desired.elapsed), desired.latencies.summary(), cpu.perOp(cpuBefore, cfg.lrps)),
		"≥ 5000 req/s, p99 < 10ms", desireRate >= 5000 && desireP99 < 10*time.Millisecond)

	placed, err := waitForPlacement(ctx, d, board, cfg.lrps, cfg.timeout)
	if err != nil {
		return err
	}
	step("the board placed all %d instances %s after the last desire", cfg.lrps, seconds(placed))
	assigned, err := collectAssignments(ctx, cells)
	if err != nil {
		return err
	}
	if assigned != cfg.lrps {
		return fmt.Errorf("cells were assigned %d instances, want %d", assigned, cfg.lrps)
	}

	lat := &latencies{}
	claimStart := time.Now()
	cpuBefore = cpu.sample()
	if err := claimAndStartShared(ctx, cells, cfg.clients, lat); err != nil {
		return err
	}
	elapsed := time.Since(claimStart)
	if err := newSeeder(d).verifyAllRunning(ctx, cfg.lrps, "every claim and start"); err != nil {
		return err
	}
	claimRate := float64(2*cfg.lrps) / elapsed.Seconds()
	figure("peer.claim-start", d.driver, conditions,
		fmt.Sprintf("%.0f ops/s (%d claims + %d starts in %s), latency %s, %s", claimRate, cfg.lrps, cfg.lrps, seconds(elapsed), lat.summary(), cpu.perOp(cpuBefore, 2*cfg.lrps)),
		"≥ 9000 ops/s", claimRate >= 9000)

	if d.store != nil {
		if err := peerSteadyPasses(ctx, d, cfg, conditions); err != nil {
			return err
		}
	}
	if err := peerLists(ctx, board, cfg, conditions, d.driver); err != nil {
		return err
	}

	cpuBefore = cpu.sample()
	updated, err := updateAnnotations(ctx, load, cfg.lrps, cfg.updates, cfg.clients)
	if err != nil {
		return err
	}
	updateRate := updated.perSecond()
	figure("peer.update-annotation", d.driver, conditions,
		fmt.Sprintf("%.0f ops/s (%d in %s), latency %s, %s", updateRate, cfg.updates, seconds(updated.elapsed), updated.latencies.summary(), cpu.perOp(cpuBefore, cfg.updates)),
		"≥ 6000 ops/s, p99 < 20ms", updateRate >= 6000 && updated.latencies.percentile(0.99) < 20*time.Millisecond)

	// Issue 28: instances 1→2 and 2→1 at 5× a48ab90's 387–466 ops/s (Postgres,
	// 10,000 LRPs), about 2,000 ops/s; bench-compare prints the ratio.
	scaled := distinctLRPs(cfg.lrps, cfg.scale)
	for _, s := range []struct {
		name, what string
		from, to   int32
		settled    string
		want       int
	}{
		{"peer.instances-up", "1→2", 1, 2, "placed every new instance", cfg.lrps + cfg.scale},
		{"peer.instances-down", "2→1", 2, 1, "removed every extra instance", cfg.lrps},
	} {
		cpuBefore = cpu.sample()
		result, err := scaleInstances(ctx, load, scaled, s.to, cfg.clients)
		if err != nil {
			return err
		}
		rate := result.perSecond()
		figure(s.name, d.driver, conditions+fmt.Sprintf(", %d distinct LRPs each once", cfg.scale),
			fmt.Sprintf("%.0f ops/s (%d in %s), latency %s, %s", rate, cfg.scale, seconds(result.elapsed), result.latencies.summary(), cpu.perOp(cpuBefore, cfg.scale)),
			"≥ 2000 ops/s", rate >= 2000)
		settled, err := waitForInstances(ctx, d, board, s.want, cfg.timeout)
		if err != nil {
			return fmt.Errorf("after instances %s: %w", s.what, err)
		}
		step("the board %s %s after the last update (%d instances placed)", s.settled, seconds(settled), s.want)
	}

	rss, hwm, err := memoryOf(board.cmd.Process.Pid)
	if err != nil {
		return err
	}
	if err := board.stop(); err != nil {
		return err
	}
	// memoryOf counts MB of 10^6 bytes; the target is in MiB (2^20).
	hwmMiB, rssMiB := hwm*1e6/(1<<20), rss*1e6/(1<<20)
	figure("peer.board-rss", d.driver, conditions,
		fmt.Sprintf("VmHWM %.0f MiB over the whole run, VmRSS at the end %.0f MiB", hwmMiB, rssMiB),
		"< 60 MiB", hwmMiB < 60)

	// Issue 28: at most half of a48ab90's; bench-compare prints the ratio.
	tables, how, err := databaseBytes(ctx, d.conn, d.driver)
	if err != nil {
		return fmt.Errorf("database size: %w", err)
	}
	figure("peer.db-bytes", d.driver, conditions+", after the run, "+how, describeBytes(tables, cfg.lrps), "", true)
	step("the scenario took %s", seconds(time.Since(began)))
	return nil
}

// peerLRP is the LRP of the Diego comparison: one run action with args
// and 3 environment variables, one port, one route; about 1 KB encoded.
func peerLRP(guid string, instances int32) *models.DesiredLRP {
	routes, err := structpb.NewStruct(map[string]any{
		"cf-router": []any{map[string]any{"hostnames": []any{guid + ".apps.example.com"}, "port": 8080}},
	})
	if err != nil {
		panic(err) // a fixed literal
	}
	return &models.DesiredLRP{
		ProcessGuid: guid,
		Domain:      "peer",
		Instances:   instances,
		Routes:      routes,
		Annotation:  "bbs-load peer",
		Definition: &models.LRPDefinition{
			Action: &models.RunAction{
				Path: "/home/vcap/app/bin/server",
				Args: []string{"--port", "8080", "--log-level", "info", "--config", "/home/vcap/app/config/production.yml",
					"--" + strings.Repeat("feature-flag-", 40)},
				Env: []*models.EnvironmentVariable{
					{Name: "VCAP_APPLICATION", Value: `{"application_name":"` + guid + `","space_name":"load","organization_name":"bench","limits":{"mem":256,"disk":512}}`},
					{Name: "DATABASE_URL", Value: "postgres://app:secret@db.internal.example.com:5432/" + guid + "?sslmode=require"},
					{Name: "LANG", Value: "en_US.UTF-8"},
				},
			},
			Ports:       []uint32{8080},
			HealthCheck: &models.HealthCheck{Type: models.HealthCheck_HTTP, Port: 8080, Path: "/health"},
			MemoryMb:    instanceMemoryMB,
			DiskMb:      instanceDiskMB,
		},
	}
}

// waitForPlacement waits until every instance has a cell, reading the
// database, and returns how long that took.
func waitForPlacement(ctx context.Context, d *database, board *bbsProcess, want int, timeout time.Duration) (time.Duration, error) {
	began := time.Now()
	seed := newSeeder(d)
	for {
		placed, err := seed.count(ctx, "SELECT COUNT(*) FROM actual_lrps WHERE state = 'UNCLAIMED' AND cell_id IS NOT NULL AND cell_id <> ''")
		if err != nil {
			return 0, err
		}
		if placed == want {
			return time.Since(began), nil
		}
		if time.Since(began) > timeout {
			return 0, fmt.Errorf("the board placed %d of %d instances in %s", placed, want, timeout)
		}
		if err := board.pause(ctx, 20*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// claimAndStartShared has clients goroutines claim then start every
// assigned instance, taking the cells' instances in turn (cell 0's first,
// cell 1's first, …), each as its cell's own client.
func claimAndStartShared(ctx context.Context, cells []*simulatedCell, clients int, lat *latencies) error {
	type work struct {
		cell  *simulatedCell
		index int
	}
	var queue []work
	for i := 0; ; i++ {
		added := false
		for _, c := range cells {
			if i < len(c.assigned) {
				queue = append(queue, work{c, i})
				added = true
			}
		}
		if !added {
			break
		}
	}
	return eachConcurrently(clients, len(queue), func(i int) error {
		w := queue[i]
		return w.cell.claimAndStart(ctx, w.cell.assigned[w.index], w.index, lat)
	})
}

// peerSteadyPasses measures steady convergence passes in-process on the
// board's database, from a mirror as the lease owner runs them (the
// warm-up pass fills it), as the converge scenario does.
func peerSteadyPasses(ctx context.Context, d *database, cfg peerConfig, conditions string) error {
	mirror := runner.NewMirror(d.store, nil)
	t, err := measurePasses(cfg.passes, func() (pass, error) { return convergeMirrored(ctx, d.store, mirror, nil) }, func(p pass) error {
		if !p.plan.Writes.Empty() || p.plan.Counts.Running != cfg.lrps {
			return fmt.Errorf("steady state: expected nothing to do for %d running instances, got %s (counts %+v)",
				cfg.lrps, describeWrites(&p.plan.Writes), p.plan.Counts)
		}
		return nil
	})
	if err != nil {
		return err
	}
	p99 := t.total.percentile(0.99)
	figure("peer.steady-pass", d.driver, conditions+fmt.Sprintf(", in-process on the same database, from a mirror, %d passes after 1 warm-up", cfg.passes),
		t.summary(), "< 15ms", p99 < 15*time.Millisecond)
	return nil
}

// peerLists lists each kind whole, -list-rounds times one after the
// other, and checks every answer's length.
func peerLists(ctx context.Context, board *bbsProcess, cfg peerConfig, conditions, driver string) error {
	httpClient := pooledHTTPClient(1)
	lists := []struct {
		name, route, target string
		limit               time.Duration
		count               func(body []byte) (int, error)
	}{
		{"peer.list-desired", models.RouteDesiredLRPs, "< 100ms", 100 * time.Millisecond, func(body []byte) (int, error) {
			var resp models.DesiredLRPsResponse
			if err := proto.Unmarshal(body, &resp); err != nil || resp.GetError() != nil {
				return 0, fmt.Errorf("decode %v, answered %v", err, resp.GetError())
			}
			for _, lrp := range resp.GetDesiredLrps() {
				if lrp.GetDefinition() == nil {
					return 0, fmt.Errorf("desired LRP %s listed without its definition", lrp.GetProcessGuid())
				}
			}
			return len(resp.GetDesiredLrps()), nil
		}},
		{"peer.list-scheduling-infos", models.RouteDesiredLRPSchedulingInfos, "< 30ms", 30 * time.Millisecond, func(body []byte) (int, error) {
			var resp models.DesiredLRPSchedulingInfosResponse
			if err := proto.Unmarshal(body, &resp); err != nil || resp.GetError() != nil {
				return 0, fmt.Errorf("decode %v, answered %v", err, resp.GetError())
			}
			return len(resp.GetDesiredLrpSchedulingInfos()), nil
		}},
		{"peer.list-actual", models.RouteActualLRPs, "< 25ms", 25 * time.Millisecond, func(body []byte) (int, error) {
			var resp models.ActualLRPsResponse
			if err := proto.Unmarshal(body, &resp); err != nil || resp.GetError() != nil {
				return 0, fmt.Errorf("decode %v, answered %v", err, resp.GetError())
			}
			return len(resp.GetActualLrps()), nil
		}},
	}
	for _, list := range lists {
		lat := &latencies{}
		size := 0
		for range cfg.listRounds {
			body, took, err := postWholeList(ctx, httpClient, board.url+list.route)
			if err != nil {
				return fmt.Errorf("%s: %w", list.route, err)
			}
			n, err := list.count(body)
			if err != nil {
				return fmt.Errorf("%s: %w", list.route, err)
			}
			if n != cfg.lrps {
				return fmt.Errorf("%s listed %d, want %d", list.route, n, cfg.lrps)
			}
			lat.add(took)
			size = len(body)
		}
		p50 := lat.percentile(0.5)
		figure(list.name, driver, conditions+fmt.Sprintf(", one client, %d whole lists", cfg.listRounds),
			fmt.Sprintf("p50 %s max %s, answer %.1f MB", seconds(p50), seconds(lat.percentile(1)), float64(size)/1e6),
			list.target, p50 < list.limit)
	}
	return nil
}

// distinctLRPs names n distinct LRPs of the peer run's lrps, at random
// (the same ones every run).
func distinctLRPs(lrps, n int) []string {
	guids := make([]string, n)
	for i, k := range rand.New(rand.NewSource(28)).Perm(lrps)[:n] {
		// desireClosedLoop names the LRPs peer-1 … peer-N.
		guids[i] = fmt.Sprintf("peer-%d", k+1)
	}
	return guids
}

// scaleInstances sets the instances of each of guids to instances, once
// each, from clients goroutines.
func scaleInstances(ctx context.Context, load *loader, guids []string, instances int32, clients int) (runResult, error) {
	lat := &latencies{}
	began := time.Now()
	err := eachConcurrently(clients, len(guids), func(i int) error {
		started := time.Now()
		if _, err := load.client.UpdateDesiredLRP(ctx, guids[i], &models.DesiredLRPUpdate{Instances: &instances}); err != nil {
			return fmt.Errorf("set the instances of %s to %d: %w", guids[i], instances, err)
		}
		lat.add(time.Since(started))
		return nil
	})
	return runResult{count: len(guids), elapsed: time.Since(began), latencies: lat}, err
}

// waitForInstances waits until the database holds want instances, every
// one on a cell, reading the tables every schema has, and returns how
// long that took.
func waitForInstances(ctx context.Context, d *database, board *bbsProcess, want int, timeout time.Duration) (time.Duration, error) {
	began := time.Now()
	seed := newSeeder(d)
	for {
		all, err := seed.count(ctx, "SELECT COUNT(*) FROM actual_lrps")
		if err != nil {
			return 0, err
		}
		placed, err := seed.count(ctx, "SELECT COUNT(*) FROM actual_lrps WHERE cell_id IS NOT NULL AND cell_id <> ''")
		if err != nil {
			return 0, err
		}
		if all == want && placed == want {
			return time.Since(began), nil
		}
		if time.Since(began) > timeout {
			return 0, fmt.Errorf("the database holds %d instances, %d on a cell, after %s; want %d on a cell", all, placed, timeout, want)
		}
		if err := board.pause(ctx, 20*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// updateAnnotations sends n annotation updates of random LRPs of the
// peer run from clients goroutines.
func updateAnnotations(ctx context.Context, load *loader, lrps, n, clients int) (runResult, error) {
	lat := &latencies{}
	var remaining atomic.Int64
	remaining.Store(int64(n))
	var failed firstError
	var wg sync.WaitGroup
	began := time.Now()
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			random := rand.New(rand.NewSource(int64(w)))
			for remaining.Add(-1) >= 0 && failed.get() == nil {
				// desireClosedLoop names the LRPs peer-1 … peer-N.
				guid := fmt.Sprintf("peer-%d", 1+random.Intn(lrps))
				annotation := fmt.Sprintf("updated by client %d", w)
				started := time.Now()
				if _, err := load.client.UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{Annotation: &annotation}); err != nil {
					failed.set(fmt.Errorf("update the annotation of %s: %w", guid, err))
					return
				}
				lat.add(time.Since(started))
			}
		}()
	}
	wg.Wait()
	return runResult{count: n, elapsed: time.Since(began), latencies: lat}, failed.get()
}
