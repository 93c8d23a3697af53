package signals

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/corkboard/corkboard/models"
)

// Per instance, the window keeps the same kinds of figures as per
// definition, for each index of the LRP that runs the definition: an
// instance is a (process guid, index) of a definition, whatever instance
// guid each of its starts had, so that its crashes, the restarts that
// follow them and its time to ready add up across starts.
//
// Memory bound: a definition keeps an instance per index the board heard
// of and has not forgotten, at most one per index an LRP can have
// (models.MaxInstances, and the validation and baseline indices), and
// each instance keeps at most maxKeptPerInstance figures of each kind,
// and one failing health check (its latest, of at most
// models.MaxCheckFailureBytes), forgotten once older than the span.
// An instance is forgotten when its row is removed (an ORDINARY row: the
// LRP scaled down or was removed; a RETIRING one: the definition no longer
// runs at that index), when its LRP is removed, and when the window heard
// nothing of it for forgetAfter (a row removed while the board did not
// follow the log). A removed index is remembered, one mark per index, so
// that a cell's late report does not bring the instance back.

// maxKeptPerInstance bounds what an instance keeps of each kind: past it
// the oldest goes first. 1,000 crashes of one instance in one span say
// what more would.
const maxKeptPerInstance = 1000

type instanceRecord struct {
	// instanceGuid is the latest non-empty instance guid heard of.
	instanceGuid        string
	firstSeen, lastSeen time.Time
	crashes             []crash
	restarts            []time.Time
	readied             []readied
	health              []instanceReport
	// failing is the instance's failing health check as its cell last
	// reported it, nil when none fails: one per instance, at most
	// models.MaxCheckFailureBytes of output.
	failing *models.CheckFailure
}

// instanceReport is one cell's report of the instance's checks and
// memory, at when the window learnt of it.
type instanceReport struct {
	at               time.Time
	checks, failures int64
	latency          []int64
	// memoryMB is -1 without a sample.
	memoryMB int64
}

// keepLast drops the oldest of s past limit.
func keepLast[T any](s []T, limit int) []T {
	if len(s) > limit {
		return slices.Delete(s, 0, len(s)-limit)
	}
	return s
}

func (w *Window) instance(processGuid, definitionID string, index int32, instanceGuid string, at time.Time) *instanceRecord {
	r := w.record(processGuid, definitionID, at)
	if r.instances == nil {
		r.instances = map[int32]*instanceRecord{}
	}
	in, ok := r.instances[index]
	if !ok {
		in = &instanceRecord{firstSeen: at}
		r.instances[index] = in
	}
	if instanceGuid != "" {
		in.instanceGuid = instanceGuid
	}
	if at.Before(in.firstSeen) {
		in.firstSeen = at
	}
	if at.After(in.lastSeen) {
		in.lastSeen = at
	}
	return in
}

// InstanceSeen notes that the instance at index of the definition existed
// at at, with instanceGuid (empty for a row without one): a row of it is
// there again, whatever was removed before.
func (w *Window) InstanceSeen(processGuid, definitionID string, index int32, instanceGuid string, at time.Time) {
	w.instance(processGuid, definitionID, index, instanceGuid, at)
	delete(w.defs[defKey{processGuid, definitionID}].removed, index)
}

// InstanceCrashed notes a crash of the instance at index, with its reason.
// The definition's crashes count it too.
func (w *Window) InstanceCrashed(processGuid, definitionID string, index int32, at time.Time, reason string) {
	w.Crashed(processGuid, definitionID, at, reason)
	in := w.instance(processGuid, definitionID, index, "", at)
	in.crashes = keepLast(append(in.crashes, crash{at: at, reason: reason}), maxKeptPerInstance)
}

// InstanceRestarted notes that the crashed instance at index was started
// again (its row back to UNCLAIMED) at at.
func (w *Window) InstanceRestarted(processGuid, definitionID string, index int32, at time.Time) {
	in := w.instance(processGuid, definitionID, index, "", at)
	in.restarts = keepLast(append(in.restarts, at), maxKeptPerInstance)
}

// InstanceReadied notes that the instance at index became ready at at,
// took after it was started. The definition's times to ready count it too.
func (w *Window) InstanceReadied(processGuid, definitionID string, index int32, instanceGuid string, at time.Time, took time.Duration) {
	w.Readied(processGuid, definitionID, at, took)
	in := w.instance(processGuid, definitionID, index, instanceGuid, at)
	in.readied = keepLast(append(in.readied, readied{at: at, took: took}), maxKeptPerInstance)
}

