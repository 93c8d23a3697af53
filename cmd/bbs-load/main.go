// Command bbs-load measures the board. Each scenario is a subcommand:
//
//	bbs-load [api] [flags]    desire throughput and latency through the HTTP
//	                          API, and listing many actual LRPs (the default)
//	bbs-load converge ...     convergence passes over 250,000 instances:
//	                          steady state, repairs, placing 100,000
//	bbs-load lifecycle ...    claim + start writes from concurrent cells
//	bbs-load report ...       cells bulk-reporting on a schedule, then all
//	                          at once after a board restart
//	bbs-load rss ...          the memory of a bin/bbs process converging
//	                          100,000 instances
//	bbs-load rollout ...      a rolling update of 10,000 instances, surge
//	                          25%: each pass and the whole rollout
//	bbs-load operations ...   listing 100,000 operations page by page
//	bbs-load lists ...        the memory of a bin/bbs process while 8
//	                          clients list 20,000 LRPs (20 MB) whole at once
//	bbs-load peer ...         the workload Diego's BBS was measured on: a
//	                          bin/bbs process, 10,000 one-instance LRPs of
//	                          ~1 KB, 100 cells, 16 clients; desire, claim +
//	                          start, a steady pass, whole lists, annotation
//	                          updates, instances 1→2 and 2→1, peak RSS,
//	                          the database's bytes per LRP
//	bbs-load busy ...         desire / update / get latency through the
//	                          HTTP API while the lease owner converges
//	                          250,000 instances back to back, full-read
//	                          passes run beside it and 1,000 cells send
//	                          bulk reports (or -bbs: a board binary serves
//	                          and converges on its own)
//
//	bbs-load ratios < LOG     not a scenario: new ÷ old per figure from the
//	                          tagged figure lines of hack/bench-compare.sh
//
// Every scenario runs on a fresh database of -driver (a temporary SQLite
// file, or a new database created on the server behind -dsn) and drops it
// afterwards. `bbs-load SCENARIO -h` lists a scenario's flags; the sizes
// are all flags. Figures are printed one per line, starting with "figure",
// with the conditions they were measured under.
//
// BBS_LOAD_CPU_PROFILE=FILE writes a CPU profile of the whole run (the
// in-process board included) to FILE, for go tool pprof.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
)

type scenario struct {
	name string
	run  func(ctx context.Context, args []string) error
}

var scenarios = []scenario{
	{"api", runAPI},
	{"converge", runConverge},
	{"lifecycle", runLifecycle},
	{"report", runReport},
	{"rss", runRSS},
	{"rollout", runRollout},
	{"operations", runOperations},
	{"lists", runLists},
	{"peer", runPeer},
	{"busy", runBusy},
	{"ratios", runRatios},
}

func main() {
	args := os.Args[1:]
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
	fmt.Fprintf(os.Stderr, "bbs-load: unknown scenario %q (want one of: %s)\n", name, strings.Join(names, ", "))
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
