package models_test

import (
	"fmt"
	"strings"
	"unicode/utf8"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// latencies is a latency bucket table with the given counts at the given
// bucket indices.
func latencies(at map[int]int64) []int64 {
	counts := make([]int64, len(models.HealthLatencyBucketsMs)+1)
	for i, c := range at {
		counts[i] = c
	}
	return counts
}

func memories(at map[int]int64) []int64 {
	counts := make([]int64, len(models.MemoryBucketsMB)+1)
	for i, c := range at {
		counts[i] = c
	}
	return counts
}

var _ = Describe("Health buckets", func() {
	DescribeTable("BucketOf (its examples)",
		func(v int64, want int) {
			Expect(models.BucketOf(models.HealthLatencyBucketsMs, v)).To(Equal(want))
		},
		Entry("0 ms", int64(0), 0),
		Entry("1 ms", int64(1), 0),
		Entry("3 ms: within 5", int64(3), 2),
		Entry("5000 ms: the last bound", int64(5000), 11),
		Entry("5001 ms: above every bound", int64(5001), 12),
	)

	It("has memory buckets up to 64 GiB", func() {
		Expect(models.MemoryBucketsMB[len(models.MemoryBucketsMB)-1]).To(Equal(int64(64 << 10)))
		Expect(models.BucketOf(models.MemoryBucketsMB, 12)).To(Equal(0))
		Expect(models.BucketOf(models.MemoryBucketsMB, 65537)).To(Equal(len(models.MemoryBucketsMB)))
	})

	DescribeTable("HistogramQuantile (its worked example and edges)",
		func(counts []int64, q float64, want int64, wantOK bool) {
			got, ok := models.HistogramQuantile(models.HealthLatencyBucketsMs, counts, q)
			Expect(ok).To(Equal(wantOK))
			Expect(got).To(Equal(want))
		},
		Entry("1. p99 of 200 checks: rank 198 in the 50 ms bucket",
			latencies(map[int]int64{0: 150, 2: 45, 5: 4, 12: 1}), 0.99, int64(50), true),
		Entry("2. p50: rank 100 within 1 ms", latencies(map[int]int64{0: 150, 2: 45, 5: 4, 12: 1}), 0.5, int64(1), true),
		Entry("3. p100: the sample above every bound reads as the last bound",
			latencies(map[int]int64{0: 150, 2: 45, 5: 4, 12: 1}), 1.0, int64(5000), true),
		Entry("one sample: every quantile is its bucket", latencies(map[int]int64{7: 1}), 0.01, int64(200), true),
		Entry("rank on a bucket's last sample stays in it", latencies(map[int]int64{3: 99, 9: 1}), 0.99, int64(10), true),
		Entry("no samples: no value", latencies(nil), 0.99, int64(0), false),
		Entry("counts of the wrong length: no value", []int64{1, 2}, 0.99, int64(0), false),
	)

	It("adds bucket counts entry by entry", func() {
		Expect(models.AddBucketCounts(nil, []int64{1, 0, 2})).To(Equal([]int64{1, 0, 2}))
		Expect(models.AddBucketCounts([]int64{1, 1, 1}, []int64{1, 0, 2})).To(Equal([]int64{2, 1, 3}))
	})
})

// instance is one instance's part of a health report: checks within 1 ms,
// failures of them, and 12 MB in use.
func instance(index int32, guid string, checks, failures int32) *models.InstanceHealth {
	return &models.InstanceHealth{Index: index, InstanceGuid: guid, Checks: checks, CheckFailures: failures,
		LatencyBucketCounts: latencies(map[int]int64{0: int64(checks)}), MemoryMb: proto.Int64(12)}
}

var _ = Describe("Validation of health reports", func() {
	entry := func(guid string) *models.DefinitionHealth {
		return &models.DefinitionHealth{
			ProcessGuid: guid, DefinitionId: "v1", Checks: 10, CheckFailures: 1,
			LatencyBucketCounts: latencies(map[int]int64{0: 8, 4: 2}),
			MemoryBucketCounts:  memories(map[int]int64{1: 3}),
		}
	}
	many := func(n int) []*models.DefinitionHealth {
		health := make([]*models.DefinitionHealth, n)
		for i := range health {
			health[i] = entry("web")
		}
		return health
	}

	DescribeTable("ReportHealthRequest",
		func(mutate func(*models.ReportHealthRequest), want string) {
			report := &models.ReportHealthRequest{CellId: aCell, Health: []*models.DefinitionHealth{entry("web"), entry("api")}}
			mutate(report)
			expectValidation(report, want)
		},
		Entry("two definitions", func(*models.ReportHealthRequest) {}, ""),
		Entry("no checks, memory only (a process health check)", func(r *models.ReportHealthRequest) {
			r.Health[0].Checks, r.Health[0].CheckFailures, r.Health[0].LatencyBucketCounts = 0, 0, latencies(nil)
		}, ""),
		Entry("1000 entries", func(r *models.ReportHealthRequest) { r.Health = many(1000) }, ""),

		Entry("no cell", func(r *models.ReportHealthRequest) { r.CellId = "" }, "cell_id: required"),
		Entry("no entries", func(r *models.ReportHealthRequest) { r.Health = nil }, "health: required: at least one entry"),
		Entry("1001 entries", func(r *models.ReportHealthRequest) { r.Health = many(1001) },
			"health: must hold at most 1000 entries, got 1001"),
		Entry("a nil entry", func(r *models.ReportHealthRequest) { r.Health[1] = nil }, "health[1]: required"),
		Entry("no process guid", func(r *models.ReportHealthRequest) { r.Health[1].ProcessGuid = "" }, "health[1].process_guid: required"),
		Entry("a bad definition id", func(r *models.ReportHealthRequest) { r.Health[0].DefinitionId = "v 1" },
			`health[0].definition_id: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$, got "v 1"`),
		Entry("negative checks", func(r *models.ReportHealthRequest) { r.Health[0].Checks = -1 },
			"health[0].checks: must not be negative, got -1"),
		Entry("more failures than checks", func(r *models.ReportHealthRequest) { r.Health[0].CheckFailures = 11 },
			"health[0].check_failures: must be 0 to checks (10), got 11"),
		Entry("negative failures", func(r *models.ReportHealthRequest) { r.Health[0].CheckFailures = -1 },
			"health[0].check_failures: must be 0 to checks (10), got -1"),
		Entry("latency buckets short of +Inf", func(r *models.ReportHealthRequest) {
			r.Health[1].LatencyBucketCounts = r.Health[1].LatencyBucketCounts[:12]
		}, "health[1].latency_bucket_counts: must have 13 entries (one per bucket and one above them), got 12"),
		Entry("no memory buckets", func(r *models.ReportHealthRequest) { r.Health[0].MemoryBucketCounts = nil },
			"health[0].memory_bucket_counts: must have 14 entries (one per bucket and one above them), got 0"),
		Entry("a negative memory count", func(r *models.ReportHealthRequest) { r.Health[0].MemoryBucketCounts[13] = -2 },
			"health[0].memory_bucket_counts[13]: must not be negative, got -2"),
		Entry("latency counts that are not the checks", func(r *models.ReportHealthRequest) { r.Health[0].LatencyBucketCounts[12] = 1 },
			"health[0].latency_bucket_counts: must count each check once: 11 counted, checks 10"),
		Entry("a count too large", func(r *models.ReportHealthRequest) { r.Health[0].MemoryBucketCounts[0] = 1 << 40 },
			"health[0].memory_bucket_counts[0]: must be at most 2147483647, got 1099511627776"),

		// Per instance (an old rep sends none: the entries above).
		Entry("two instances, their checks within the entry's", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{instance(0, "g-0", 6, 1), instance(1, "g-1", 4, 0)}
		}, ""),
		Entry("an instance with memory alone", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{instance(0, "g-0", 0, 0)}
		}, ""),
		Entry("two starts of one index (a crash and a start on the same cell)", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{instance(0, "g-0", 2, 1), instance(0, "g-1", 2, 0)}
		}, ""),
		Entry("1001 instances", func(r *models.ReportHealthRequest) {
			for i := range 1001 {
				r.Health[0].Instances = append(r.Health[0].Instances, instance(int32(i%100), fmt.Sprintf("g-%d", i), 0, 0))
			}
		}, "health[0].instances: must hold at most 1000 entries, got 1001"),
		Entry("a nil instance", func(r *models.ReportHealthRequest) { r.Health[0].Instances = []*models.InstanceHealth{nil} },
			"health[0].instances[0]: required"),
		Entry("a negative index", func(r *models.ReportHealthRequest) {
			r.Health[1].Instances = []*models.InstanceHealth{instance(-1, "g-0", 0, 0)}
		}, "health[1].instances[0].index: must be between 0 and 99999 (or 100000, a validation instance, or 100001 to 100010, baseline instances), got -1"),
		Entry("no instance guid", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{instance(0, "", 0, 0)}
		}, "health[0].instances[0].instance_guid: required"),
		Entry("an instance guid twice", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{instance(0, "g-0", 1, 0), instance(1, "g-0", 1, 0)}
		}, `health[0].instances[1].instance_guid: must not repeat an earlier entry's, got "g-0"`),
		Entry("more instance failures than its checks", func(r *models.ReportHealthRequest) {
			in := instance(0, "g-0", 2, 0)
			in.CheckFailures = 3
			r.Health[0].Instances = []*models.InstanceHealth{in}
		}, "health[0].instances[0].check_failures: must be 0 to checks (2), got 3"),
		Entry("instance latency counts that are not its checks", func(r *models.ReportHealthRequest) {
			in := instance(0, "g-0", 2, 0)
			in.LatencyBucketCounts[3] = 5
			r.Health[0].Instances = []*models.InstanceHealth{in}
		}, "health[0].instances[0].latency_bucket_counts: must count each check once: 7 counted, checks 2"),
		Entry("instance latency buckets short of +Inf", func(r *models.ReportHealthRequest) {
			in := instance(0, "g-0", 0, 0)
			in.LatencyBucketCounts = nil
			r.Health[0].Instances = []*models.InstanceHealth{in}
		}, "health[0].instances[0].latency_bucket_counts: must have 13 entries (one per bucket and one above them), got 0"),
		Entry("a negative memory sample", func(r *models.ReportHealthRequest) {
			in := instance(0, "g-0", 0, 0)
			in.MemoryMb = proto.Int64(-1)
			r.Health[0].Instances = []*models.InstanceHealth{in}
		}, "health[0].instances[0].memory_mb: must not be negative, got -1"),
		Entry("a failing check", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{failing(instance(0, "g-0", 0, 0), "GET http://10.0.0.1:61001/health: 503 Service Unavailable", 2000, 1000)}
		}, ""),
		Entry("a failing check that has failed once: since is its own time", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{failing(instance(0, "g-0", 0, 0), "TCP connect to 10.0.0.1:61001: connection refused", 2000, 2000)}
		}, ""),
		Entry("a failing check's output of 512 bytes", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{failing(instance(0, "g-0", 0, 0), strings.Repeat("x", 512), 2000, 1000)}
		}, ""),
		Entry("a failing check's output of 513 bytes", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{failing(instance(0, "g-0", 0, 0), strings.Repeat("x", 513), 2000, 1000)}
		}, "health[0].instances[0].last_check_failure: must be at most 512 bytes, got 513"),
		Entry("a failing check's output that is not UTF-8", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{failing(instance(0, "g-0", 0, 0), "503 \xff", 2000, 1000)}
		}, "health[0].instances[0].last_check_failure: must be valid UTF-8"),
		Entry("a failing check without its time", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{failing(instance(0, "g-0", 0, 0), "503", 0, 0)}
		}, "health[0].instances[0].last_check_failure_at: must be above 0 with a last_check_failure, got 0"),
		Entry("a failing check without since", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{failing(instance(0, "g-0", 0, 0), "503", 2000, 0)}
		}, "health[0].instances[0].check_failing_since: must be above 0 and at most last_check_failure_at (2000) with a last_check_failure, got 0"),
		Entry("a failing check since after it ran", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{failing(instance(0, "g-0", 0, 0), "503", 2000, 2001)}
		}, "health[0].instances[0].check_failing_since: must be above 0 and at most last_check_failure_at (2000) with a last_check_failure, got 2001"),
		Entry("a time without a failing check", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{failing(instance(0, "g-0", 0, 0), "", 2000, 0)}
		}, "health[0].instances[0].last_check_failure_at: must be 0 without a last_check_failure, got 2000"),
		Entry("since without a failing check", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{failing(instance(0, "g-0", 0, 0), "", 0, 1000)}
		}, "health[0].instances[0].check_failing_since: must be 0 without a last_check_failure, got 1000"),
		Entry("instances with more checks than the entry", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{instance(0, "g-0", 6, 0), instance(1, "g-1", 6, 0)}
		}, "health[0].instances: must count at most the entry's checks (10), got 12"),
		Entry("instances with more failures than the entry", func(r *models.ReportHealthRequest) {
			r.Health[0].Instances = []*models.InstanceHealth{instance(0, "g-0", 3, 1), instance(1, "g-1", 3, 1)}
		}, "health[0].instances: must count at most the entry's check failures (1), got 2"),
	)

	It("logs each entry as a definition_health event keyed by its LRP", func() {
		h := entry("web")
		e := models.DefinitionHealthLogged(aCell, h)
		Expect(e.Type).To(Equal(models.EventDefinitionHealth))
		Expect(e.Key).To(Equal("web"))
		Expect(proto.Equal(e.Payload, &models.DefinitionHealthEvent{CellId: aCell, Health: h})).To(BeTrue())
		Expect(e.ConcernsCell(aCell)).To(BeFalse(), "a rep follows its rows, not the health reports")
		Expect(models.NewEventPayload(models.EventDefinitionHealth)).To(BeAssignableToTypeOf(&models.DefinitionHealthEvent{}))
	})
})

