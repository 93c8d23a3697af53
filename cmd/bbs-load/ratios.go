package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// The ratios command reads the figure lines hack/bench-compare.sh prints,
// tagged [old] and [new], and prints new ÷ old per figure, measure and
// database as a range over the rounds: round i's new against round i's
// old, the two having run one after the other on the same machine.
//
//	bbs-load ratios < bench-compare.log
//
// A figure's measures are read from its value (the conditions and the
// target are left out): a rate (req/s, ops/s; higher is better), bytes
// per LRP, peak RSS, and the p50 and p99 latencies (lower is better).
// A figure one side did not print is listed with the side that did.

func runRatios(_ context.Context, args []string) error {
	flags := flag.NewFlagSet("bbs-load ratios", flag.ExitOnError)
	flags.Usage = func() {
		fmt.Fprintln(flags.Output(), "usage: bbs-load ratios < FIGURE-LINES (tagged [old] / [new], as hack/bench-compare.sh prints them)")
	}
	flags.Parse(args)
	if flags.NArg() > 0 {
		return errors.New("ratios reads standard input and takes no arguments")
	}
	table, err := readTaggedFigures(os.Stdin)
	if err != nil {
		return err
	}
	table.print(os.Stdout)
	return nil
}

// measure is one number read from a figure's value.
type measure struct {
	name  string
	value float64
}

// The measures, in the order they are printed.
var measureRules = []struct {
	name     string
	pattern  *regexp.Regexp
	duration bool
}{
	{"req/s", regexp.MustCompile(`([0-9.]+) req/s`), false},
	{"ops/s", regexp.MustCompile(`([0-9.]+) ops/s`), false},
	{"bytes/LRP", regexp.MustCompile(`([0-9]+) bytes per LRP`), false},
	{"VmHWM MiB", regexp.MustCompile(`VmHWM ([0-9.]+) MiB`), false},
	{"VmHWM MB", regexp.MustCompile(`VmHWM ([0-9.]+) MB`), false},
	// A value that starts with a time: a repair or placing pass, a
	// rollout ("405ms until all 4000 writes persisted").
	{"time", regexp.MustCompile(`^([0-9.hmsµn]+) `), true},
	{"p50", regexp.MustCompile(`\bp50 ([0-9.]+[a-zµ]+)`), true},
	{"p99", regexp.MustCompile(`\bp99 ([0-9.]+[a-zµ]+)`), true},
	{"board CPU/op", regexp.MustCompile(`board CPU ([0-9.]+[a-zµ]+)/op`), true},
	{"database CPU/op", regexp.MustCompile(`database CPU ([0-9.]+[a-zµ]+)/op`), true},
}

// higherIsBetter says which way a measure improves.
func higherIsBetter(name string) bool { return strings.HasSuffix(name, "/s") }

// measuresOf reads a figure's value; durations are in milliseconds.
func measuresOf(value string) []measure {
	value, _, _ = strings.Cut(value, " (target ")
	var out []measure
	for _, rule := range measureRules {
		m := rule.pattern.FindStringSubmatch(value)
		if m == nil {
			continue
		}
		var v float64
		if rule.duration {
			d, err := time.ParseDuration(m[1])
			if err != nil {
				continue
			}
			v = float64(d) / float64(time.Millisecond)
		} else {
			var err error
			if v, err = strconv.ParseFloat(m[1], 64); err != nil {
				continue
			}
		}
		out = append(out, measure{rule.name, v})
	}
	return out
}

// figureLine matches "figure [old] NAME [DRIVER, conditions...]: VALUE".
var figureLine = regexp.MustCompile(`^figure \[(old|new)\] (\S+) \[([a-z]+)[,\]].*?\]: (.*)$`)

type ratioKey struct{ driver, figure, measure string }

type ratioTable struct {
	keys []ratioKey // in the order first seen
	old  map[ratioKey][]float64
	new  map[ratioKey][]float64
}

func readTaggedFigures(r io.Reader) (*ratioTable, error) {
	t := &ratioTable{old: map[ratioKey][]float64{}, new: map[ratioKey][]float64{}}
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		m := figureLine.FindStringSubmatch(scanner.Text())
		if m == nil {
			continue
		}
		side, name, driver, value := m[1], m[2], m[3], m[4]
		for _, ms := range measuresOf(value) {
			k := ratioKey{driver, name, ms.name}
			if _, seen := t.old[k]; !seen {
				if _, seen := t.new[k]; !seen {
					t.keys = append(t.keys, k)
				}
			}
			if side == "old" {
				t.old[k] = append(t.old[k], ms.value)
			} else {
				t.new[k] = append(t.new[k], ms.value)
			}
		}
	}
	return t, scanner.Err()
}

// ratioRange is new ÷ old per round, as "min–max×", with how many rounds
// had both sides; "" when none had.
func ratioRange(old, new []float64) (string, int) {
	lo, hi := math.Inf(1), math.Inf(-1)
	n := 0
	for i := range min(len(old), len(new)) {
		if old[i] == 0 {
			continue
		}
		r := new[i] / old[i]
		lo, hi = math.Min(lo, r), math.Max(hi, r)
		n++
	}
	if n == 0 {
		return "", 0
	}
	if formatRatio(lo) == formatRatio(hi) {
		return formatRatio(lo) + "×", n
	}
	return formatRatio(lo) + "–" + formatRatio(hi) + "×", n
}

func formatRatio(r float64) string {
	if r >= 10 {
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strconv.FormatFloat(r, 'f', 2, 64)
}

// valueRange is a side's values as "min–max", or "not measured".
func valueRange(values []float64) string {
	if len(values) == 0 {
		return "not measured"
	}
	lo, hi := values[0], values[0]
	for _, v := range values {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if formatValue(lo) == formatValue(hi) {
		return formatValue(lo)
	}
	return formatValue(lo) + "–" + formatValue(hi)
}

func formatValue(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

func (t *ratioTable) print(w io.Writer) {
	fmt.Fprintln(w, "## new ÷ old, min–max over the rounds (each round's new against its old); better is higher for req/s and ops/s, lower for the rest (p50, p99 in ms)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "database\tfigure\tmeasure\tnew ÷ old\tbetter\tnew\told\trounds")
	for _, k := range t.keys {
		old, new := t.old[k], t.new[k]
		ratio, rounds := ratioRange(old, new)
		better := ""
		if ratio == "" {
			ratio = "—"
		} else if higherIsBetter(k.measure) {
			better = "higher"
		} else {
			better = "lower"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", k.driver, k.figure, k.measure, ratio, better, valueRange(new), valueRange(old), rounds)
	}
	tw.Flush()
}