// reportedInstances notes the per-instance part of a cell's health report
// of the definition, at at.
func (w *Window) reportedInstances(h *models.DefinitionHealth, at time.Time) {
	key := defKey{h.GetProcessGuid(), h.GetDefinitionId()}
	removed := w.defs[key].removed
	for _, x := range h.GetInstances() {
		if _, gone := removed[x.GetIndex()]; gone {
			continue
		}
		in := w.instance(h.GetProcessGuid(), h.GetDefinitionId(), x.GetIndex(), x.GetInstanceGuid(), at)
		memory := int64(-1)
		if x.MemoryMb != nil {
			memory = x.GetMemoryMb()
		}
		in.health = keepLast(append(in.health, instanceReport{
			at: at, checks: int64(x.GetChecks()), failures: int64(x.GetCheckFailures()),
			latency: x.GetLatencyBucketCounts(), memoryMB: memory,
		}), maxKeptPerInstance)
		if noteFailing(in, h, x) {
			w.failing[instanceKey{key, x.GetIndex()}] = struct{}{}
		}
	}
}

// noteFailing keeps what x, one instance of the report h, says of its
// checks: a failing check replaces the one kept unless that one is newer
// (a report of an earlier start that arrives late); a report of the kept
// start without one means its checks pass again, and forgets it. It says
// whether it kept x's failing check.
func noteFailing(in *instanceRecord, h *models.DefinitionHealth, x *models.InstanceHealth) bool {
	if x.GetLastCheckFailure() == "" {
		if in.failing != nil && in.failing.InstanceGuid == x.GetInstanceGuid() {
			in.failing = nil
		}
		return false
	}
	if in.failing != nil && in.failing.At > x.GetLastCheckFailureAt() {
		return false
	}
	in.failing = &models.CheckFailure{
		ProcessGuid: h.GetProcessGuid(), DefinitionID: h.GetDefinitionId(), Index: x.GetIndex(),
		InstanceGuid: x.GetInstanceGuid(), Output: x.GetLastCheckFailure(),
		At: x.GetLastCheckFailureAt(), Since: x.GetCheckFailingSince(),
	}
	return true
}

// CheckFailures are the failing health checks the window holds, of every
// instance it knows, at now: those reported within the span (older ones
// are forgotten), by process guid, definition and index. It visits only
// the instances noted failing (Window.failing), not every one it knows.
func (w *Window) CheckFailures(now time.Time) []models.CheckFailure {
	from := now.Add(-w.span).UnixNano()
	var out []models.CheckFailure
	for key := range w.failing {
		var in *instanceRecord
		if r, ok := w.defs[key.defKey]; ok {
			in = r.instances[key.index]
		}
		if in != nil && in.failing != nil && in.failing.At < from {
			in.failing = nil
		}
		if in == nil || in.failing == nil {
			delete(w.failing, key)
			continue
		}
		out = append(out, *in.failing)
	}
	slices.SortFunc(out, func(a, b models.CheckFailure) int {
		return cmp.Or(cmp.Compare(a.ProcessGuid, b.ProcessGuid), cmp.Compare(a.DefinitionID, b.DefinitionID), cmp.Compare(a.Index, b.Index))
	})
	return out
}

// InstanceRemoved forgets the instance at index of the definition when the
// removed row stood for it: an ORDINARY row (scaled down, or the LRP gone)
// or a RETIRING one (the definition no longer runs there). An EVACUATING
// or SUSPECT row is a stand-in whose ORDINARY row goes on: the instance is
// kept.
//
// A cell's health report counts the checks since its last one, so a report
// taken after the row went may still name the instance: until a row at that
// index is seen again (InstanceSeen), such a report counts for the
// definition and not for the instance, which would otherwise come back for
// forgetAfter.
func (w *Window) InstanceRemoved(processGuid, definitionID string, index int32, presence models.ActualLRP_Presence) {
	if presence != models.ActualLRP_ORDINARY && presence != models.ActualLRP_RETIRING {
		return
	}
	if r, ok := w.defs[defKey{processGuid, definitionID}]; ok {
		delete(r.instances, index)
		if r.removed == nil {
			r.removed = map[int32]struct{}{}
		}
		r.removed[index] = struct{}{}
	}
}