var _ = Describe("BoardSignal of the health signals", func() {
	DescribeTable("a value only with samples",
		func(f *models.DefinitionSignals, name string, want float64, wantOK bool) {
			got, ok := models.BoardSignal(f, name)
			Expect(ok).To(Equal(wantOK))
			Expect(got).To(Equal(want))
		},
		Entry("a failure rate of checks", &models.DefinitionSignals{HealthChecks: 40, HealthCheckFailures: 2, HealthFailureRate: 0.05},
			"health_failure_rate", 0.05, true),
		Entry("no failures of 40 checks: 0, a value", &models.DefinitionSignals{HealthChecks: 40}, "health_failure_rate", 0.0, true),
		Entry("no checks: no value", &models.DefinitionSignals{}, "health_failure_rate", 0.0, false),
		Entry("a latency p99", &models.DefinitionSignals{HealthChecks: 4, HealthLatencyP99Ms: proto.Int64(20)}, "health_latency_p99_ms", 20.0, true),
		Entry("no latency: no value", &models.DefinitionSignals{}, "health_latency_p99_ms", 0.0, false),
		Entry("a memory p99", &models.DefinitionSignals{MemoryMbP99: proto.Int64(64)}, "memory_mb_p99", 64.0, true),
		Entry("no memory samples: no value", &models.DefinitionSignals{HealthChecks: 4}, "memory_mb_p99", 0.0, false),
		Entry("no signals at all", nil, "memory_mb_p99", 0.0, false),
	)
})

