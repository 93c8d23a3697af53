package models

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
)

// Health reports: what a cell saw of each definition's instances between
// two reports (DefinitionHealth), as bucket counts over fixed tables, so
// that a board can add up any number of reports from any number of cells
// and still read a percentile off the sum (HistogramQuantile).

// HealthLatencyBucketsMs are the upper bounds, in ms, of the buckets a
// health check's latency is counted in; a check slower than the last
// bound goes to one more bucket above it (+Inf).
var HealthLatencyBucketsMs = []int64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}

// MemoryBucketsMB are the upper bounds, in MB (2^20 bytes, as memory_mb
// counts), of the buckets an instance's memory in use is counted in, up
// to 64 GiB; more goes to one more bucket above it (+Inf).
var MemoryBucketsMB = []int64{16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}

// MaxHealthEntries bounds the entries of one ReportHealthRequest; a cell
// running more definitions sends several.
const MaxHealthEntries = 1000

// MaxHealthInstances bounds the instances of one DefinitionHealth entry:
// a cell runs far fewer instances of one definition (one per index, and
// the index range is MaxInstances).
const MaxHealthInstances = 1000

// MaxCheckFailureBytes bounds an instance's last_check_failure: enough
// for a check, its address and what answered (an HTTP status, a dial
// error), not for a page of output. A cell cuts longer text
// (CutCheckFailure) rather than lose the report.
const MaxCheckFailureBytes = 512

// CutCheckFailure is what a cell reports of a failed check's output: at
// most MaxCheckFailureBytes bytes of valid UTF-8, cut at a character's
// start, invalid bytes replaced.
func CutCheckFailure(output string) string {
	return CutText(strings.ToValidUTF8(output, "\uFFFD"), MaxCheckFailureBytes)
}

// CutText is text cut to at most limit bytes, at a character's start.
func CutText(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut]
}

// BucketOf is the index of the bucket of bounds that counts v: the first
// whose bound is at least v, or len(bounds) (the +Inf bucket) when v is
// above them all. With HealthLatencyBucketsMs: 0 and 1 ms go to bucket 0,
// 3 ms to bucket 2 (≤ 5), 5000 ms to bucket 11, 5001 ms to bucket 12.
func BucketOf(bounds []int64, v int64) int {
	for i, bound := range bounds {
		if v <= bound {
			return i
		}
	}
	return len(bounds)
}

// HistogramQuantile is the q-quantile (0 < q ≤ 1) of the samples counted
// by counts over bounds (len(bounds)+1 buckets, the last +Inf), by the
// nearest rank: the upper bound of the bucket holding the ⌈q × n⌉-th
// smallest of the n samples. A sample in the +Inf bucket reads as the
// largest bound: the table knows only that it is more. ok is false
// without samples (or with counts of the wrong length).
//
// Worked example, with HealthLatencyBucketsMs and 200 checks: 150 within
// 1 ms (bucket 0), 45 within 5 ms (bucket 2), 4 within 50 ms (bucket 5), 1
// slower than 5 s (bucket 12).
//
//  1. p99: rank ⌈0.99 × 200⌉ = 198. Cumulative counts are 150 (bucket 0),
//     195 (bucket 2), 199 (bucket 5): rank 198 is in bucket 5, 50 ms.
//  2. p50: rank 100, within the first 150: 1 ms.
//  3. p100 (q = 1): rank 200, the sample above every bound: 5000 ms.
func HistogramQuantile(bounds, counts []int64, q float64) (int64, bool) {
	if len(counts) != len(bounds)+1 || len(bounds) == 0 {
		return 0, false
	}
	var total int64
	for _, c := range counts {
		total += c
	}
	if total <= 0 {
		return 0, false
	}
	rank := max(int64(math.Ceil(q*float64(total))), 1)
	var seen int64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			return bounds[min(i, len(bounds)-1)], true
		}
	}
	return bounds[len(bounds)-1], true
}

// AddBucketCounts adds src to dst entry by entry, dst growing to src's
// length where it is shorter, and returns dst.
func AddBucketCounts(dst, src []int64) []int64 {
	for len(dst) < len(src) {
		dst = append(dst, 0)
	}
	for i, c := range src {
		dst[i] += c
	}
	return dst
}

