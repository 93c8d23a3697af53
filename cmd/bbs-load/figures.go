package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/corkboard/corkboard/db/dialect"
)

// target is the database a scenario runs on.
type target struct {
	driver string
	dsn    string
}

func (t *target) register(flags *flag.FlagSet) {
	flags.StringVar(&t.driver, "driver", string(dialect.SQLite), "database: "+dialect.Choices())
	flags.StringVar(&t.dsn, "dsn", "", "admin DSN of the postgres or mysql server (a fresh database is created on it)")
}

// figure prints one measured figure on one line: what it is, the
// conditions it was measured under, the value, and the target when there
// is one, met or not. bench.sh collects these lines into its summary.
//
//	figure converge.steady-pass [postgres, 250000 instances, ..., 2 cores, load 1.05]: p99 412ms ... (target p99 < 1s: met)
func figure(name, driver, conditions, value string, target string, met bool) {
	line := fmt.Sprintf("figure %s [%s, %s, %d cores, load %s]: %s", name, driver, conditions, numCPU(), loadAverage(), value)
	if target != "" {
		verdict := "met"
		if !met {
			verdict = "MISSED"
		}
		line += fmt.Sprintf(" (target %s: %s)", target, verdict)
	}
	fmt.Println(line)
}

// loadAverage is the one-minute load average, or "?" where /proc has none.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		return "?"
	}
	return fields[0]
}

// step prints progress that is not a figure: setup and verification.
func step(format string, args ...any) {
	fmt.Printf("  "+format+"\n", args...)
}

func seconds(d time.Duration) string {
	return round(d).String()
}