var _ = Describe("ReportedInstances (its worked example)", func() {
	It("keeps the instances with checks or a memory sample, by index then guid", func() {
		memoryOnly := instance(0, "a", 0, 0)
		nothing := instance(2, "c", 0, 0)
		nothing.MemoryMb = nil
		got := models.ReportedInstances([]*models.InstanceHealth{instance(1, "b", 3, 0), nothing, memoryOnly, instance(1, "a2", 1, 0)})
		guids := []string{}
		for _, in := range got {
			guids = append(guids, in.GetInstanceGuid())
		}
		Expect(guids).To(Equal([]string{"a", "a2", "b"}))
	})

	It("keeps an instance with a failing check and nothing else (one still starting)", func() {
		starting := instance(3, "d", 0, 0)
		starting.MemoryMb = nil
		nothing := instance(2, "c", 0, 0)
		nothing.MemoryMb = nil
		got := models.ReportedInstances([]*models.InstanceHealth{failing(starting, "TCP connect to 10.0.0.1:61001: connection refused", 2, 1), nothing})
		Expect(got).To(HaveLen(1))
		Expect(got[0].GetInstanceGuid()).To(Equal("d"))
		Expect((&models.DefinitionHealth{Instances: got}).HasNews()).To(BeTrue(), "a definition whose only news is a failing check is reported")
		Expect((&models.DefinitionHealth{Instances: []*models.InstanceHealth{nothing}}).HasNews()).To(BeFalse())
	})

	It("keeps at most MaxHealthInstances, the first by index", func() {
		var many []*models.InstanceHealth
		for i := range models.MaxHealthInstances + 5 {
			many = append(many, instance(int32(models.MaxHealthInstances+4-i), fmt.Sprintf("g-%d", i), 1, 0))
		}
		got := models.ReportedInstances(many)
		Expect(got).To(HaveLen(models.MaxHealthInstances))
		Expect(got[0].GetIndex()).To(BeEquivalentTo(0))
		Expect(got[len(got)-1].GetIndex()).To(BeEquivalentTo(models.MaxHealthInstances - 1))
	})
})

