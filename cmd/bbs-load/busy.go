package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/convergence/runner"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// The busy scenario measures the API while the board is busy: issue 28's
// "API p99 < 20 ms for desire/update/get while the lease owner passes a
// million instances from its mirror and 1,000 cells bulk-report" (make
// bench's busy-1m: -per-cell 1000 -no-full-reads; the defaults seed
// 1,000 cells × 250 = 250,000 instances, make bench's busy).
//
// -cells × -per-cell RUNNING instances are seeded and an in-process board
// serves them. For -duration (the window), at once:
//
//   - the lease owner converges from its mirror every -pass-every (its first
//     pass, the full read at takeover, runs before the window and must
//     have nothing to do); every later pass may only write to the LRPs
//     the clients desired or updated, and must not touch a seeded one;
//   - a second goroutine reads every row and plans a pass over them every
//     -full-read-every: the pass over every instance, as at takeover or
//     every full_read_interval. It leaves its writes to the lease owner,
//     as a deployment has one writer: two would place the same new
//     instances twice (one skipped as stale), and each placement of the
//     second would move the placement epoch behind the mirror's back and
//     send it to read everything again, which never happens with one
//     board converging;
//   - every cell sends its bulk report every -period, the cells spread
//     evenly over the period (1,000 cells every 30 s: 33 reports a
//     second of 250 instances each);
//   - -clients clients over HTTP each loop, as fast as they are answered:
//     desire a new one-instance LRP, update one of the LRPs it desired
//     (its instances 1 ↔ 2 and its annotation, in turn), get a seeded LRP
//     by guid. The latency of each kind is the figure.
//
// Afterwards every seeded instance must still be RUNNING.
//
// With -bbs, a board binary serves the API instead of the in-process
// board, and its own lease owner converges: its passes every -pass-every
// (at least 1ms), a full read every -full-read-every (or once a day with
// -no-full-reads), as its convergence_interval and
// convergence_full_read_interval. The scenario reads its passes' count and
// time from its /metrics, and cannot check their writes as it does its
// own. This binary migrates and seeds the database, so the board's schema
// must be this binary's.
//
// Back to back, the two convergence loops can keep two cores busy on
// their own: a pass from the mirror plans over every instance in memory,
// and a full read decodes every row. -pass-every, -full-read-every and
// -no-full-reads space them out, or leave the full reads out, to measure
// the API beside a lease owner paced as deployed.

type busyConfig struct {
	target   target
	layout   layout
	perCell  int
	period   time.Duration
	duration time.Duration
	clients  int
	// passEvery and fullReadEvery space the passes (0: back to back). The
	// defaults are harsher than a deployment, whose lease owner passes
	// every 30 s and reads everything every 10 minutes: a pass from the
	// mirror every second, a full read every 10 s.
	passEvery, fullReadEvery time.Duration
	noFullReads              bool
	// bbs, when set, is the board binary that serves and converges.
	bbs string
	// bytesEvery, when set, measures the database this often in the
	// window too, to show the event log bounded by its retention under
	// steady writes (issue 28: "measure the size after 1 hour of busy").
	bytesEvery time.Duration
}

// busyClientPrefix starts the guid of every LRP the clients desire; the
// seeded LRPs are named by the layout's prefix, "busy".
const busyClientPrefix = "client-"