// ReportedInstances is what a cell reports of a definition's instances:
// those with checks, a memory sample or a failing check (one still
// starting, whose startup checks fail, has no counted check and may have
// no sample), sorted by index then instance guid, at most
// MaxHealthInstances of them (the first in that order; the definition's
// own counts still count the rest). It sorts instances in place.
//
// Worked example: index 1 (guid b) with 3 checks, index 0 (guid a) with
// a memory sample and no check, index 2 (guid c) with neither (it ended
// and had counted nothing), index 3 (guid d) with neither but a failing
// startup check: a, then b, then d; c is left out.
func ReportedInstances(instances []*InstanceHealth) []*InstanceHealth {
	instances = slices.DeleteFunc(instances, func(in *InstanceHealth) bool {
		return !in.HasNews()
	})
	slices.SortFunc(instances, func(a, b *InstanceHealth) int {
		return cmp.Or(cmp.Compare(a.GetIndex(), b.GetIndex()), cmp.Compare(a.GetInstanceGuid(), b.GetInstanceGuid()))
	})
	return instances[:min(len(instances), MaxHealthInstances)]
}

// HasNews says whether a cell has anything to report of the instance:
// checks, a memory sample or a failing check.
func (in *InstanceHealth) HasNews() bool {
	return in.GetChecks() > 0 || in.MemoryMb != nil || in.GetLastCheckFailure() != ""
}

// HasNews says whether a cell has anything to report of the definition:
// checks, a memory sample, or an instance with news.
func (h *DefinitionHealth) HasNews() bool {
	return h.GetChecks() > 0 ||
		slices.ContainsFunc(h.GetMemoryBucketCounts(), func(c int64) bool { return c > 0 }) ||
		slices.ContainsFunc(h.GetInstances(), (*InstanceHealth).HasNews)
}

// Validate requires the reporting cell_id and 1 to MaxHealthEntries
// entries (see DefinitionHealth.validate).
func (r *ReportHealthRequest) Validate() error {
	if err := validateCellID("cell_id", r.GetCellId()); err != nil {
		return err
	}
	health := r.GetHealth()
	switch {
	case len(health) == 0:
		return ErrInvalidField("health", "required: at least one entry")
	case len(health) > MaxHealthEntries:
		return ErrInvalidField("health", fmt.Sprintf("must hold at most %d entries, got %d", MaxHealthEntries, len(health)))
	}
	for i, h := range health {
		path := indexed("health", i)
		if h == nil {
			return ErrInvalidField(path, "required")
		}
		if err := h.validate(path); err != nil {
			return err
		}
	}
	return nil
}

// validate requires the entry's LRP and definition, counts that are not
// negative, no more failures than checks, and both bucket tables at their
// full length (the table's bounds and +Inf) with the latency buckets
// counting each check once.
func (h *DefinitionHealth) validate(path string) error {
	if err := validateProcessGuid(child(path, "process_guid"), h.GetProcessGuid()); err != nil {
		return err
	}
	if err := validateDefinitionID(child(path, "definition_id"), h.GetDefinitionId()); err != nil {
		return err
	}
	if err := validateChecks(path, h.GetChecks(), h.GetCheckFailures(), h.GetLatencyBucketCounts()); err != nil {
		return err
	}
	if _, err := validateBucketCounts(child(path, "memory_bucket_counts"), h.GetMemoryBucketCounts(), MemoryBucketsMB); err != nil {
		return err
	}
	return h.validateInstances(child(path, "instances"))
}

