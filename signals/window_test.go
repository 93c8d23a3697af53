package signals_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/signals"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// ago is t0 minus d.
func ago(d time.Duration) time.Time { return t0.Add(-d) }

var _ = Describe("Window.Figures (its worked examples)", func() {
	type crashAt struct {
		ago    time.Duration
		reason string
	}
	DescribeTable("figures at t0 over a span of 5 minutes",
		func(firstSeen time.Duration, crashes []crashAt, readied []time.Duration, instances int, want *models.DefinitionSignals) {
			w := signals.NewWindow(5 * time.Minute)
			w.Seen("lrp", "v2", ago(firstSeen))
			for _, c := range crashes {
				w.Crashed("lrp", "v2", ago(c.ago), c.reason)
			}
			for _, took := range readied {
				w.Readied("lrp", "v2", ago(time.Second), took)
			}
			got := w.Figures("lrp", "v2", instances, t0)
			Expect(proto.Equal(got, want)).To(BeTrue(), "got %v", got)
		},
		Entry("1. two crashes of 4 instances seen for 10 minutes", 10*time.Minute,
			[]crashAt{{time.Minute, "exited with code 1"}, {4 * time.Minute, "exited with code 1"}}, nil, 4,
			&models.DefinitionSignals{WindowMs: 300000, Crashes: 2, CrashRate: 0.1, TopCrashReason: "exited with code 1"}),
		Entry("2. one crash of 2 instances seen for 30 s: the span counts as a minute", 30*time.Second,
			[]crashAt{{10 * time.Second, "oom"}}, nil, 2,
			&models.DefinitionSignals{WindowMs: 30000, Crashes: 1, CrashRate: 0.5, TopCrashReason: "oom"}),
		Entry("3. no instance left: they count as one", 20*time.Minute,
			[]crashAt{{time.Minute, "a"}, {time.Minute, "a"}, {2 * time.Minute, "b"}}, nil, 0,
			&models.DefinitionSignals{WindowMs: 300000, Crashes: 3, CrashRate: 0.6, TopCrashReason: "a"}),
		Entry("4. times to ready: p50 the 2nd of 4, p99 the 4th", 10*time.Minute, nil,
			[]time.Duration{900 * time.Millisecond, 1200 * time.Millisecond, 1100 * time.Millisecond, 4 * time.Second}, 3,
			&models.DefinitionSignals{WindowMs: 300000, Readied: 4, TimeToReadyP50Ms: 1100, TimeToReadyP99Ms: 4000}),
		Entry("crashes older than the span are not counted", 10*time.Minute,
			[]crashAt{{6 * time.Minute, "old"}, {time.Minute, "new"}}, nil, 1,
			&models.DefinitionSignals{WindowMs: 300000, Crashes: 1, CrashRate: 0.2, TopCrashReason: "new"}),
	)

	It("names the latest of the reasons tied for the most crashes", func() {
		w := signals.NewWindow(5 * time.Minute)
		for i, reason := range []string{"a", "b", "b", "a"} {
			w.Crashed("lrp", "v2", ago(time.Duration(4-i)*time.Second), reason)
		}
		Expect(w.Figures("lrp", "v2", 1, t0).GetTopCrashReason()).To(Equal("a"))
	})

	It("forgets a definition it heard nothing of for an hour", func() {
		w := signals.NewWindow(5 * time.Minute)
		w.Crashed("lrp", "v1", ago(2*time.Hour), "x")
		w.Crashed("lrp", "v2", ago(30*time.Minute), "x")
		w.Sweep(t0)
		Expect(w.Figures("lrp", "v1", 1, t0)).To(BeNil(), "cleaned up long ago")
		Expect(w.Figures("lrp", "v2", 1, t0)).NotTo(BeNil(), "heard of within the hour")
	})

	It("keeps two LRPs' definitions of one id apart", func() {
		// "v2" is an id within its LRP: two LRPs desired from one spec
		// even derive the same one.
		w := signals.NewWindow(5 * time.Minute)
		w.Seen("healthy", "v2", ago(time.Minute))
		for i := range 3 {
			w.InstanceCrashed("crashing", "v2", int32(i), ago(time.Second), "exited with code 3")
		}
		w.InstanceSeen("healthy", "v2", 0, "g0", ago(time.Minute))
		Expect(w.Figures("healthy", "v2", 2, t0).GetCrashes()).To(BeZero())
		Expect(w.Instances("healthy", "v2", t0)).To(HaveLen(1))
		Expect(w.Instances("healthy", "v2", t0)[0].GetCrashes()).To(BeZero())
		Expect(w.Figures("crashing", "v2", 2, t0).GetCrashes()).To(BeEquivalentTo(3))

		w.InstanceRemoved("crashing", "v2", 0, models.ActualLRP_ORDINARY)
		Expect(w.Instances("healthy", "v2", t0)).To(HaveLen(1), "the other LRP's index 0 stays")
		w.Forget("crashing")
		Expect(w.Figures("healthy", "v2", 2, t0)).NotTo(BeNil())
	})

	It("knows nothing of a definition it never saw, and forgets a removed LRP's", func() {
		w := signals.NewWindow(5 * time.Minute)
		Expect(w.Figures("lrp", "v9", 1, t0)).To(BeNil())
		w.Crashed("lrp", "v2", ago(time.Second), "x")
		w.Crashed("other", "w1", ago(time.Second), "x")
		w.Forget("lrp")
		Expect(w.Figures("lrp", "v2", 1, t0)).To(BeNil())
		Expect(w.Figures("other", "w1", 1, t0).GetCrashes()).To(Equal(int32(1)))
	})
})