func runBusy(ctx context.Context, args []string) error {
	cfg := busyConfig{layout: layout{prefix: "busy"}}
	flags := flag.NewFlagSet("bbs-load busy", flag.ExitOnError)
	cfg.target.register(flags)
	flags.IntVar(&cfg.layout.cells, "cells", 1000, "reporting cells")
	flags.IntVar(&cfg.layout.zones, "zones", 4, "zones the cells are spread over")
	flags.IntVar(&cfg.perCell, "per-cell", 250, "RUNNING instances each cell reports")
	flags.IntVar(&cfg.layout.instances, "instances", 5, "instances per seeded LRP")
	flags.DurationVar(&cfg.period, "period", 30*time.Second, "how often each cell reports (a rep's bulk report period)")
	flags.DurationVar(&cfg.duration, "duration", 30*time.Second, "the measured window")
	flags.IntVar(&cfg.clients, "clients", 8, "API clients, each sending its next request when the last is answered")
	flags.DurationVar(&cfg.passEvery, "pass-every", time.Second, "start a pass from the mirror at most this often; 0: back to back")
	flags.DurationVar(&cfg.fullReadEvery, "full-read-every", 10*time.Second, "start a full-read pass at most this often; 0: back to back")
	flags.BoolVar(&cfg.noFullReads, "no-full-reads", false, "run no full-read passes in the window")
	flags.DurationVar(&cfg.bytesEvery, "bytes-every", 0, "also measure the database's tables this often during the window (0: only after it)")
	flags.StringVar(&cfg.bbs, "bbs", "", "a board binary to serve and converge instead of the in-process board and lease owner (its schema must be this binary's)")
	flags.Parse(args)
	l := &cfg.layout
	if err := l.fillCells(cfg.perCell); err != nil {
		return err
	}
	if cfg.bbs != "" {
		return runBusyOn(ctx, cfg)
	}

	d, b, err := openServedDatabase(ctx, cfg.target)
	if err != nil {
		return err
	}
	defer d.close()
	defer b.stop()
	fmt.Printf("# bbs-load busy against an in-process board on %s, %s, %d cores\n", d.driver, l.describe(), numCPU())

	began := time.Now()
	if err := seedBusy(ctx, d, cfg); err != nil {
		return err
	}
	cells := cellClients(b.url, *l)
	reports := cellReports(*l)
	step("registered %d cells, seeded %d RUNNING instances (set-up, not measured) in %s", l.cells, l.total(), seconds(time.Since(began)))

	mirror := runner.NewMirror(d.store, nil)
	first, err := convergeMirrored(ctx, d.store, mirror, nil)
	if err != nil {
		return err
	}
	if !first.plan.Writes.Empty() || first.plan.Counts.Running != l.total() {
		return fmt.Errorf("the lease owner's first pass: expected nothing to do for %d running instances, got %s (counts %+v)",
			l.total(), describeWrites(&first.plan.Writes), first.plan.Counts)
	}
	step("the lease owner's first pass read everything into its mirror in %s (before the window, not measured)", seconds(first.total()))

	stopWatching := watchBytes(ctx, d, cfg.bytesEvery)
	w := runBusyWindow(ctx, d.store, mirror, cells, reports, b.url, cfg)
	stopWatching()
	if err := w.failed.get(); err != nil {
		return err
	}

	fullPacing := pacing(cfg.fullReadEvery)
	if cfg.noFullReads {
		fullPacing = "(turned off)"
	}
	step("the lease owner's passes from its mirror, %s: %d in the window, %s; %d writes, all to the clients' LRPs (%s); %d full reads in all (the first pass's included)",
		pacing(cfg.passEvery), w.mirrored.total.count(), w.mirrored.summary(), w.mirroredWrites.count, w.mirroredWrites.describe(), mirror.FullReads)
	step("full-read passes (every row read and planned, writes left to the lease owner), %s: %d in the window, %s",
		fullPacing, w.full.total.count(), w.full.summary())
	step("bulk reports: %d of %d cells' %d instances every %s, %d failed, latency %s; %d instances assigned in answers (the clients' new ones, left unclaimed)",
		w.reports.count, l.cells, cfg.perCell, cfg.period, w.reportsFailed.Load(), w.reports.latencies.summary(), w.assigned.Load())
	if n := w.reportsFailed.Load(); n > 0 {
		step("%d bulk reports failed, the first: %v", n, w.reportsFirstFailure.get())
	}
	if err := newSeeder(d).verifyAllRunning(ctx, l.total(), "the window"); err != nil {
		return err
	}

	conditions := fmt.Sprintf("%d RUNNING instances = %d LRPs × %d, %d cells bulk-reporting every %s, %d lease owner's mirror passes %s, %d full-read passes %s, %d clients closed loop over HTTP for %s",
		l.total(), l.lrps, l.instances, l.cells, cfg.period, w.mirrored.total.count(), pacing(cfg.passEvery),
		w.full.total.count(), fullPacing, cfg.clients, cfg.duration)
	busyFigures(d.driver, conditions, cfg, w)
	return busyBytesFigure(ctx, d, conditions)
}

// seedBusy registers the cells and seeds the RUNNING instances. The cells
// register through the store, present for an hour: the board's presence
// TTL is 30 s and these cells only report, they do not heartbeat, and a
// lapsed cell would have the passes suspect its instances. Each has room
// for as many instances again, for the clients' new ones.
func seedBusy(ctx context.Context, d *database, cfg busyConfig) error {
	l := cfg.layout
	seed := newSeeder(d)
	if err := seed.registerCells(ctx, l.cells, l.zones, cfg.perCell*2, time.Hour); err != nil {
		return err
	}
	return seed.seedLRPs(ctx, l, true)
}