// validateInstances requires at most MaxHealthInstances per-instance
// entries, each valid (InstanceHealth.validate), no instance guid twice,
// and their checks and failures adding up to no more than the entry's
// (an instance that ended before the report may have counted checks the
// entry carries without an instance of its own).
func (h *DefinitionHealth) validateInstances(path string) error {
	instances := h.GetInstances()
	if len(instances) > MaxHealthInstances {
		return ErrInvalidField(path, fmt.Sprintf("must hold at most %d entries, got %d", MaxHealthInstances, len(instances)))
	}
	var checks, failures int64
	seen := map[string]bool{}
	for i, in := range instances {
		at := indexed(path, i)
		if in == nil {
			return ErrInvalidField(at, "required")
		}
		if err := in.validate(at); err != nil {
			return err
		}
		if seen[in.GetInstanceGuid()] {
			return ErrInvalidField(child(at, "instance_guid"), "must not repeat an earlier entry's, got "+quoteShort(in.GetInstanceGuid()))
		}
		seen[in.GetInstanceGuid()] = true
		checks += int64(in.GetChecks())
		failures += int64(in.GetCheckFailures())
	}
	if checks > int64(h.GetChecks()) {
		return ErrInvalidField(path, fmt.Sprintf("must count at most the entry's checks (%d), got %d", h.GetChecks(), checks))
	}
	if failures > int64(h.GetCheckFailures()) {
		return ErrInvalidField(path, fmt.Sprintf("must count at most the entry's check failures (%d), got %d", h.GetCheckFailures(), failures))
	}
	return nil
}

// validateChecks requires, of a report's entry or instance at path, checks
// that are not negative, no more failures than checks, and the latency
// buckets at full length (the table's bounds and +Inf) counting each
// check once.
func validateChecks(path string, checks, failures int32, latencyBuckets []int64) error {
	if checks < 0 {
		return ErrInvalidField(child(path, "checks"), fmt.Sprintf("must not be negative, got %d", checks))
	}
	if failures < 0 || failures > checks {
		return ErrInvalidField(child(path, "check_failures"), fmt.Sprintf("must be 0 to checks (%d), got %d", checks, failures))
	}
	latencies, err := validateBucketCounts(child(path, "latency_bucket_counts"), latencyBuckets, HealthLatencyBucketsMs)
	if err != nil {
		return err
	}
	if latencies != int64(checks) {
		return ErrInvalidField(child(path, "latency_bucket_counts"), fmt.Sprintf("must count each check once: %d counted, checks %d", latencies, checks))
	}
	return nil
}

// validate requires the instance's index and guid, counts that are not
// negative, no more failures than checks, the latency buckets at full
// length counting each check once, a memory sample that is not
// negative, and a failing check that is whole (validateCheckFailure).
func (in *InstanceHealth) validate(path string) error {
	if err := validateIndex(child(path, "index"), in.GetIndex()); err != nil {
		return err
	}
	if err := validateInstanceGuid(child(path, "instance_guid"), in.GetInstanceGuid()); err != nil {
		return err
	}
	if err := validateChecks(path, in.GetChecks(), in.GetCheckFailures(), in.GetLatencyBucketCounts()); err != nil {
		return err
	}
	if in.MemoryMb != nil && in.GetMemoryMb() < 0 {
		return ErrInvalidField(child(path, "memory_mb"), fmt.Sprintf("must not be negative, got %d", in.GetMemoryMb()))
	}
	return in.validateCheckFailure(path)
}

// validateCheckFailure requires, of an instance whose latest check
// failed, its output (at most MaxCheckFailureBytes of UTF-8), when it ran
// (above 0), and when its failures in a row began (above 0, not after
// it); and of an instance without one, neither time.
func (in *InstanceHealth) validateCheckFailure(path string) error {
	output, at, since := in.GetLastCheckFailure(), in.GetLastCheckFailureAt(), in.GetCheckFailingSince()
	if output == "" {
		if at != 0 {
			return ErrInvalidField(child(path, "last_check_failure_at"), fmt.Sprintf("must be 0 without a last_check_failure, got %d", at))
		}
		if since != 0 {
			return ErrInvalidField(child(path, "check_failing_since"), fmt.Sprintf("must be 0 without a last_check_failure, got %d", since))
		}
		return nil
	}
	if err := validateMaxBytes(child(path, "last_check_failure"), output, MaxCheckFailureBytes); err != nil {
		return err
	}
	if err := validateUTF8(child(path, "last_check_failure"), output); err != nil {
		return err
	}
	if at <= 0 {
		return ErrInvalidField(child(path, "last_check_failure_at"), fmt.Sprintf("must be above 0 with a last_check_failure, got %d", at))
	}
	if since <= 0 || since > at {
		return ErrInvalidField(child(path, "check_failing_since"), fmt.Sprintf("must be above 0 and at most last_check_failure_at (%d) with a last_check_failure, got %d", at, since))
	}
	return nil
}

