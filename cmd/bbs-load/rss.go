package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The rss scenario measures the board's memory: it seeds a database with
// RUNNING instances on present cells, starts bin/bbs on it as its own
// process with a short convergence interval, sends it one round of cell
// heartbeats and bulk reports, waits for -passes convergence passes, and
// reads VmRSS (now) and VmHWM (the peak) from /proc/<pid>/status.

type rssConfig struct {
	target   target
	layout   layout
	bbs      string
	interval time.Duration
	// fullReadInterval, when set, is the board's
	// convergence_full_read_interval (its own default otherwise).
	fullReadInterval time.Duration
	passes           int
	timeout          time.Duration
	// reportWindow is how long the cells take to send their one round of
	// bulk reports, spread evenly over it.
	reportWindow time.Duration
}

func runRSS(ctx context.Context, args []string) error {
	cfg := rssConfig{layout: layout{prefix: "rss"}}
	flags := flag.NewFlagSet("bbs-load rss", flag.ExitOnError)
	cfg.target.register(flags)
	flags.StringVar(&cfg.bbs, "bbs", "bin/bbs", "the bbs binary to start")
	flags.IntVar(&cfg.layout.lrps, "lrps", 20000, "LRPs")
	flags.IntVar(&cfg.layout.instances, "instances", 5, "instances per LRP")
	flags.IntVar(&cfg.layout.cells, "cells", 1000, "cells")
	flags.IntVar(&cfg.layout.zones, "zones", 4, "zones the cells are spread over")
	flags.DurationVar(&cfg.interval, "interval", 2*time.Second, "the board's convergence_interval")
	flags.IntVar(&cfg.passes, "passes", 5, "convergence passes to wait for after the traffic")
	flags.DurationVar(&cfg.timeout, "timeout", 3*time.Minute, "give up when the board has not made the passes by then")
	flags.DurationVar(&cfg.reportWindow, "report-window", time.Second, "the cells' one round of bulk reports is spread over this")
	flags.Parse(args)
	l := cfg.layout
	if _, err := os.Stat(cfg.bbs); err != nil {
		return fmt.Errorf("-bbs %s: %w (make build makes it)", cfg.bbs, err)
	}

	d, err := openFreshDatabase(ctx, cfg.target.driver, cfg.target.dsn)
	if err != nil {
		return err
	}
	defer d.close()
	fmt.Printf("# bbs-load rss of %s on %s, %s, %d cores\n", cfg.bbs, d.driver, l.describe(), numCPU())
	seed := newSeeder(d)
	slots := l.total()/l.cells*2 + 1
	if err := seed.registerCells(ctx, l.cells, l.zones, slots, time.Hour); err != nil {
		return err
	}
	if err := seed.seedLRPs(ctx, l, true); err != nil {
		return err
	}
	step("seeded %s, all RUNNING (set-up)", l.describe())

	board, err := startBBS(cfg, d)
	if err != nil {
		return err
	}
	defer board.stop()

	// The cells report once the board has read everything (its first
	// pass, as at takeover): at a million instances that read takes
	// seconds, and reports arriving meanwhile only queue.
	if err := board.waitForPassCount(ctx, 0, 1, cfg.timeout); err != nil {
		return err
	}
	cells, err := registerSimulatedCells(ctx, board.url, l, slots)
	if err != nil {
		return err
	}
	if _, err := sendReports(ctx, cells, cellReports(l), cfg.reportWindow, cfg.reportWindow); err != nil {
		return err
	}
	step("sent %d heartbeats and %d bulk reports", l.cells, l.cells)

	if err := board.waitForPasses(ctx, cfg.passes, cfg.timeout); err != nil {
		return err
	}
	rss, hwm, err := memoryOf(board.cmd.Process.Pid)
	if err != nil {
		return err
	}
	passSum, err := board.metric(`corkboard_convergence_lrp_duration_seconds_sum{pass="full"}`)
	if err != nil {
		return err
	}
	passCount, err := board.metric(`corkboard_convergence_lrp_duration_seconds_count{pass="full"}`)
	if err != nil {
		return err
	}
	if err := board.stop(); err != nil {
		return err
	}
	perHundredThousand := hwm / (float64(l.total()) / 100000)
	// Issue 3's target, and issue 18's for a million instances.
	target, limit := "< 150 MB per 100,000 instances", 150.0
	if l.total() >= 1_000_000 {
		target, limit = "< 100 MB per 100,000 instances", 100
	}
	meanPass := "none"
	if passCount > 0 {
		meanPass = seconds(time.Duration(passSum / passCount * float64(time.Second)))
	}
	figure("rss.board", d.driver,
		fmt.Sprintf("bin/bbs with %s RUNNING, convergence every %s, after %.0f full passes (mean %s), %d heartbeats and %d bulk reports",
			l.describe(), cfg.interval, passCount, meanPass, l.cells, l.cells),
		fmt.Sprintf("VmHWM %.0f MB, VmRSS %.0f MB: %.0f MB peak per 100,000 instances", hwm, rss, perHundredThousand),
		target, perHundredThousand < limit)
	return nil
}