// runBusyOn is the busy scenario with -bbs: the board binary serves the
// clients and the cells, and converges on its own.
func runBusyOn(ctx context.Context, cfg busyConfig) error {
	l := &cfg.layout
	if cfg.passEvery < time.Millisecond {
		return errors.New("-bbs: the board's passes need -pass-every of at least 1ms")
	}
	fullReads := cfg.fullReadEvery
	if cfg.noFullReads {
		fullReads = 24 * time.Hour
	}
	d, err := openFreshDatabase(ctx, cfg.target.driver, cfg.target.dsn)
	if err != nil {
		return err
	}
	defer d.close()
	fmt.Printf("# bbs-load busy against %s on %s, %s, %d cores\n", cfg.bbs, d.driver, l.describe(), numCPU())

	began := time.Now()
	if err := seedBusy(ctx, d, cfg); err != nil {
		return err
	}
	step("registered %d cells, seeded %d RUNNING instances (set-up, not measured) in %s", l.cells, l.total(), seconds(time.Since(began)))

	began = time.Now()
	board, err := startBBS(rssConfig{bbs: cfg.bbs, interval: cfg.passEvery, fullReadInterval: fullReads}, d)
	if err != nil {
		return err
	}
	defer board.stop()
	if _, err := waitForFirstPass(ctx, board, 10*time.Minute); err != nil {
		return err
	}
	step("the board started and its lease owner's first pass read everything in %s (before the window, not measured)", seconds(time.Since(began)))

	passes := func() (count, sum float64, err error) {
		if count, err = board.metric(`corkboard_convergence_lrp_duration_seconds_count{pass="full"}`); err != nil {
			return 0, 0, err
		}
		sum, err = board.metric(`corkboard_convergence_lrp_duration_seconds_sum{pass="full"}`)
		return count, sum, err
	}
	countBefore, sumBefore, err := passes()
	if err != nil {
		return err
	}
	stopWatching := watchBytes(ctx, d, cfg.bytesEvery)
	w := runBusyWindow(ctx, nil, nil, cellClients(board.url, *l), cellReports(*l), board.url, cfg)
	stopWatching()
	if err := w.failed.get(); err != nil {
		return err
	}
	countAfter, sumAfter, err := passes()
	if err != nil {
		return err
	}
	inWindow := int(countAfter - countBefore)
	mean := time.Duration(0)
	if inWindow > 0 {
		mean = time.Duration((sumAfter - sumBefore) / float64(inWindow) * float64(time.Second))
	}
	step("the board's own passes, every %s, full reads every %s: %d in the window, mean %s (its /metrics)", cfg.passEvery, fullReads, inWindow, seconds(mean))
	step("bulk reports: %d of %d cells' %d instances every %s, %d failed, latency %s; %d instances assigned in answers (the clients' new ones, left unclaimed)",
		w.reports.count, l.cells, cfg.perCell, cfg.period, w.reportsFailed.Load(), w.reports.latencies.summary(), w.assigned.Load())
	if n := w.reportsFailed.Load(); n > 0 {
		step("%d bulk reports failed, the first: %v", n, w.reportsFirstFailure.get())
	}
	if _, hwm, err := memoryOf(board.cmd.Process.Pid); err == nil {
		step("the board's peak RSS (VmHWM): %.0f MB", hwm)
	}
	if err := newSeeder(d).verifyAllRunning(ctx, l.total(), "the window"); err != nil {
		return err
	}
	conditions := fmt.Sprintf("%d RUNNING instances = %d LRPs × %d, %d cells bulk-reporting every %s, %s's own passes every %s (%d in the window), full reads every %s, %d clients closed loop over HTTP for %s",
		l.total(), l.lrps, l.instances, l.cells, cfg.period, cfg.bbs, cfg.passEvery, inWindow, fullReads, cfg.clients, cfg.duration)
	busyFigures(d.driver, conditions, cfg, w)
	return busyBytesFigure(ctx, d, conditions)
}

// watchBytes measures the database every interval (none for 0) until the
// returned stop is called, each measurement a step.
func watchBytes(ctx context.Context, d *database, interval time.Duration) (stop func()) {
	if interval <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		began := time.Now()
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
			}
			value, _, err := busyBytes(ctx, d)
			if err != nil {
				step("database after %s of the window: %v", seconds(time.Since(began)), err)
				continue
			}
			step("database after %s of the window: %s", seconds(time.Since(began)), value)
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// busyBytesFigure prints the database's size after the window.
func busyBytesFigure(ctx context.Context, d *database, conditions string) error {
	value, how, err := busyBytes(ctx, d)
	if err != nil {
		return fmt.Errorf("database size: %w", err)
	}
	figure("busy.db-bytes", d.driver, conditions+", after the window, "+how, value, "", true)
	return nil
}