// pruneInstance drops what happened to in before from.
func pruneInstance(in *instanceRecord, from time.Time) {
	in.crashes = slices.DeleteFunc(in.crashes, func(c crash) bool { return c.at.Before(from) })
	in.restarts = slices.DeleteFunc(in.restarts, func(at time.Time) bool { return at.Before(from) })
	in.readied = slices.DeleteFunc(in.readied, func(x readied) bool { return x.at.Before(from) })
	in.health = slices.DeleteFunc(in.health, func(h instanceReport) bool { return h.at.Before(from) })
	if in.failing != nil && in.failing.At < from.UnixNano() {
		in.failing = nil
	}
}

// Instances is what the window holds for each instance of the definition
// of the LRP at now, by index; nil when it knows none.
//
// Worked examples, with a span of 5 minutes:
//
//  1. Index 1 of v2, first seen 10 minutes ago, crashed 3 minutes ago
//     ("exited with code 3") and 1 minute ago ("exited with code 2"),
//     restarted after each, ready 1.5 s after its latest start: window
//     5m, crashes 2, last reason "exited with code 2", restarts 2, time
//     to ready 1500 ms. Index 0, seen as long and ready once in the span
//     after 900 ms: no crash, no restart, time to ready 900 ms.
//  2. An instance first seen 40 s ago: window 40 s.
//  3. Two reports of index 0: 20 checks, 1 failed, 19 within 5 ms and 1
//     within 1 s, 30 MB; then 10 checks within 5 ms, 34 MB. Checks 30,
//     failures 1; latency p99 is rank ⌈0.99 × 30⌉ = 30 of the merged
//     buckets: 1000 ms; memory p99 is rank ⌈0.99 × 2⌉ = 2 of the sorted
//     samples (30, 34): 34 MB.
//  4. A report without a memory sample (the instance no longer ran):
//     checks counted, no memory p99 from it.
//  5. A crash 6 minutes ago, older than the span: no crash, no reason.
func (w *Window) Instances(processGuid, definitionID string, now time.Time) []*models.InstanceSignals {
	r, ok := w.defs[defKey{processGuid, definitionID}]
	if !ok || len(r.instances) == 0 {
		return nil
	}
	from := now.Add(-w.span)
	out := make([]*models.InstanceSignals, 0, len(r.instances))
	for index, in := range r.instances {
		pruneInstance(in, from)
		out = append(out, instanceFigures(index, in, min(w.span, max(now.Sub(in.firstSeen), 0))))
	}
	slices.SortFunc(out, func(a, b *models.InstanceSignals) int { return cmp.Compare(a.GetIndex(), b.GetIndex()) })
	return out
}

// instanceFigures is what in holds over span, once pruned.
func instanceFigures(index int32, in *instanceRecord, span time.Duration) *models.InstanceSignals {
	f := &models.InstanceSignals{
		Index: index, InstanceGuid: in.instanceGuid, WindowMs: span.Milliseconds(),
		Crashes: int32(len(in.crashes)), Restarts: int32(len(in.restarts)),
	}
	if len(in.crashes) > 0 {
		f.LastCrashReason = latestCrash(in.crashes).reason
	}
	if len(in.readied) > 0 {
		latest := in.readied[0]
		for _, x := range in.readied[1:] {
			if !x.at.Before(latest.at) {
				latest = x
			}
		}
		took := latest.took.Milliseconds()
		f.TimeToReadyMs = &took
	}
	var checks, failures int64
	var latency, memory []int64
	for _, h := range in.health {
		checks += h.checks
		failures += h.failures
		latency = models.AddBucketCounts(latency, h.latency)
		if h.memoryMB >= 0 {
			memory = append(memory, h.memoryMB)
		}
	}
	f.HealthChecks, f.HealthCheckFailures = int32(min(checks, math.MaxInt32)), int32(min(failures, math.MaxInt32))
	if p99, ok := models.HistogramQuantile(models.HealthLatencyBucketsMs, latency, 0.99); ok {
		f.HealthLatencyP99Ms = &p99
	}
	if len(memory) > 0 {
		slices.Sort(memory)
		p99 := nearestRank(memory, 0.99)
		f.MemoryMbP99 = &p99
	}
	return f
}

// latestCrash is the crash of crashes (not empty) at the latest time, the
// last noted of those tied.
func latestCrash(crashes []crash) crash {
	latest := crashes[0]
	for _, c := range crashes[1:] {
		if !c.at.Before(latest.at) {
			latest = c
		}
	}
	return latest
}

// sweepInstances forgets r's instances the window heard nothing of for
// forgetAfter before now.
func sweepInstances(r *record, now time.Time) {
	for index, in := range r.instances {
		if now.Sub(in.lastSeen) > forgetAfter {
			delete(r.instances, index)
		}
	}
}