// bbsProcess is bin/bbs running on the seeded database.
type bbsProcess struct {
	cmd *exec.Cmd
	url string
	// dir is the board's data dir and config, removed by stop.
	dir    string
	stderr *lockedBuffer
	exited chan error

	stopOnce sync.Once
	stopErr  error
}

// startBBS writes a config for the database in a temporary data dir and
// starts the board, waiting for the log line that carries its URL. stop
// removes the dir.
func startBBS(cfg rssConfig, d *database) (*bbsProcess, error) {
	dir, err := os.MkdirTemp("", "bbs-load-board")
	if err != nil {
		return nil, err
	}
	p, err := startBBSIn(cfg, dir, d)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return p, nil
}

func startBBSIn(cfg rssConfig, dir string, d *database) (*bbsProcess, error) {
	config := map[string]any{
		"listen_address":       "127.0.0.1:0",
		"database_driver":      d.driver,
		"database_dsn":         d.created.DSN,
		"data_dir":             dir,
		"log_level":            "info",
		"convergence_interval": cfg.interval.String(),
		// Long enough that no cell expires while the scenario runs.
		"cell_presence_ttl": "10m",
	}
	if cfg.fullReadInterval > 0 {
		config["convergence_full_read_interval"] = cfg.fullReadInterval.String()
	}
	raw, err := json.Marshal(config)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "board.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.bbs, "-config", path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &bbsProcess{cmd: cmd, dir: dir, stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	urls := make(chan string, 1)
	go p.readLogs(stdout, urls)
	go func() { p.exited <- cmd.Wait() }()
	select {
	case p.url = <-urls:
		return p, nil
	case err := <-p.exited:
		p.exited <- err
		return nil, fmt.Errorf("bbs exited before listening: %v: %s", err, p.stderr.String())
	case <-time.After(2 * time.Minute):
		p.stop()
		return nil, errors.New("bbs did not log a listening URL within 2m")
	}
}

// pause waits d between two looks at what the board does, or fails when
// the board exits or ctx ends first.
func (p *bbsProcess) pause(ctx context.Context, d time.Duration) error {
	select {
	case err := <-p.exited:
		p.exited <- err
		return fmt.Errorf("bbs exited: %v: %s", err, p.stderr.String())
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// readLogs finds the listening URL in the board's log lines and drains
// the rest.
func (p *bbsProcess) readLogs(stdout io.Reader, urls chan<- string) {
	scanner := bufio.NewScanner(stdout)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		var line struct {
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		}
		if json.Unmarshal(scanner.Bytes(), &line) != nil {
			continue
		}
		if strings.HasSuffix(line.Message, ".listening") {
			if url, ok := line.Data["url"].(string); ok {
				select {
				case urls <- url:
				default:
				}
			}
		}
	}
	io.Copy(io.Discard, stdout)
}

// fullPasses is the runner's counter of completed full passes.
const fullPasses = `corkboard_convergence_lrp_runs_total{pass="full"}`

// waitForPasses waits until the board has completed n more full
// convergence passes, as its /metrics counts them.
func (p *bbsProcess) waitForPasses(ctx context.Context, n int, timeout time.Duration) error {
	start, err := p.metric(fullPasses)
	if err != nil {
		return err
	}
	return p.waitForPassCount(ctx, start, n, timeout)
}

// waitForPassCount waits until the board has made n full passes more than
// start.
func (p *bbsProcess) waitForPassCount(ctx context.Context, start float64, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		now, err := p.metric(fullPasses)
		if err != nil {
			return err
		}
		if now-start >= float64(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bbs made %.0f of %d convergence passes in %s", now-start, n, timeout)
		}
		if err := p.pause(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// metric reads one sample, named with its labels as /metrics prints it.
func (p *bbsProcess) metric(sample string) (float64, error) {
	resp, err := http.Get(p.url + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if value, ok := strings.CutPrefix(line, sample+" "); ok {
			return strconv.ParseFloat(value, 64)
		}
	}
	return 0, fmt.Errorf("bbs /metrics has no %s", sample)
}

// stop sends SIGTERM and waits for the board to drain and exit.
func (p *bbsProcess) stop() error {
	p.stopOnce.Do(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.exited:
			if err != nil {
				p.stopErr = fmt.Errorf("bbs exited with %v: %s", err, p.stderr.String())
			}
		case <-time.After(time.Minute):
			p.cmd.Process.Kill()
			p.stopErr = errors.New("bbs did not exit within 1m of SIGTERM; killed")
		}
		os.RemoveAll(p.dir)
	})
	return p.stopErr
}

// memoryOf reads VmRSS and VmHWM of a process, in MB (10^6 bytes; /proc
// counts KiB).
func memoryOf(pid int) (rss, hwm float64, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		kb, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "VmRSS:":
			rss = kb * 1024 / 1e6
		case "VmHWM:":
			hwm = kb * 1024 / 1e6
		}
	}
	if rss == 0 || hwm == 0 {
		return 0, 0, fmt.Errorf("no VmRSS/VmHWM in /proc/%d/status", pid)
	}
	return rss, hwm, nil
}

// lockedBuffer collects the board's stderr while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