// busyBytes is the database's size, each table's, and how many events
// its log keeps: under steady writes the log's retention (an hour, at
// most 1,000,000 events, by default) is what bounds it.
func busyBytes(ctx context.Context, d *database) (value, how string, err error) {
	tables, how, err := databaseBytes(ctx, d.conn, d.driver)
	if err != nil {
		return "", "", err
	}
	var logged int64
	if err := d.conn.QueryRowContext(ctx, "SELECT COALESCE(SUM(event_count), 0) FROM event_log").Scan(&logged); err != nil {
		return "", "", err
	}
	return describeTables(tables) + fmt.Sprintf("; %d events in the log", logged), how, nil
}

// busyFigures prints the latency of each kind of client request.
func busyFigures(driver, conditions string, cfg busyConfig, w *busyWindow) {
	for _, kind := range []struct {
		name string
		r    *requests
	}{{"desire", w.desires}, {"update", w.updates}, {"get", w.gets}} {
		n, failed := kind.r.count(), int(kind.r.failed.Load())
		if failed > 0 {
			step("%d %s requests failed, the first: %v", failed, kind.name, kind.r.first.get())
		}
		p99 := kind.r.percentile(0.99)
		figure("busy."+kind.name, driver, conditions,
			fmt.Sprintf("%d requests (%.0f/s), %d failed, latency %s", n, float64(n)/cfg.duration.Seconds(), failed, kind.r.summary()),
			"p99 < 20ms", n > 0 && failed == 0 && p99 < 20*time.Millisecond)
	}
}

func pacing(every time.Duration) string {
	if every <= 0 {
		return "back to back"
	}
	return "every " + every.String()
}

// busyWindow is what happened in the measured window.
type busyWindow struct {
	failed                 firstError
	desires, updates, gets *requests
	mirrored, full         passTimes
	mirroredWrites         writeTally
	reports                runResult
	assigned               atomic.Int64
	reportsFailed          atomic.Int64
	reportsFirstFailure    firstError
}

// runBusyWindow runs the background load and the clients for the window
// and waits for all of them; with no store (a board binary converging on
// its own) it runs no passes. A pass or report under way when the window
// ends is finished, not cancelled, so that it is not mistaken for a
// failure.
func runBusyWindow(ctx context.Context, store db.DB, mirror *runner.Mirror, cells []*simulatedCell,
	reports [][]*models.ReportedInstance, url string, cfg busyConfig) *busyWindow {
	w := &busyWindow{
		desires: &requests{}, updates: &requests{}, gets: &requests{},
		mirrored: newPassTimes(),
		full:     newPassTimes(),
	}
	end := time.Now().Add(cfg.duration)
	open := func() bool { return time.Now().Before(end) && w.failed.get() == nil }
	var wg sync.WaitGroup

	// every paces a loop: it waits until interval has passed since the
	// last start, or the window closes, and says whether to go on.
	every := func(interval time.Duration, last *time.Time) bool {
		if wait := time.Until(last.Add(interval)); wait > 0 {
			time.Sleep(min(wait, time.Until(end)))
		}
		*last = time.Now()
		return open()
	}

	// passes runs one kind of pass every interval, each checked and
	// recorded, until the window closes or one fails.
	passes := func(what string, interval time.Duration, run func() (pass, error), record func(pass)) {
		defer wg.Done()
		var last time.Time
		for every(interval, &last) {
			p, err := run()
			if err == nil {
				err = onlyClientWrites(what, &p.plan.Writes)
			}
			if err != nil {
				w.failed.set(err)
				return
			}
			record(p)
		}
	}
	if store != nil {
		wg.Add(1)
		go passes("a pass from the mirror", cfg.passEvery,
			func() (pass, error) { return convergeMirrored(ctx, store, mirror, nil) },
			func(p pass) {
				w.mirrored.add(p)
				w.mirroredWrites.add(&p.plan.Writes)
			})
	}
	if store != nil && !cfg.noFullReads {
		wg.Add(1)
		go passes("a full-read pass", cfg.fullReadEvery,
			func() (pass, error) {
				return planWith(func() (*convergence.Snapshot, error) { return store.ConvergenceSnapshot(ctx, nil) })
			},
			w.full.add)
	}

	wg.Add(1)
	go func() {
		defer wg.Done()
		var err error
		w.reports, err = sendReportsChecked(ctx, cells, reports, cfg.period, cfg.duration, func(result *client.BulkReportResult, err error) error {
			if err != nil {
				// Under the load, most likely a timeout: counted, as
				// the clients' failures are.
				w.reportsFailed.Add(1)
				w.reportsFirstFailure.set(err)
				return nil
			}
			if len(result.Stop) > 0 {
				return fmt.Errorf("told to stop %d instances, want none", len(result.Stop))
			}
			for _, a := range result.Assigned {
				if !strings.HasPrefix(a.ProcessGuid, busyClientPrefix) {
					return fmt.Errorf("told to claim %s/%d, a seeded instance", a.ProcessGuid, a.Index)
				}
			}
			w.assigned.Add(int64(len(result.Assigned)))
			return nil
		})
		if err != nil {
			w.failed.set(err)
		}
	}()

	api := client.New(url, client.WithHTTPClient(pooledHTTPClient(cfg.clients*2)))
	for c := range cfg.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			busyClient(ctx, api, c, cfg.layout, open, w)
		}()
	}
	wg.Wait()
	return w
}