// failing gives in a failing check: its output, when it ran and since
// when it fails.
func failing(in *models.InstanceHealth, output string, at, since int64) *models.InstanceHealth {
	in.LastCheckFailure, in.LastCheckFailureAt, in.CheckFailingSince = output, at, since
	return in
}

var _ = Describe("CutCheckFailure", func() {
	It("keeps short output as it is", func() {
		Expect(models.CutCheckFailure("GET http://10.0.0.1:61001/health: 503 Service Unavailable")).To(Equal("GET http://10.0.0.1:61001/health: 503 Service Unavailable"))
	})
	It("cuts long output to MaxCheckFailureBytes at a character's start", func() {
		long := strings.Repeat("x", models.MaxCheckFailureBytes-1) + "é and more"
		got := models.CutCheckFailure(long)
		Expect(got).To(Equal(strings.Repeat("x", models.MaxCheckFailureBytes-1)), "é is 2 bytes: it does not fit in the last one")
		Expect(utf8.ValidString(got)).To(BeTrue())
	})
	It("replaces bytes that are not UTF-8", func() {
		Expect(models.CutCheckFailure("503 \xff")).To(Equal("503 \uFFFD"))
	})
})

var _ = Describe("HealthHeldBy", func() {
	entry := func(guid, definitionID string, instanceGuids ...string) *models.DefinitionHealth {
		h := &models.DefinitionHealth{ProcessGuid: guid, DefinitionId: definitionID, Checks: 1}
		for _, g := range instanceGuids {
			h.Instances = append(h.Instances, &models.InstanceHealth{InstanceGuid: g, Checks: 1})
		}
		return h
	}
	// summary is what a report holds, one string an entry:
	// "web v2 [g1]".
	summary := func(report []*models.DefinitionHealth) []string {
		var out []string
		for _, h := range report {
			var guids []string
			for _, in := range h.GetInstances() {
				guids = append(guids, in.GetInstanceGuid())
			}
			out = append(out, fmt.Sprintf("%s %s %v", h.GetProcessGuid(), h.GetDefinitionId(), guids))
		}
		return out
	}
	// Cell A's instances in the worked example.
	heldByA := []models.HeldInstance{{"web", "v2", "g1"}, {"web", "v2", "g2"}}

	DescribeTable("keeps what is about the cell's own instances",
		func(report []*models.DefinitionHealth, held []models.HeldInstance, want []string) {
			Expect(summary(models.HealthHeldBy(report, held))).To(Equal(want))
		},
		Entry("the worked example",
			[]*models.DefinitionHealth{entry("web", "v2", "g1", "g9"), entry("web", "v1", "g0"), entry("api", "v1")}, heldByA,
			[]string{"web v2 [g1]"}),
		Entry("1. an entry without instance parts, of a definition the cell holds",
			[]*models.DefinitionHealth{entry("web", "v2")}, heldByA, []string{"web v2 []"}),
		Entry("1. another LRP's definition of the same id",
			[]*models.DefinitionHealth{entry("api", "v2")}, heldByA, nil),
		Entry("2. every part the cell's, in the report's order",
			[]*models.DefinitionHealth{entry("web", "v2", "g2", "g1")}, heldByA, []string{"web v2 [g2 g1]"}),
		Entry("2. a part without an instance guid",
			[]*models.DefinitionHealth{entry("web", "v2", "", "g1")}, heldByA, []string{"web v2 [g1]"}),
		Entry("2. an instance of the cell's, under another definition",
			[]*models.DefinitionHealth{entry("web", "v2", "g1"), entry("web", "v3", "g1")},
			append([]models.HeldInstance{{"web", "v3", "g7"}}, heldByA...), []string{"web v2 [g1]", "web v3 []"}),
		Entry("a cell that holds nothing", []*models.DefinitionHealth{entry("web", "v2", "g1")}, nil, nil),
	)

	It("leaves the report it was given as it was (2)", func() {
		report := []*models.DefinitionHealth{entry("web", "v2", "g1", "g9")}
		kept := models.HealthHeldBy(report, heldByA)
		Expect(kept[0].GetInstances()).To(HaveLen(1))
		Expect(report[0].GetInstances()).To(HaveLen(2))
	})
})
