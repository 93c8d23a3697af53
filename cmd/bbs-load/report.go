package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/models"
)

// The report scenario measures bulk reports through the real HTTP API of
// an in-process board. -cells cells each run -per-cell RUNNING instances
// and report all of them every -period. The schedule is the real one,
// just shorter: each cell reports first at its own offset (cells spread
// evenly over one period, -cells/-period reports a second) and then every
// period, for -duration; every report is sent on time whether or not
// earlier ones were answered.
//
// Then the board restarts (a new connection pool, store and HTTP server on
// the same database) with -restart-claimed of the instances left CLAIMED,
// as if their starts were lost while it was down, and every cell reports
// within -restart-window. The figure is the time until every report is
// answered, which is when the board has reconciled it; afterwards every
// instance must be RUNNING.

type reportConfig struct {
	target         target
	layout         layout
	perCell        int
	period         time.Duration
	duration       time.Duration
	restartWindow  time.Duration
	restartClaimed float64
}

func runReport(ctx context.Context, args []string) error {
	cfg := reportConfig{layout: layout{prefix: "rep"}}
	flags := flag.NewFlagSet("bbs-load report", flag.ExitOnError)
	cfg.target.register(flags)
	flags.IntVar(&cfg.layout.cells, "cells", 1000, "reporting cells")
	flags.IntVar(&cfg.layout.zones, "zones", 4, "zones the cells are spread over")
	flags.IntVar(&cfg.perCell, "per-cell", 250, "RUNNING instances each cell reports")
	flags.IntVar(&cfg.layout.instances, "instances", 5, "instances per LRP")
	flags.DurationVar(&cfg.period, "period", 30*time.Second, "how often each cell reports")
	flags.DurationVar(&cfg.duration, "duration", 60*time.Second, "how long the scheduled reports run")
	flags.DurationVar(&cfg.restartWindow, "restart-window", time.Second, "after the restart, every cell reports within this")
	flags.Float64Var(&cfg.restartClaimed, "restart-claimed", 0.1, "fraction of instances left CLAIMED across the restart, for the reports to reconcile")
	flags.Parse(args)
	l := &cfg.layout
	if err := l.fillCells(cfg.perCell); err != nil {
		return err
	}

	d, b, err := openServedDatabase(ctx, cfg.target)
	if err != nil {
		return err
	}
	defer d.close()
	defer func() { b.stop() }()
	fmt.Printf("# bbs-load report against an in-process board on %s, %s, %d cores\n", d.driver, l.describe(), numCPU())

	began := time.Now()
	cells, err := registerSimulatedCells(ctx, b.url, *l, cfg.perCell*2)
	if err != nil {
		return err
	}
	seed := newSeeder(d)
	if err := seed.seedLRPs(ctx, *l, true); err != nil {
		return err
	}
	reports := cellReports(*l)
	step("registered %d cells, seeded %d RUNNING instances (set-up, not measured) in %s", l.cells, l.total(), seconds(time.Since(began)))

	steady, err := sendReports(ctx, cells, reports, cfg.period, cfg.duration)
	if err != nil {
		return err
	}
	p99 := steady.latencies.percentile(0.99)
	figure("report.steady", d.driver,
		fmt.Sprintf("%d cells × %d RUNNING instances, each reporting every %s for %s: %d reports at %.0f/s, over HTTP",
			l.cells, cfg.perCell, cfg.period, cfg.duration, steady.count, float64(l.cells)/cfg.period.Seconds()),
		"latency "+steady.latencies.summary(),
		"p99 < 50ms", p99 < 50*time.Millisecond)

	claimed := chooseBreakage(*l, 0, cfg.restartClaimed, 0).crashed
	if err := seed.markClaimed(ctx, claimed); err != nil {
		return err
	}
	b.stop()
	if err := d.reopen(ctx); err != nil {
		return err
	}
	if b, err = startBoard(d.store, d.hub); err != nil {
		return err
	}
	cells = cellClients(b.url, *l)
	step("restarted the board with %d instances CLAIMED (their starts lost)", len(claimed))

	restart, err := sendReports(ctx, cells, reports, cfg.restartWindow, cfg.restartWindow)
	if err != nil {
		return err
	}
	if err := seed.verifyAllRunning(ctx, l.total(), "every cell reported"); err != nil {
		return err
	}
	figure("report.restart", d.driver,
		fmt.Sprintf("%d cells × %d instances reporting within %s after a board restart, %d CLAIMED to reconcile",
			l.cells, cfg.perCell, cfg.restartWindow, len(claimed)),
		fmt.Sprintf("all %d reports answered and reconciled in %s (report latency %s)",
			restart.count, seconds(restart.elapsed), restart.latencies.summary()),
		"< 10s", restart.elapsed < 10*time.Second)
	return nil
}

// cellReports is what each cell of the layout runs, as it reports it:
// exactly the rows seedLRPs wrote.
func cellReports(l layout) [][]*models.ReportedInstance {
	definitionID := models.GenerateDefinitionID(benchDefinition())
	reports := make([][]*models.ReportedInstance, l.cells)
	for k := range l.total() {
		lrp, index := k/l.instances, k%l.instances
		guid := l.guid(lrp)
		cell := l.cellOf(lrp, index)
		reports[cell] = append(reports[cell], &models.ReportedInstance{
			ProcessGuid:  guid,
			Index:        int32(index),
			Presence:     models.ActualLRP_ORDINARY,
			InstanceGuid: instanceGuid(guid, index),
			DefinitionId: definitionID,
			State:        models.ActualLRP_RUNNING,
			NetInfo:      netInfo(cell, k/l.cells),
			Routable:     true,
		})
	}
	return reports
}

