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
// side with Corkboard (issue 18), so that the figures compare: a fresh
// database, bin/bbs started on it as its own process, -cells cells
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
//  7. the board's peak RSS over the whole run (VmHWM).
//
// The targets are the issue's, set for Postgres on a 2-core machine; they
// are printed on every dialect so that the figures read side by side.

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
	timeout    time.Duration
}

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
	flags.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "give up when the board has not placed every instance by then")
	flags.Parse(args)
	if _, err := os.Stat(cfg.bbs); err != nil {
		return fmt.Errorf("-bbs %s: %w (make build makes it)", cfg.bbs, err)
	}
	if cfg.lrps < 1 || cfg.cells < 1 || cfg.zones < 1 || cfg.clients < 1 || cfg.passes < 1 || cfg.listRounds < 1 || cfg.updates < 1 {
		return errors.New("-lrps, -cells, -zones, -clients, -passes, -list-rounds and -updates must be at least 1")
	}
	began := time.Now()

	d, err := openFreshDatabase(ctx, cfg.target.driver, cfg.target.dsn)
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

	if err := peerSteadyPasses(ctx, d, cfg, conditions); err != nil {
		return err
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
		"≥ 6000 ops/s", updateRate >= 6000)

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
		select {
		case err := <-board.exited:
			board.exited <- err
			return 0, fmt.Errorf("bbs exited: %v: %s", err, board.stderr.String())
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
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
	var next atomic.Int64
	var failed firstError
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for failed.get() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(queue) {
					return
				}
				w := queue[i]
				if err := w.cell.claimAndStart(ctx, w.cell.assigned[w.index], w.index, lat); err != nil {
					failed.set(err)
				}
			}
		}()
	}
	wg.Wait()
	return failed.get()
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
