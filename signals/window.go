// Package signals keeps what the board sees happen to each definition's
// instances — crashes and their reasons, the time from start to ready,
// the cells' health reports — over a sliding window, from the event log
// every board reads, per definition and per instance (instances.go, which
// counts each instance's restarts too). A
// rollout's status shows them (cork rollout status, with --instances per
// instance; the dashboard), and /metrics exports them.
package signals

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/corkboard/corkboard/models"
)

// DefaultSpan is how far back a window looks.
const DefaultSpan = 5 * time.Minute

// maxKept bounds what a window keeps per definition and kind: past it the
// oldest goes first. 10,000 crashes of one definition in one span say what
// 100,000 would.
const maxKept = 10000

// Window is what happened to each definition's instances over the last
// span. It is not safe for concurrent use (Collector locks it).
//
// A definition is known by its LRP and its id together (defKey): ids are
// only unique within an LRP ("v2" of one LRP is not "v2" of another, and
// two LRPs desired from one spec get the same derived id), so the crashes
// of one LRP never count against another's rollout.
//
// A definition's span starts when the window first saw one of its
// instances, so that a definition started a minute ago is not judged over
// five. Rates are per instance per minute of that span, the span counted
// as at least a minute, so that one crash in a definition's first seconds
// does not read as dozens a minute (Figures' examples).
type Window struct {
	span time.Duration
	defs map[defKey]*record
	// failing holds the instances whose failing check was noted
	// (noteFailing), so that CheckFailures, which every convergence pass
	// calls, visits those rather than every instance the window knows. A
	// key whose instance was forgotten since, or whose check passes again,
	// is dropped by the next CheckFailures.
	failing map[instanceKey]struct{}
}

// defKey names a definition of the window: its LRP and its id.
type defKey struct {
	processGuid, definitionID string
}

// instanceKey names an instance of the window: its definition and index.
type instanceKey struct {
	defKey
	index int32
}

type record struct {
	firstSeen time.Time
	// lastSeen is the latest time the window heard of the definition.
	lastSeen time.Time
	crashes  []crash
	readied  []readied
	health   []healthReport
	// instances are the definition's instances by index (instances.go).
	instances map[int32]*instanceRecord
	// removed are the indices whose row was removed since a row of theirs
	// was last seen (instances.go): a cell's late report does not bring
	// them back.
	removed map[int32]struct{}
}

// healthReport is one cell's report of the definition's health checks
// and memory, at when the window learnt of it.
type healthReport struct {
	at               time.Time
	checks, failures int64
	latency, memory  []int64
}

type crash struct {
	at     time.Time
	reason string
}

type readied struct {
	at   time.Time
	took time.Duration
}

// NewWindow returns an empty window over span.
func NewWindow(span time.Duration) *Window {
	return &Window{span: span, defs: map[defKey]*record{}, failing: map[instanceKey]struct{}{}}
}

func (w *Window) record(processGuid, definitionID string, at time.Time) *record {
	key := defKey{processGuid, definitionID}
	r, ok := w.defs[key]
	if !ok {
		r = &record{firstSeen: at}
		w.defs[key] = r
	}
	if at.Before(r.firstSeen) {
		r.firstSeen = at
	}
	if at.After(r.lastSeen) {
		r.lastSeen = at
	}
	return r
}

// Seen notes that an instance of the definition existed at at: the
// definition's span starts no later.
func (w *Window) Seen(processGuid, definitionID string, at time.Time) {
	w.record(processGuid, definitionID, at)
}

// Crashed notes a crash of an instance of the definition.
func (w *Window) Crashed(processGuid, definitionID string, at time.Time, reason string) {
	r := w.record(processGuid, definitionID, at)
	r.crashes = append(r.crashes, crash{at: at, reason: reason})
	if len(r.crashes) > maxKept {
		r.crashes = slices.Delete(r.crashes, 0, len(r.crashes)-maxKept)
	}
}

// Readied notes an instance of the definition that became ready at at,
// took after it was started.
func (w *Window) Readied(processGuid, definitionID string, at time.Time, took time.Duration) {
	r := w.record(processGuid, definitionID, at)
	r.readied = append(r.readied, readied{at: at, took: took})
	if len(r.readied) > maxKept {
		r.readied = slices.Delete(r.readied, 0, len(r.readied)-maxKept)
	}
}

// Reported notes a cell's health report of an instance's definition
// (models.DefinitionHealth), at at.
func (w *Window) Reported(h *models.DefinitionHealth, at time.Time) {
	r := w.record(h.GetProcessGuid(), h.GetDefinitionId(), at)
	r.health = append(r.health, healthReport{
		at: at, checks: int64(h.GetChecks()), failures: int64(h.GetCheckFailures()),
		latency: h.GetLatencyBucketCounts(), memory: h.GetMemoryBucketCounts(),
	})
	if len(r.health) > maxKept {
		r.health = slices.Delete(r.health, 0, len(r.health)-maxKept)
	}
	w.reportedInstances(h, at)
}

// Forget drops every definition of the LRP (removed).
func (w *Window) Forget(processGuid string) {
	for key := range w.defs {
		if key.processGuid == processGuid {
			delete(w.defs, key)
		}
	}
}

// forgetAfter is how long a definition the window heard nothing of is
// kept: a definition cleaned up (history_limit) is never removed by an
// event of its own, so without it the window would keep every definition
// it ever saw. One heard of again after that is seen anew: its span
// restarts, so its first crash counts over a minute (Figures' example 2).
const forgetAfter = time.Hour

