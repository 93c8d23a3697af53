// Command bbs-load measures the board. Each scenario is a subcommand,
// `bbs-load SCENARIO [flags]` (api when none is named); `bbs-load help`
// lists them with one line each (the scenarios table below), and
// `bbs-load ratios < LOG` is not a scenario: it prints new ÷ old per
// figure from the tagged figure lines of hack/bench-compare.sh.
//
// Every scenario runs on a fresh database of -driver (a temporary SQLite
// file, or a new database created on the server behind -dsn) and drops it
// afterwards. `bbs-load SCENARIO -h` lists a scenario's flags; the sizes
// are all flags. Figures are printed one per line, starting with
// "figure", with the conditions they were measured under.
//
// BBS_LOAD_CPU_PROFILE=FILE writes a CPU profile of the whole run (the
// in-process board included) to FILE, for go tool pprof.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
)

type scenario struct {
	name string
	// summary is the scenario's line in `bbs-load help`.
	summary string
	run     func(ctx context.Context, args []string) error
}

var scenarios = []scenario{
	{"api", "desire throughput and latency through the HTTP API, and listing many actual LRPs (the default)", runAPI},
	{"converge", "convergence passes over 250,000 instances: steady state, repairs, placing 100,000", runConverge},
	{"lifecycle", "claim + start writes from concurrent cells", runLifecycle},
	{"report", "cells bulk-reporting on a schedule, then all at once after a board restart", runReport},
	{"rss", "the memory of a bin/bbs process converging 100,000 instances", runRSS},
	{"rollout", "a rolling update of 10,000 instances, surge 25%: each pass and the whole rollout", runRollout},
	{"operations", "listing 100,000 operations page by page", runOperations},
	{"lists", "the memory of a bin/bbs process while 8 clients list 20,000 LRPs whole at once", runLists},
	{"peer", "the workload Diego's BBS was measured on: 10,000 LRPs, 100 cells, 16 clients", runPeer},
	{"busy", "desire / update / get latency while the lease owner converges 250,000 instances", runBusy},
	{"ratios", "not a scenario: new ÷ old per figure from hack/bench-compare.sh's log on stdin", runRatios},
}

// isHelp tells whether the first argument asks for the list of scenarios
// rather than a scenario's own flags (`bbs-load api -h` shows those).
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// printHelp lists every scenario with its one line, in the order of
// scenarios.
func printHelp(w io.Writer) {
	fmt.Fprintln(w, "Usage: bbs-load [SCENARIO] [flags]   (no scenario: api)")
	fmt.Fprintln(w, "       bbs-load SCENARIO -h          (the scenario's flags; the sizes are all flags)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Scenarios:")
	width := 0
	for _, s := range scenarios {
		width = max(width, len(s.name))
	}
	for _, s := range scenarios {
		fmt.Fprintf(w, "  %-*s  %s\n", width, s.name, s.summary)
	}
}

func main() {
	args := os.Args[1:]
	if len(args) > 0 && isHelp(args[0]) {
		printHelp(os.Stdout)
		return
	}
	name := "api"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	for _, s := range scenarios {
		if s.name == name {
			stopProfile := startCPUProfile(os.Getenv("BBS_LOAD_CPU_PROFILE"))
			err := s.run(context.Background(), args)
			stopProfile()
			if err != nil {
				fmt.Fprintf(os.Stderr, "bbs-load %s: %v\n", name, err)
				os.Exit(1)
			}
			return
		}
	}
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.name
	}
	fmt.Fprintf(os.Stderr, "bbs-load: unknown scenario %q (want one of: %s)\n\n", name, strings.Join(names, ", "))
	printHelp(os.Stderr)
	os.Exit(2)
}

// startCPUProfile profiles the process into path until the returned func
// is called; with path "" it does nothing.
func startCPUProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bbs-load: BBS_LOAD_CPU_PROFILE: %v\n", err)
		os.Exit(2)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
