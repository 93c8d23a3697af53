package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// The lists scenario measures the board's memory while clients list the
// whole of a large database at once, as today's clients do (no cursor, no
// limit). It seeds RUNNING LRPs whose definitions are padded so that the
// run_infos definitions add up to -db-mb MB, starts bin/bbs on the
// database as its own process, reads its memory as a baseline, then has
// -clients clients list every desired LRP -rounds times each, all at once,
// and then every actual LRP once each, sampling the board's VmRSS
// throughout and reading its VmHWM (the peak) at the end.
//
// MB here is 10^6 bytes, as memoryOf counts it.

type listsConfig struct {
	target  target
	layout  layout
	bbs     string
	dbMB    float64
	clients int
	rounds  int
	settle  time.Duration
	timeout time.Duration
}

// sampleEvery is how often the board's VmRSS is read while the lists run:
// often enough to catch a peak that a whole list holds for a fraction of
// a second. VmHWM catches it regardless; the samples say in which phase.
const sampleEvery = 50 * time.Millisecond

func runLists(ctx context.Context, args []string) error {
	cfg := listsConfig{layout: layout{prefix: "list"}}
	flags := flag.NewFlagSet("bbs-load lists", flag.ExitOnError)
	cfg.target.register(flags)
	flags.StringVar(&cfg.bbs, "bbs", "bin/bbs", "the bbs binary to start")
	flags.IntVar(&cfg.layout.lrps, "lrps", 20000, "desired LRPs")
	flags.IntVar(&cfg.layout.instances, "instances", 1, "RUNNING instances per LRP")
	flags.IntVar(&cfg.layout.cells, "cells", 100, "cells")
	flags.IntVar(&cfg.layout.zones, "zones", 4, "zones the cells are spread over")
	flags.Float64Var(&cfg.dbMB, "db-mb", 20, "total size of the run_infos definitions, in MB (10^6 bytes); each definition is padded to its share")
	flags.IntVar(&cfg.clients, "clients", 8, "clients listing at once")
	flags.IntVar(&cfg.rounds, "rounds", 3, "whole desired_lrps lists each client makes, one after the other")
	flags.DurationVar(&cfg.settle, "settle", 2*time.Second, "wait after the board's first convergence pass before reading the baseline")
	flags.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "give up when the board has not made its first pass by then")
	flags.Parse(args)
	l := cfg.layout
	if _, err := os.Stat(cfg.bbs); err != nil {
		return fmt.Errorf("-bbs %s: %w (make build makes it)", cfg.bbs, err)
	}
	if l.lrps < 1 || l.instances < 1 || l.cells < 1 || l.zones < 1 || cfg.clients < 1 || cfg.rounds < 1 {
		return errors.New("-lrps, -instances, -cells, -zones, -clients and -rounds must be at least 1")
	}
	began := time.Now()

	d, err := openFreshDatabase(ctx, cfg.target.driver, cfg.target.dsn)
	if err != nil {
		return err
	}
	defer d.close()
	fmt.Printf("# bbs-load lists of %s on %s, %s, definitions %g MB, %d clients × %d rounds, %d cores\n",
		cfg.bbs, d.driver, l.describe(), cfg.dbMB, cfg.clients, cfg.rounds, numCPU())

	seedStart := time.Now()
	seed := newSeeder(d)
	// Each LRP stores its own copy of the definition (one run_infos row
	// each), so each copy is padded to its share of the total.
	seed.definition = paddedDefinition(int(cfg.dbMB * 1e6 / float64(l.lrps)))
	slots := l.total()/l.cells*2 + 1
	if err := seed.registerCells(ctx, l.cells, l.zones, slots, time.Hour); err != nil {
		return err
	}
	if err := seed.seedLRPs(ctx, l, true); err != nil {
		return err
	}
	definitionBytes, err := seed.count(ctx, "SELECT COALESCE(SUM(LENGTH(definition)), 0) FROM run_infos")
	if err != nil {
		return fmt.Errorf("sum the definitions' sizes: %w", err)
	}
	definitionsMB := float64(definitionBytes) / 1e6
	step("seeded %s, all RUNNING, run_infos definitions %.1f MB (%d bytes each), in %s (set-up, not measured)",
		l.describe(), definitionsMB, definitionBytes/l.lrps, seconds(time.Since(seedStart)))

	// An hour between passes: after the first one, at start-up, no
	// convergence pass reads the database while the lists are measured.
	board, err := startBBS(rssConfig{bbs: cfg.bbs, interval: time.Hour}, d)
	if err != nil {
		return err
	}
	defer board.stop()
	pid := board.cmd.Process.Pid

	passesBefore, err := waitForFirstPass(ctx, board, cfg.timeout)
	if err != nil {
		return err
	}
	time.Sleep(cfg.settle)
	baseRSS, baseHWM, err := memoryOf(pid)
	if err != nil {
		return err
	}
	// The start-up pass may have peaked above what the lists take; the
	// peak wanted is the lists' own, so VmHWM restarts from the current
	// VmRSS ("5" to clear_refs, Linux 4.0 and later).
	hwmNote := "VmHWM reset after the baseline"
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		hwmNote = fmt.Sprintf("VmHWM not reset (%v): the peak includes start-up", err)
	}
	step("baseline after the first convergence pass and %s: VmRSS %.0f MB, VmHWM %.0f MB; %s",
		cfg.settle, baseRSS, baseHWM, hwmNote)

	sampler := startRSSSampler(pid)
	httpClient := pooledHTTPClient(cfg.clients)

	wantDesired := l.lrps
	desired, err := listConcurrently(ctx, httpClient, board, models.RouteDesiredLRPs, cfg.clients, cfg.rounds,
		func(body []byte) error {
			var resp models.DesiredLRPsResponse
			if err := proto.Unmarshal(body, &resp); err != nil {
				return fmt.Errorf("decode: %w", err)
			}
			if resp.GetError() != nil {
				return fmt.Errorf("the board answered an error: %v", resp.GetError())
			}
			if n := len(resp.GetDesiredLrps()); n != wantDesired {
				return fmt.Errorf("listed %d desired LRPs, want %d", n, wantDesired)
			}
			// Before and after compare only when both answers carry the
			// definitions, the bulk of the answer.
			for _, lrp := range resp.GetDesiredLrps() {
				if lrp.GetDefinition() == nil {
					return fmt.Errorf("desired LRP %s listed without its definition", lrp.GetProcessGuid())
				}
			}
			return nil
		})
	if err != nil {
		sampler.stop()
		return fmt.Errorf("desired_lrps lists: %w", err)
	}
	desiredPeakRSS, err := sampler.takePeak()
	if err != nil {
		sampler.stop()
		return err
	}
	_, desiredHWM, err := memoryOf(pid)
	if err != nil {
		sampler.stop()
		return err
	}
	step("%d clients × %d whole desired_lrps lists: %s; VmHWM %.0f MB, sampled VmRSS max %.0f MB",
		cfg.clients, cfg.rounds, desired.lat.summary(), desiredHWM, desiredPeakRSS)

	wantActual := l.total()
	actual, err := listConcurrently(ctx, httpClient, board, models.RouteActualLRPs, cfg.clients, 1,
		func(body []byte) error {
			var resp models.ActualLRPsResponse
			if err := proto.Unmarshal(body, &resp); err != nil {
				return fmt.Errorf("decode: %w", err)
			}
			if resp.GetError() != nil {
				return fmt.Errorf("the board answered an error: %v", resp.GetError())
			}
			if n := len(resp.GetActualLrps()); n != wantActual {
				return fmt.Errorf("listed %d actual LRPs, want %d", n, wantActual)
			}
			return nil
		})
	sampler.stop()
	if err != nil {
		return fmt.Errorf("actual_lrps lists: %w", err)
	}
	actualPeakRSS, err := sampler.takePeak()
	if err != nil {
		return err
	}
	endRSS, hwm, err := memoryOf(pid)
	if err != nil {
		return err
	}
	step("%d clients × 1 whole actual_lrps list: %s; sampled VmRSS max %.0f MB",
		cfg.clients, actual.lat.summary(), actualPeakRSS)

	passesAfter, err := board.metric(fullPasses)
	if err != nil {
		return err
	}
	if err := board.stop(); err != nil {
		return err
	}
	step("verified: every list complete (%d desired LRPs, %d actual LRPs); %.0f convergence passes ran during the lists; VmRSS at the end %.0f MB",
		wantDesired, wantActual, passesAfter-passesBefore, endRSS)

	// VmHWM is the kernel's record of the peak, but after a reset the
	// kernel updates it lazily and has been seen to read a megabyte below
	// an earlier reading; the peak is the highest of every reading.
	peak := max(hwm, desiredHWM, desiredPeakRSS, actualPeakRSS)
	conditions := fmt.Sprintf("%s with %d LRPs × %d RUNNING, run_infos definitions %.1f MB, %d clients × %d rounds of whole desired_lrps lists then × 1 of actual_lrps lists",
		cfg.bbs, l.lrps, l.instances, definitionsMB, cfg.clients, cfg.rounds)
	figure("lists.board", d.driver, conditions,
		fmt.Sprintf("peak RSS (VmHWM) %.0f MB, %.0f MB over the baseline VmRSS %.0f MB (sampled VmRSS max %.0f MB during the desired lists, %.0f MB during the actual lists)",
			peak, peak-baseRSS, baseRSS, desiredPeakRSS, actualPeakRSS),
		fmt.Sprintf("< 300 MB peak with %d concurrent whole lists of a %g MB database", cfg.clients, cfg.dbMB), peak < 300)
	figure("lists.latency", d.driver, conditions,
		fmt.Sprintf("whole desired_lrps list p50 %s max %s, answer %.1f MB; whole actual_lrps list p50 %s max %s, answer %.1f MB",
			seconds(desired.lat.percentile(0.5)), seconds(desired.lat.percentile(1)), float64(desired.size)/1e6,
			seconds(actual.lat.percentile(0.5)), seconds(actual.lat.percentile(1)), float64(actual.size)/1e6),
		"", false)
	step("the scenario took %s, seeding included", seconds(time.Since(began)))
	return nil
}