// prune drops what happened to r before now − span.
func (w *Window) prune(r *record, now time.Time) {
	from := now.Add(-w.span)
	r.crashes = slices.DeleteFunc(r.crashes, func(c crash) bool { return c.at.Before(from) })
	r.readied = slices.DeleteFunc(r.readied, func(x readied) bool { return x.at.Before(from) })
	r.health = slices.DeleteFunc(r.health, func(h healthReport) bool { return h.at.Before(from) })
}

// Figures is what the window holds for the definition of the LRP at now,
// for its instances (the rows the board has of it), or nil when it has seen none
// of them.
//
// Worked examples, with a span of 5 minutes:
//
//  1. 4 instances of v2, first seen 10 minutes ago, crashed twice in the
//     last 5 minutes ("exited with code 1" both): window 5m, crashes 2,
//     crash rate 2 / 4 / 5 = 0.1 per instance per minute, top reason
//     "exited with code 1".
//  2. 2 instances of v3, first seen 30 s ago, one crash: the span is 30 s,
//     counted as a minute: rate 1 / 2 / 1 = 0.5.
//  3. 0 instances left and 3 crashes in the last 2 minutes of a span of 5:
//     the instances count as 1: rate 3 / 1 / 5 = 0.6.
//  4. Times to ready 900 ms, 1.2 s, 1.1 s, 4 s (readied 4): p50 is the
//     second of the sorted four (⌈0.5 × 4⌉ = 2), 1.1 s; p99 the fourth
//     (⌈0.99 × 4⌉ = 4), 4 s.
//  5. Two cells' health reports in the span: 60 checks, 3 failed, 57
//     within 5 ms and 3 within 1 s; and 30 checks, none failed, all
//     within 5 ms; memory samples 2 within 64 MB, then 2 within 64 MB
//     and 1 within 128 MB. Checks 90, failures 3, failure rate 3 / 90 =
//     0.0333…; latency p99 is rank ⌈0.99 × 90⌉ = 90 of the merged
//     buckets (87 within 5 ms, 3 within 1000 ms): 1000 ms; memory p99 is
//     rank ⌈0.99 × 5⌉ = 5 (4 within 64, 1 within 128): 128 MB.
//  6. Reports of memory alone (a process health check runs no checks):
//     checks 0, failure rate 0, no latency p99; a memory p99.
func (w *Window) Figures(processGuid, definitionID string, instances int, now time.Time) *models.DefinitionSignals {
	r, ok := w.defs[defKey{processGuid, definitionID}]
	if !ok {
		return nil
	}
	w.prune(r, now)
	span := min(w.span, max(now.Sub(r.firstSeen), 0))
	minutes := max(span.Minutes(), 1)
	f := &models.DefinitionSignals{
		WindowMs:  span.Milliseconds(),
		Crashes:   int32(len(r.crashes)),
		CrashRate: float64(len(r.crashes)) / float64(max(instances, 1)) / minutes,
		Readied:   int32(len(r.readied)),
	}
	f.TopCrashReason = topReason(r.crashes)
	if len(r.readied) > 0 {
		took := make([]time.Duration, len(r.readied))
		for i, x := range r.readied {
			took[i] = x.took
		}
		slices.Sort(took)
		f.TimeToReadyP50Ms = nearestRank(took, 0.50).Milliseconds()
		f.TimeToReadyP99Ms = nearestRank(took, 0.99).Milliseconds()
	}
	var checks, failures int64
	var latency, memory []int64
	for _, h := range r.health {
		checks += h.checks
		failures += h.failures
		latency = models.AddBucketCounts(latency, h.latency)
		memory = models.AddBucketCounts(memory, h.memory)
	}
	f.HealthChecks, f.HealthCheckFailures = int32(min(checks, math.MaxInt32)), int32(min(failures, math.MaxInt32))
	if checks > 0 {
		f.HealthFailureRate = float64(failures) / float64(checks)
	}
	if p99, ok := models.HistogramQuantile(models.HealthLatencyBucketsMs, latency, 0.99); ok {
		f.HealthLatencyP99Ms = &p99
	}
	if p99, ok := models.HistogramQuantile(models.MemoryBucketsMB, memory, 0.99); ok {
		f.MemoryMbP99 = &p99
	}
	return f
}

// each calls fn with every definition's figures at now, its instances'
// figures, its LRP and its id, once it has forgotten the definitions and
// instances it heard nothing of for forgetAfter. Each definition and
// instance is pruned once: the whole walk is linear.
func (w *Window) each(now time.Time, fn func(processGuid, definitionID string, f *models.DefinitionSignals, instances []*models.InstanceSignals)) {
	w.Sweep(now)
	for key := range w.defs {
		// The LRP's instance count is not known here: the rate is per
		// instance only in Figures.
		fn(key.processGuid, key.definitionID, w.Figures(key.processGuid, key.definitionID, 1, now),
			w.Instances(key.processGuid, key.definitionID, now))
	}
}

// Sweep forgets the definitions, and the instances, the window heard
// nothing of for forgetAfter before now.
func (w *Window) Sweep(now time.Time) {
	for key, r := range w.defs {
		if now.Sub(r.lastSeen) > forgetAfter {
			delete(w.defs, key)
			continue
		}
		sweepInstances(r, now)
	}
}

// topReason is the most frequent reason among crashes, the latest of
// those tied.
func topReason(crashes []crash) string {
	counts := map[string]int{}
	top, topCount := "", 0
	for _, c := range crashes {
		counts[c.reason]++
		if counts[c.reason] >= topCount {
			top, topCount = c.reason, counts[c.reason]
		}
	}
	return top
}

// nearestRank is the q-quantile of sorted by the nearest-rank method: the
// ⌈q × n⌉-th smallest.
func nearestRank[T cmp.Ordered](sorted []T, q float64) T {
	rank := int(math.Ceil(q * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}