var _ = Describe("Collector", func() {
	row := func(index int32, def string, state models.ActualLRP_State, since time.Time) *models.ActualLRP {
		return &models.ActualLRP{ProcessGuid: "lrp", Index: index, DefinitionId: def, State: state, Since: since.UnixNano()}
	}
	It("counts starts to ready, crashes and their reasons from the events a board logs", func() {
		c := signals.NewCollector(5*time.Minute, func() time.Time { return t0 })
		c.Observe(models.ActualLRPCreated(row(0, "v2", models.ActualLRP_UNCLAIMED, ago(2*time.Minute))))
		c.Observe(models.ActualLRPChanged(row(0, "v2", models.ActualLRP_UNCLAIMED, ago(2*time.Minute)),
			row(0, "v2", models.ActualLRP_CLAIMED, ago(110*time.Second))))
		c.Observe(models.ActualLRPChanged(row(0, "v2", models.ActualLRP_CLAIMED, ago(110*time.Second)),
			row(0, "v2", models.ActualLRP_RUNNING, ago(108*time.Second))))
		crashed := row(0, "v2", models.ActualLRP_CRASHED, ago(time.Minute))
		crashed.CrashReason = "exited with code 2"
		c.Observe(models.ActualLRPCrashed(crashed))
		// A RUNNING instance changing (routable, say) is not a start.
		c.Observe(models.ActualLRPChanged(row(1, "v2", models.ActualLRP_RUNNING, ago(50*time.Second)),
			row(1, "v2", models.ActualLRP_RUNNING, ago(40*time.Second))))

		f := c.Figures("lrp", "v2", 2)
		Expect(proto.Equal(f, &models.DefinitionSignals{
			WindowMs: 120000, Crashes: 1, CrashRate: 0.25, TopCrashReason: "exited with code 2",
			Readied: 1, TimeToReadyP50Ms: 2000, TimeToReadyP99Ms: 2000,
		})).To(BeTrue(), "got %v", f)

		c.Observe(models.DesiredLRPRemoved(&models.DesiredLRP{ProcessGuid: "lrp"}))
		Expect(c.Figures("lrp", "v2", 2)).To(BeNil())
	})
})

// report is a cell's health report of lrp's v2: checks by latency bucket
// index, failures of them, memory samples by bucket index.
func report(latency map[int]int64, failures int32, memory map[int]int64) *models.DefinitionHealth {
	h := &models.DefinitionHealth{ProcessGuid: "lrp", DefinitionId: "v2", CheckFailures: failures,
		LatencyBucketCounts: make([]int64, len(models.HealthLatencyBucketsMs)+1),
		MemoryBucketCounts:  make([]int64, len(models.MemoryBucketsMB)+1)}
	for i, c := range latency {
		h.LatencyBucketCounts[i] = c
		h.Checks += int32(c)
	}
	for i, c := range memory {
		h.MemoryBucketCounts[i] = c
	}
	return h
}