// validateBucketCounts requires one count per bucket of bounds and the
// +Inf one, none negative, and answers their sum.
func validateBucketCounts(path string, counts, bounds []int64) (int64, error) {
	if len(counts) != len(bounds)+1 {
		return 0, ErrInvalidField(path, fmt.Sprintf("must have %d entries (one per bucket and one above them), got %d", len(bounds)+1, len(counts)))
	}
	var sum int64
	for i, c := range counts {
		if c < 0 {
			return 0, ErrInvalidField(indexed(path, i), fmt.Sprintf("must not be negative, got %d", c))
		}
		if c > math.MaxInt32 {
			return 0, ErrInvalidField(indexed(path, i), fmt.Sprintf("must be at most %d, got %d", math.MaxInt32, c))
		}
		sum += c
	}
	return sum, nil
}

// DefinitionHealthLogged is the event of one entry of a cell's health
// report, keyed by its LRP.
func DefinitionHealthLogged(cellID string, h *DefinitionHealth) Event {
	return Event{Type: EventDefinitionHealth, Key: h.GetProcessGuid(), Payload: &DefinitionHealthEvent{CellId: cellID, Health: h}}
}

// CheckFailure is an instance's failing health check as its cell last
// reported it (InstanceHealth.last_check_failure): the start (instance
// guid) that ran it, what the latest check said ("GET
// http://10.0.0.1:61001/health: 503 Service Unavailable"), when it ran,
// and when the checks failing in a row up to it began (Unix nanoseconds,
// the cell's clock). The board's signals keep the latest of each
// instance; the planner quotes it (convergence.CheckFailing).
type CheckFailure struct {
	ProcessGuid, DefinitionID string
	Index                     int32
	InstanceGuid              string
	Output                    string
	At, Since                 int64
}

// HeldInstance is an instance a cell holds, as its row says: what an
// entry of the cell's health report must be about (HealthHeldBy).
type HeldInstance struct {
	ProcessGuid  string
	DefinitionID string
	InstanceGuid string
}

// HealthHeldBy is what the board keeps of a cell's health report, given
// the instances the cell holds (rows of any presence placed on it): a
// cell speaks only for its own instances, so that a cell's certificate
// cannot fail another app's rollout with made-up failures.
//
//  1. An entry is kept only when the cell holds an instance of its
//     (process_guid, definition_id); its definition-wide figures are the
//     cell's own instances' then.
//  2. Of a kept entry, an instance's part is kept only when its
//     instance_guid is one the cell holds of that definition; the entry
//     is copied when parts are dropped, never changed in place.
//  3. The rest is dropped without an error: an instance that ended on the
//     cell since the rep sampled it leaves a report behind it in the
//     ordinary course, and the rest of that report is good.
//
// Worked example: cell A holds web/v2 instances g1 and g2. Its report
// {web v2 [g1 g9]}, {web v1 [g0]}, {api v1} keeps {web v2 [g1]}: v1 of
// web and api v1 are not A's (1), and g9 is no instance of A's (2).
func HealthHeldBy(report []*DefinitionHealth, held []HeldInstance) []*DefinitionHealth {
	type definition struct{ processGuid, definitionID string }
	instances := map[definition]map[string]bool{}
	for _, h := range held {
		key := definition{h.ProcessGuid, h.DefinitionID}
		if instances[key] == nil {
			instances[key] = map[string]bool{}
		}
		instances[key][h.InstanceGuid] = true
	}
	var kept []*DefinitionHealth
	for _, entry := range report {
		guids, ok := instances[definition{entry.GetProcessGuid(), entry.GetDefinitionId()}]
		if !ok {
			continue
		}
		var parts []*InstanceHealth
		for _, part := range entry.GetInstances() {
			if guids[part.GetInstanceGuid()] {
				parts = append(parts, part)
			}
		}
		if len(parts) != len(entry.GetInstances()) {
			entry = proto.CloneOf(entry)
			entry.Instances = parts
		}
		kept = append(kept, entry)
	}
	return kept
}