// paddedDefinition is benchDefinition with a PADDING environment variable
// that makes its stored blob (with the id and creation time the seeder
// gives it) blobBytes long, or as near as the varint lengths allow. The
// padding is pseudo-random letters rather than one repeated byte so that a
// server that compresses large values (Postgres TOAST, past 2 kB) keeps
// about as many bytes as it hands to the board.
func paddedDefinition(blobBytes int) *models.LRPDefinition {
	def := benchDefinition()
	padding := &models.EnvironmentVariable{Name: "PADDING"}
	def.Action.Env = append(def.Action.Env, padding)
	letters := rand.New(rand.NewSource(1))
	size := func() int {
		stored := proto.CloneOf(def)
		stored.DefinitionId = models.GenerateDefinitionID(stored)
		stored.CreatedAt = time.Now().UnixNano()
		return proto.Size(stored)
	}
	// A few corrections settle it: a length crossing a varint boundary
	// changes the size by one byte more than the padding.
	for range 4 {
		diff := blobBytes - size()
		if diff == 0 {
			break
		}
		n := max(0, len(padding.Value)+diff)
		value := make([]byte, n)
		for i := range value {
			value[i] = byte('a' + letters.Intn(26))
		}
		padding.Value = string(value)
		if n == 0 {
			break
		}
	}
	return def
}

