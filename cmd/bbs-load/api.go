package main

import (
	"context"
	"flag"
	"fmt"
	"time"
)

// The api scenario: desire throughput and latency with concurrent clients,
// latency at a fixed rate, and the time to list many actual LRPs, all
// through the real HTTP API. Without -url it starts a board in-process.

type apiConfig struct {
	url          string
	target       target
	clients      int
	desires      int
	rate         int
	rateDuration time.Duration
	actualLRPs   int
	listRuns     int
}

func runAPI(ctx context.Context, args []string) error {
	var cfg apiConfig
	flags := flag.NewFlagSet("bbs-load api", flag.ExitOnError)
	flags.StringVar(&cfg.url, "url", "", "board to load; empty starts one in-process")
	cfg.target.register(flags)
	flags.IntVar(&cfg.clients, "clients", 32, "concurrent clients for the throughput run")
	flags.IntVar(&cfg.desires, "desires", 10000, "desires in the throughput run")
	flags.IntVar(&cfg.rate, "rate", 500, "desires per second in the fixed-rate run")
	flags.DurationVar(&cfg.rateDuration, "rate-duration", 10*time.Second, "length of the fixed-rate run")
	flags.IntVar(&cfg.actualLRPs, "actual-lrps", 100000, "actual LRPs present for the list run")
	flags.IntVar(&cfg.listRuns, "list-runs", 5, "how many times to list all actual LRPs")
	flags.Parse(args)

	url := cfg.url
	if url == "" {
		d, b, err := openServedDatabase(ctx, cfg.target)
		if err != nil {
			return err
		}
		defer d.close()
		defer b.stop()
		url = b.url
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

func describeTarget(cfg apiConfig) string {
	if cfg.url != "" {
		return "external"
	}
	return cfg.target.driver
}