var _ = Describe("Window.Figures of health reports (its worked examples)", func() {
	const within5ms, within1s, within64MB, within128MB = 2, 9, 2, 3

	It("5. adds two cells' reports: checks, failures, the rate, and p99s of the merged buckets", func() {
		w := signals.NewWindow(5 * time.Minute)
		w.Seen("lrp", "v2", ago(10*time.Minute))
		w.Reported(report(map[int]int64{within5ms: 57, within1s: 3}, 3, map[int]int64{within64MB: 2}), ago(20*time.Second))
		w.Reported(report(map[int]int64{within5ms: 30}, 0, map[int]int64{within64MB: 2, within128MB: 1}), ago(10*time.Second))
		got := w.Figures("lrp", "v2", 5, t0)
		Expect(proto.Equal(got, &models.DefinitionSignals{
			WindowMs: 300000, HealthChecks: 90, HealthCheckFailures: 3, HealthFailureRate: 3.0 / 90,
			HealthLatencyP99Ms: proto.Int64(1000), MemoryMbP99: proto.Int64(128),
		})).To(BeTrue(), "got %v", got)
	})

	It("6. memory alone: no checks, a rate of 0, no latency", func() {
		w := signals.NewWindow(5 * time.Minute)
		w.Reported(report(nil, 0, map[int]int64{0: 3}), ago(time.Minute))
		got := w.Figures("lrp", "v2", 3, t0)
		Expect(proto.Equal(got, &models.DefinitionSignals{WindowMs: 60000, MemoryMbP99: proto.Int64(16)})).To(BeTrue(), "got %v", got)
		_, ok := models.BoardSignal(got, "health_failure_rate")
		Expect(ok).To(BeFalse(), "no checks: no failure rate to judge")
	})

	It("drops reports older than the span", func() {
		w := signals.NewWindow(5 * time.Minute)
		w.Seen("lrp", "v2", ago(10*time.Minute))
		w.Reported(report(map[int]int64{within1s: 10}, 10, map[int]int64{within128MB: 1}), ago(6*time.Minute))
		w.Reported(report(map[int]int64{within5ms: 4}, 0, nil), ago(time.Minute))
		got := w.Figures("lrp", "v2", 1, t0)
		Expect(proto.Equal(got, &models.DefinitionSignals{
			WindowMs: 300000, HealthChecks: 4, HealthLatencyP99Ms: proto.Int64(5),
		})).To(BeTrue(), "got %v", got)
	})
})

var _ = Describe("Collector of health reports", func() {
	It("adds up definition_health events and exports them on /metrics", func() {
		c := signals.NewCollector(5*time.Minute, func() time.Time { return t0 })
		c.Observe(models.DefinitionHealthLogged("cell-1", report(map[int]int64{2: 8, 4: 2}, 1, map[int]int64{1: 2})))
		c.Observe(models.DefinitionHealthLogged("cell-2", report(map[int]int64{2: 10}, 0, map[int]int64{1: 1})))
		f := c.Figures("lrp", "v2", 3)
		Expect(f.GetHealthChecks()).To(BeEquivalentTo(20))
		Expect(f.GetHealthCheckFailures()).To(BeEquivalentTo(1))
		Expect(f.GetHealthFailureRate()).To(Equal(0.05))
		Expect(f.GetHealthLatencyP99Ms()).To(BeEquivalentTo(20))
		Expect(f.GetMemoryMbP99()).To(BeEquivalentTo(32))

		registry := prometheus.NewPedanticRegistry()
		Expect(registry.Register(c)).To(Succeed())
		families, err := registry.Gather()
		Expect(err).NotTo(HaveOccurred())
		values := map[string]float64{}
		for _, family := range families {
			for _, m := range family.GetMetric() {
				values[family.GetName()] = m.GetGauge().GetValue()
				Expect(m.GetLabel()).To(HaveLen(2), family.GetName())
			}
		}
		Expect(values).To(HaveKeyWithValue("corkboard_definition_health_checks", 20.0))
		Expect(values).To(HaveKeyWithValue("corkboard_definition_health_check_failures", 1.0))
		Expect(values).To(HaveKeyWithValue("corkboard_definition_health_latency_p99_seconds", 0.02))
		Expect(values).To(HaveKeyWithValue("corkboard_definition_memory_p99_bytes", float64(32<<20)))
	})
})