// busyClient is one API client of the window: desire, update, get, over
// and over while the window is open. A request that fails (a timeout
// under the load, most likely) is counted, not timed, and the client goes
// on; the figures say how many failed.
func busyClient(ctx context.Context, api *client.Client, c int, l layout, open func() bool, w *busyWindow) {
	var guids []string
	var instances []int32
	random := rand.New(rand.NewPCG(uint64(c), 1))
	for round := 0; open(); round++ {
		guid := fmt.Sprintf("%s%d-%d", busyClientPrefix, c, round)
		desired := w.desires.time(func() error {
			_, err := api.DesireLRP(ctx, exampleLRP(guid, 1))
			return err
		})
		if desired {
			guids, instances = append(guids, guid), append(instances, 1)
		}

		// Its LRPs in turn, so each is updated about as often; every
		// other round changes the instances (1 → 2 → 1), which gives
		// the passes something to do, and the others the annotation.
		if len(guids) > 0 {
			i := round % len(guids)
			update := &models.DesiredLRPUpdate{}
			next := instances[i]
			if round%2 == 0 {
				next = 3 - next
				update.Instances = &next
			} else {
				annotation := fmt.Sprintf("round %d", round)
				update.Annotation = &annotation
			}
			updated := w.updates.time(func() error {
				_, err := api.UpdateDesiredLRP(ctx, guids[i], update)
				return err
			})
			if updated {
				instances[i] = next
			}
		}

		seeded := l.guid(random.IntN(l.lrps))
		w.gets.time(func() error {
			_, err := api.DesiredLRPByProcessGuid(ctx, seeded)
			return err
		})
	}
}

// requests are the outcomes of one kind of request.
type requests struct {
	latencies
	failed atomic.Int64
	first  firstError
}

// time sends one request: its latency is kept when it succeeds, and
// otherwise it is counted as failed. It says whether it succeeded.
func (r *requests) time(call func() error) bool {
	began := time.Now()
	if err := call(); err != nil {
		r.failed.Add(1)
		r.first.set(err)
		return false
	}
	r.add(time.Since(began))
	return true
}

// onlyClientWrites fails when a plan writes to a seeded LRP: nothing but
// the clients changes anything in the window, so a pass has nothing to do
// except for the LRPs they desired or updated.
func onlyClientWrites(what string, w *convergence.ConvergenceWrites) error {
	for _, guid := range w.ProcessGuids() {
		if !strings.HasPrefix(guid, busyClientPrefix) {
			return fmt.Errorf("%s planned writes to the seeded LRP %s, which nothing changed: %s", what, guid, describeWrites(w))
		}
	}
	return nil
}

// writeTally adds up the writes of many passes, by kind.
type writeTally struct {
	count                                int
	places, creates, deletes, unassigned int
	placementFailed                      int
}

func (t *writeTally) add(w *convergence.ConvergenceWrites) {
	t.count += writeCount(w)
	t.places += len(w.Place)
	t.creates += len(w.Create)
	t.deletes += len(w.Delete)
	t.unassigned += len(w.Unassign)
	t.placementFailed += len(w.PlacementFailed)
}

func (t *writeTally) describe() string {
	return fmt.Sprintf("%d places, %d creates, %d deletes, %d unassigns, %d placement failures",
		t.places, t.creates, t.deletes, t.unassigned, t.placementFailed)
}