// waitForFirstPass waits until the board has completed a full convergence
// pass (the one it runs when it takes the lease at start-up), so that the
// baseline is read with the board in the state it stays in during the
// lists. It returns the pass count then.
func waitForFirstPass(ctx context.Context, board *bbsProcess, timeout time.Duration) (float64, error) {
	deadline := time.Now().Add(timeout)
	for {
		passes, err := board.metric(fullPasses)
		if err == nil && passes >= 1 {
			return passes, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("bbs made no full convergence pass in %s (last /metrics read: %.0f passes, error %v)", timeout, passes, err)
		}
		if err := board.pause(ctx, 100*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// listRun is what a set of concurrent whole lists took and answered.
type listRun struct {
	lat  *latencies
	size int // bytes of the largest answer
}

// listConcurrently has clients clients each post rounds empty requests to
// route, one after the other, all clients starting together; check
// judges every answer's body. The time of a call is from sending the
// request to the last byte of the answer read, without decoding it.
func listConcurrently(ctx context.Context, httpClient *http.Client, board *bbsProcess, route string, clients, rounds int, check func(body []byte) error) (listRun, error) {
	run := listRun{lat: &latencies{}}
	var sizeMu sync.Mutex
	var failed firstError
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range rounds {
				if failed.get() != nil {
					return
				}
				body, took, err := postWholeList(ctx, httpClient, board.url+route)
				if err == nil {
					err = check(body)
				}
				if err != nil {
					failed.set(err)
					return
				}
				run.lat.add(took)
				sizeMu.Lock()
				run.size = max(run.size, len(body))
				sizeMu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if err := failed.get(); err != nil {
		// A board that ran out of memory shows up here as a broken
		// connection; say so when it is gone.
		select {
		case exit := <-board.exited:
			board.exited <- exit
			return run, fmt.Errorf("%w; bbs exited: %v: %s", err, exit, board.stderr.String())
		default:
		}
		return run, err
	}
	return run, nil
}

// postWholeList posts an empty protobuf request, as a client listing
// everything does (no filter, no cursor, no limit), and reads the whole
// answer.
func postWholeList(ctx context.Context, httpClient *http.Client, url string) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, http.NoBody)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", models.ContentTypeProtobuf)
	req.Header.Set("Accept", models.ContentTypeProtobuf)
	req.Header.Set(models.RequestedByHeader, "bbs-load")
	began := time.Now()
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	took := time.Since(began)
	if err != nil {
		return nil, 0, fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("%s answered %s: %.200q", url, resp.Status, body)
	}
	return body, took, nil
}

// rssSampler reads a process's VmRSS every sampleEvery and keeps the
// highest reading since the last takePeak.
type rssSampler struct {
	pid  int
	done chan struct{}
	quit chan struct{}

	mu   sync.Mutex
	peak float64
	err  error
}

func startRSSSampler(pid int) *rssSampler {
	s := &rssSampler{pid: pid, done: make(chan struct{}), quit: make(chan struct{})}
	go s.run()
	return s
}

func (s *rssSampler) run() {
	defer close(s.done)
	ticker := time.NewTicker(sampleEvery)
	defer ticker.Stop()
	for {
		s.sample()
		select {
		case <-s.quit:
			s.sample()
			return
		case <-ticker.C:
		}
	}
}

func (s *rssSampler) sample() {
	rss, _, err := memoryOf(s.pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.err == nil {
			s.err = fmt.Errorf("sample the board's memory: %w", err)
		}
		return
	}
	s.peak = max(s.peak, rss)
}

// takePeak returns the highest VmRSS since the last call and starts over
// from the next sample.
func (s *rssSampler) takePeak() (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	peak, err := s.peak, s.err
	s.peak = 0
	return peak, err
}

// stop takes one last sample and ends the sampling; it may be called more
// than once.
func (s *rssSampler) stop() {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	<-s.done
}