// cellClients makes a client for every cell of the layout, as reps
// (re)connecting to a board would. Against a board on a loopback address,
// each cell connects from a loopback address of its own (cellAddress), as
// each rep has its own: the board counts callers by their address on
// plain HTTP, and its per-caller limits are for one rep, not for a
// thousand cells reporting as one caller. Otherwise, or past
// maxOwnAddresses cells, the cells share one connection pool.
func cellClients(boardURL string, l layout) []*simulatedCell {
	shared := pooledHTTPClient(l.cells * 4)
	own := l.cells <= maxOwnAddresses && onLoopback(boardURL)
	cells := make([]*simulatedCell, l.cells)
	for i := range cells {
		httpClient := shared
		if own {
			httpClient = httpClientFrom(cellAddress(i), 4)
		}
		cells[i] = &simulatedCell{index: i, client: client.NewCellClient(boardURL, cellID(i), client.WithHTTPClient(httpClient))}
	}
	return cells
}

// cellAddress is cell i's loopback address: 127.1.0.1 for the first, then
// on through 127.1.0.254, 127.1.1.1, … (a last byte of 0 or 255 is left out).
func cellAddress(i int) net.IP {
	return net.IPv4(127, 1, byte(i/254), byte(i%254+1))
}

// maxOwnAddresses is how many cells cellAddress numbers.
const maxOwnAddresses = 256 * 254

// onLoopback says whether rawURL's host is an IPv4 loopback address, which
// the cells' own addresses can reach.
func onLoopback(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return ip.To4() != nil && ip.IsLoopback()
}

// httpClientFrom is pooledHTTPClient connecting from the address from.
func httpClientFrom(from net.IP, connections int) *http.Client {
	c := pooledHTTPClient(connections)
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: from}, Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	c.Transport.(*http.Transport).DialContext = dialer.DialContext
	return c
}

// sendReports has each cell report every period, cell i first at
// i×period/cells, until duration has passed since the first report. It
// waits for every answer; an error, or an answer that asks a cell to stop
// an instance or claim one, fails the run.
func sendReports(ctx context.Context, cells []*simulatedCell, reports [][]*models.ReportedInstance, period, duration time.Duration) (runResult, error) {
	return sendReportsChecked(ctx, cells, reports, period, duration, func(result *client.BulkReportResult, err error) error {
		if err != nil {
			return err
		}
		if len(result.Stop) > 0 || len(result.Assigned) > 0 {
			return fmt.Errorf("told to stop %d and claim %d instances, want none", len(result.Stop), len(result.Assigned))
		}
		return nil
	})
}

// sendReportsChecked is sendReports with the check of each answer, or of
// the error instead, given: an error from check fails the run.
func sendReportsChecked(ctx context.Context, cells []*simulatedCell, reports [][]*models.ReportedInstance, period, duration time.Duration,
	check func(*client.BulkReportResult, error) error) (runResult, error) {
	type send struct {
		at   time.Duration
		cell int
	}
	var schedule []send
	for i := range cells {
		offset := time.Duration(i) * period / time.Duration(len(cells))
		for at := offset; at < duration; at += period {
			schedule = append(schedule, send{at, i})
		}
	}
	slices.SortFunc(schedule, func(a, b send) int { return cmp.Compare(a.at, b.at) })

	lat := &latencies{}
	var failed firstError
	var wg sync.WaitGroup
	began := time.Now()
	for _, s := range schedule {
		if wait := time.Until(began.Add(s.at)); wait > 0 {
			time.Sleep(wait)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cells[s.cell]
			sent := time.Now()
			result, err := c.client.BulkReport(ctx, reports[s.cell])
			lat.add(time.Since(sent))
			if err := check(result, err); err != nil {
				failed.set(fmt.Errorf("bulk report of %s: %w", c.client.CellID(), err))
			}
		}()
	}
	wg.Wait()
	if err := failed.get(); err != nil {
		return runResult{}, err
	}
	return runResult{count: len(schedule), elapsed: time.Since(began), latencies: lat}, nil
}

// markClaimed turns RUNNING instances back to CLAIMED without net info,
// as if their starts never reached the board (set-up, not measured).
func (s *seeder) markClaimed(ctx context.Context, keys []instanceKey) error {
	tx, err := s.conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for index, guids := range byIndex(keys) {
		for batch := range slices.Chunk(guids, 1000) {
			query := "UPDATE actual_lrps SET state = 'CLAIMED', net_info = NULL, routable = ?, " +
				"modification_tag_index = modification_tag_index + 1 " +
				"WHERE presence = 'ORDINARY' AND instance_index = ? AND process_guid IN " + inList(len(batch))
			if _, err := tx.ExecContext(ctx, dialect.Rebind(dialect.Name(s.driver), query), append([]any{false, index}, stringArgs(batch)...)...); err != nil {
				return fmt.Errorf("mark instances CLAIMED: %w", err)
			}
		}
	}
	return tx.Commit()
}
