// Command bbs-load measures the board through its real HTTP API: desire
// throughput and latency with concurrent clients, latency at a fixed rate,
// and the time to list many actual LRPs.
//
// Without --url it starts a board in-process on a loopback port over a fresh
// database of --driver (a temporary SQLite file, or a new database created
// on the server behind --dsn and dropped afterwards).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"
)

type config struct {
	url          string
	driver       string
	dsn          string
	clients      int
	desires      int
	rate         int
	rateDuration time.Duration
	actualLRPs   int
	listRuns     int
}

func main() {
	var cfg config
	flag.StringVar(&cfg.url, "url", "", "board to load; empty starts one in-process")
	flag.StringVar(&cfg.driver, "driver", "sqlite", "database for the in-process board: sqlite, postgres or mysql")
	flag.StringVar(&cfg.dsn, "dsn", "", "admin DSN of the postgres or mysql server (a fresh database is created on it)")
	flag.IntVar(&cfg.clients, "clients", 32, "concurrent clients for the throughput run")
	flag.IntVar(&cfg.desires, "desires", 10000, "desires in the throughput run")
	flag.IntVar(&cfg.rate, "rate", 500, "desires per second in the fixed-rate run")
	flag.DurationVar(&cfg.rateDuration, "rate-duration", 10*time.Second, "length of the fixed-rate run")
	flag.IntVar(&cfg.actualLRPs, "actual-lrps", 100000, "actual LRPs present for the list run")
	flag.IntVar(&cfg.listRuns, "list-runs", 5, "how many times to list all actual LRPs")
	flag.Parse()

	if err := run(context.Background(), cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bbs-load:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	url := cfg.url
	if url == "" {
		board, err := startBoard(ctx, cfg.driver, cfg.dsn)
		if err != nil {
			return err
		}
		defer board.stop()
		url = board.url
	}
	fmt.Printf("# bbs-load against %s (driver %s), %d cores\n", url, describeTarget(cfg), numCPU())
	l := newLoader(url, cfg.clients)

	throughput, err := l.desireAsFastAsPossible(ctx, "tp", cfg.desires, cfg.clients)
	if err != nil {
		return err
	}
	fmt.Printf("desire throughput: %d desires, %d clients: %.0f desires/s, latency %s\n",
		cfg.desires, cfg.clients, throughput.perSecond(), throughput.latencies.summary())

	fixed, err := l.desireAtRate(ctx, "rate", cfg.rate, cfg.rateDuration)
	if err != nil {
		return err
	}
	fmt.Printf("desire at %d/s for %s: %d desires, latency %s\n",
		cfg.rate, cfg.rateDuration, fixed.count, fixed.latencies.summary())

	if err := l.fillActualLRPs(ctx, cfg.actualLRPs, cfg.clients); err != nil {
		return err
	}
	list, rows, err := l.listActualLRPs(ctx, cfg.listRuns)
	if err != nil {
		return err
	}
	fmt.Printf("list actual LRPs: %d rows, %d runs: %s\n", rows, cfg.listRuns, list.summary())
	return nil
}

func describeTarget(cfg config) string {
	if cfg.url != "" {
		return "external"
	}
	return cfg.driver
}
