package signals_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/signals"
)

// instanceReport is a cell's health report of lrp's v2 with one entry per
// instance given, its checks by latency bucket index, failures, and memory
// (nil: no sample); the definition's part adds them up.
type instancePart struct {
	index    int32
	guid     string
	latency  map[int]int64
	failures int32
	memoryMB *int64
}

func instanceReport(parts ...instancePart) *models.DefinitionHealth {
	h := report(nil, 0, nil)
	for _, p := range parts {
		in := &models.InstanceHealth{Index: p.index, InstanceGuid: p.guid, CheckFailures: p.failures,
			LatencyBucketCounts: make([]int64, len(models.HealthLatencyBucketsMs)+1), MemoryMb: p.memoryMB}
		for i, c := range p.latency {
			in.LatencyBucketCounts[i] = c
			h.LatencyBucketCounts[i] += c
			in.Checks += int32(c)
		}
		h.Checks += in.Checks
		h.CheckFailures += p.failures
		h.Instances = append(h.Instances, in)
	}
	return h
}

// instancesByIndex keys figures by index, for the table's expectations.
func instancesByIndex(figures []*models.InstanceSignals) map[int32]*models.InstanceSignals {
	out := map[int32]*models.InstanceSignals{}
	for _, f := range figures {
		out[f.GetIndex()] = f
	}
	return out
}

var _ = Describe("Window.Instances (its worked examples)", func() {
	const within5ms, within1s = 2, 9

	type event func(w *signals.Window)
	seen := func(index int32, guid string, d time.Duration) event {
		return func(w *signals.Window) { w.InstanceSeen("lrp", "v2", index, guid, ago(d)) }
	}
	crashed := func(index int32, d time.Duration, reason string) event {
		return func(w *signals.Window) { w.InstanceCrashed("lrp", "v2", index, ago(d), reason) }
	}
	restarted := func(index int32, d time.Duration) event {
		return func(w *signals.Window) { w.InstanceRestarted("lrp", "v2", index, ago(d)) }
	}
	readied := func(index int32, guid string, d, took time.Duration) event {
		return func(w *signals.Window) { w.InstanceReadied("lrp", "v2", index, guid, ago(d), took) }
	}
	reported := func(d time.Duration, parts ...instancePart) event {
		return func(w *signals.Window) { w.Reported(instanceReport(parts...), ago(d)) }
	}

	DescribeTable("figures at t0 over a span of 5 minutes",
		func(events []event, want []*models.InstanceSignals) {
			w := signals.NewWindow(5 * time.Minute)
			for _, e := range events {
				e(w)
			}
			got := w.Instances("lrp", "v2", t0)
			Expect(got).To(HaveLen(len(want)))
			for i := range want {
				Expect(proto.Equal(got[i], want[i])).To(BeTrue(), "index %d: got %v, want %v", want[i].GetIndex(), got[i], want[i])
			}
		},
		Entry("1. one of two instances crashed twice and restarted: only its row says so",
			[]event{
				seen(0, "g0", 10*time.Minute), seen(1, "g1", 10*time.Minute),
				readied(0, "g0", 4*time.Minute, 900*time.Millisecond),
				crashed(1, 3*time.Minute, "exited with code 3"), restarted(1, 3*time.Minute),
				crashed(1, time.Minute, "exited with code 2"), restarted(1, time.Minute),
				readied(1, "g1b", 50*time.Second, 1500*time.Millisecond),
			},
			[]*models.InstanceSignals{
				{Index: 0, InstanceGuid: "g0", WindowMs: 300000, TimeToReadyMs: proto.Int64(900)},
				{Index: 1, InstanceGuid: "g1b", WindowMs: 300000, Crashes: 2, LastCrashReason: "exited with code 2",
					Restarts: 2, TimeToReadyMs: proto.Int64(1500)},
			}),
		Entry("2. an instance first seen 40 s ago: a span of 40 s",
			[]event{seen(3, "g3", 40*time.Second)},
			[]*models.InstanceSignals{{Index: 3, InstanceGuid: "g3", WindowMs: 40000}}),
		Entry("3. two reports of index 0: checks, failures, latency p99 of the merged buckets, memory p99 of the samples",
			[]event{
				seen(0, "g0", 10*time.Minute),
				reported(20*time.Second, instancePart{0, "g0", map[int]int64{within5ms: 19, within1s: 1}, 1, proto.Int64(30)}),
				reported(10*time.Second, instancePart{0, "g0", map[int]int64{within5ms: 10}, 0, proto.Int64(34)}),
			},
			[]*models.InstanceSignals{{Index: 0, InstanceGuid: "g0", WindowMs: 300000, HealthChecks: 30, HealthCheckFailures: 1,
				HealthLatencyP99Ms: proto.Int64(1000), MemoryMbP99: proto.Int64(34)}}),
		Entry("4. a report without a memory sample: checks, no memory",
			[]event{
				seen(0, "g0", 10*time.Minute),
				reported(10*time.Second, instancePart{0, "g0", map[int]int64{within5ms: 4}, 0, nil}),
			},
			[]*models.InstanceSignals{{Index: 0, InstanceGuid: "g0", WindowMs: 300000, HealthChecks: 4, HealthLatencyP99Ms: proto.Int64(5)}}),
		Entry("5. a crash older than the span: no crash, no reason",
			[]event{
				seen(0, "g0", 10*time.Minute),
				crashed(0, 6*time.Minute, "exited with code 1"), restarted(0, 6*time.Minute),
			},
			[]*models.InstanceSignals{{Index: 0, InstanceGuid: "g0", WindowMs: 300000}}),
		Entry("a crashed row has no guid: the one before stays",
			[]event{seen(2, "g2", 10*time.Minute), seen(2, "", time.Minute)},
			[]*models.InstanceSignals{{Index: 2, InstanceGuid: "g2", WindowMs: 300000}}),
	)

	It("counts an instance's crashes and starts in its definition's figures too", func() {
		w := signals.NewWindow(5 * time.Minute)
		w.InstanceSeen("lrp", "v2", 0, "g0", ago(10*time.Minute))
		w.InstanceCrashed("lrp", "v2", 0, ago(time.Minute), "oom")
		w.InstanceReadied("lrp", "v2", 0, "g0b", ago(30*time.Second), 2*time.Second)
		got := w.Figures("lrp", "v2", 1, t0)
		Expect(proto.Equal(got, &models.DefinitionSignals{
			WindowMs: 300000, Crashes: 1, CrashRate: 0.2, TopCrashReason: "oom",
			Readied: 1, TimeToReadyP50Ms: 2000, TimeToReadyP99Ms: 2000,
		})).To(BeTrue(), "got %v", got)
	})

	It("keeps no instance from an old rep's report, which has none", func() {
		w := signals.NewWindow(5 * time.Minute)
		w.Reported(report(map[int]int64{within5ms: 4}, 0, nil), ago(time.Second))
		Expect(w.Figures("lrp", "v2", 1, t0).GetHealthChecks()).To(BeEquivalentTo(4))
		Expect(w.Instances("lrp", "v2", t0)).To(BeEmpty())
	})

	It("keeps one definition's instances apart from another's at the same index", func() {
		w := signals.NewWindow(5 * time.Minute)
		w.InstanceCrashed("lrp", "v1", 0, ago(time.Minute), "old")
		w.InstanceSeen("lrp", "v2", 0, "g", ago(time.Minute))
		Expect(w.Instances("lrp", "v1", t0)[0].GetCrashes()).To(BeEquivalentTo(1))
		Expect(w.Instances("lrp", "v2", t0)[0].GetCrashes()).To(BeZero())
	})

	Describe("the memory bound", func() {
		It("forgets an instance when its ORDINARY or RETIRING row is removed, not for a stand-in's", func() {
			w := signals.NewWindow(5 * time.Minute)
			for index := range int32(4) {
				w.InstanceSeen("lrp", "v2", index, fmt.Sprintf("g%d", index), ago(time.Minute))
			}
			w.InstanceRemoved("lrp", "v2", 0, models.ActualLRP_ORDINARY)
			w.InstanceRemoved("lrp", "v2", 1, models.ActualLRP_RETIRING)
			w.InstanceRemoved("lrp", "v2", 2, models.ActualLRP_EVACUATING)
			w.InstanceRemoved("lrp", "v2", 3, models.ActualLRP_SUSPECT)
			w.InstanceRemoved("lrp", "v9", 3, models.ActualLRP_ORDINARY)
			indices := []int32{}
			for _, f := range w.Instances("lrp", "v2", t0) {
				indices = append(indices, f.GetIndex())
			}
			Expect(indices).To(Equal([]int32{2, 3}))
		})

		It("does not bring a removed instance back with a cell's late report, until a row at its index is seen again", func() {
			w := signals.NewWindow(5 * time.Minute)
			for index := range int32(3) {
				w.InstanceSeen("lrp", "v2", index, fmt.Sprintf("g%d", index), ago(time.Minute))
			}
			w.InstanceRemoved("lrp", "v2", 2, models.ActualLRP_ORDINARY)
			// The cell's report covers the checks since its last one,
			// index 2's before it stopped among them.
			w.Reported(instanceReport(instancePart{index: 1, guid: "g1", latency: map[int]int64{2: 5}},
				instancePart{index: 2, guid: "g2", latency: map[int]int64{2: 3}}), ago(10*time.Second))
			Expect(instancesByIndex(w.Instances("lrp", "v2", t0))).To(HaveLen(2))
			Expect(instancesByIndex(w.Instances("lrp", "v2", t0))).NotTo(HaveKey(int32(2)))
			Expect(w.Figures("lrp", "v2", 2, t0).GetHealthChecks()).To(BeEquivalentTo(8), "the definition counts them all")

			// Scaled up again: a new row at index 2, and its reports.
			w.InstanceSeen("lrp", "v2", 2, "g2-again", ago(5*time.Second))
			w.Reported(instanceReport(instancePart{index: 2, guid: "g2-again", latency: map[int]int64{2: 4}}), ago(time.Second))
			again := instancesByIndex(w.Instances("lrp", "v2", t0))
			Expect(again).To(HaveKey(int32(2)))
			Expect(again[2].GetHealthChecks()).To(BeEquivalentTo(4))
			Expect(again[2].GetInstanceGuid()).To(Equal("g2-again"))
		})

		It("forgets an instance it heard nothing of for an hour, and a removed LRP's", func() {
			w := signals.NewWindow(5 * time.Minute)
			w.InstanceSeen("lrp", "v2", 0, "g0", ago(2*time.Hour))
			w.InstanceSeen("lrp", "v2", 1, "g1", ago(30*time.Minute))
			w.Sweep(t0)
			Expect(instancesByIndex(w.Instances("lrp", "v2", t0))).To(HaveLen(1))
			Expect(instancesByIndex(w.Instances("lrp", "v2", t0))).To(HaveKey(int32(1)))
			w.Forget("lrp")
			Expect(w.Instances("lrp", "v2", t0)).To(BeNil())
		})

		It("keeps at most 1,000 crashes of one instance, the latest", func() {
			w := signals.NewWindow(5 * time.Minute)
			for i := range 1500 {
				w.InstanceCrashed("lrp", "v2", 0, ago(time.Minute).Add(time.Duration(i)*time.Millisecond), fmt.Sprintf("crash %d", i))
			}
			f := w.Instances("lrp", "v2", t0)[0]
			Expect(f.GetCrashes()).To(BeEquivalentTo(1000))
			Expect(f.GetLastCrashReason()).To(Equal("crash 1499"))
		})
	})
})

var _ = Describe("Collector per instance", func() {
	row := func(index int32, guid string, state models.ActualLRP_State, since time.Time) *models.ActualLRP {
		return &models.ActualLRP{ProcessGuid: "lrp", Index: index, InstanceGuid: guid, DefinitionId: "v2",
			Presence: models.ActualLRP_ORDINARY, State: state, Since: since.UnixNano()}
	}

	It("shows the crash and the restart on the crashed instance's row alone, and exports it on /metrics until the row goes", func() {
		c := signals.NewCollector(5*time.Minute, func() time.Time { return t0 })
		for index := range int32(3) {
			guid := fmt.Sprintf("g%d", index)
			c.Observe(models.ActualLRPCreated(row(index, "", models.ActualLRP_UNCLAIMED, ago(3*time.Minute))))
			c.Observe(models.ActualLRPChanged(row(index, "", models.ActualLRP_UNCLAIMED, ago(3*time.Minute)),
				row(index, guid, models.ActualLRP_CLAIMED, ago(170*time.Second))))
			c.Observe(models.ActualLRPChanged(row(index, guid, models.ActualLRP_CLAIMED, ago(170*time.Second)),
				row(index, guid, models.ActualLRP_RUNNING, ago(169*time.Second))))
		}
		crashedRow := row(1, "", models.ActualLRP_CRASHED, ago(time.Minute))
		crashedRow.CrashReason, crashedRow.CrashCount = "exited with code 3", 1
		c.Observe(models.ActualLRPCrashed(crashedRow))
		c.Observe(models.ActualLRPChanged(crashedRow, row(1, "", models.ActualLRP_UNCLAIMED, ago(59*time.Second))))
		c.Observe(models.DefinitionHealthLogged("cell-1", instanceReport(
			instancePart{0, "g0", map[int]int64{2: 5}, 0, proto.Int64(7)},
			instancePart{2, "g2", map[int]int64{2: 4, 9: 1}, 1, proto.Int64(9)},
		)))

		got := instancesByIndex(c.Instances("lrp", "v2"))
		Expect(got).To(HaveLen(3))
		Expect(proto.Equal(got[0], &models.InstanceSignals{Index: 0, InstanceGuid: "g0", WindowMs: 180000,
			TimeToReadyMs: proto.Int64(1000), HealthChecks: 5, HealthLatencyP99Ms: proto.Int64(5), MemoryMbP99: proto.Int64(7)})).To(BeTrue(), "got %v", got[0])
		Expect(proto.Equal(got[1], &models.InstanceSignals{Index: 1, InstanceGuid: "g1", WindowMs: 180000,
			Crashes: 1, LastCrashReason: "exited with code 3", Restarts: 1, TimeToReadyMs: proto.Int64(1000)})).To(BeTrue(), "got %v", got[1])
		Expect(proto.Equal(got[2], &models.InstanceSignals{Index: 2, InstanceGuid: "g2", WindowMs: 180000,
			TimeToReadyMs: proto.Int64(1000), HealthChecks: 5, HealthCheckFailures: 1, HealthLatencyP99Ms: proto.Int64(1000), MemoryMbP99: proto.Int64(9)})).To(BeTrue(), "got %v", got[2])

		registry := prometheus.NewPedanticRegistry()
		Expect(registry.Register(c)).To(Succeed())
		series := func() map[string]float64 {
			families, err := registry.Gather()
			Expect(err).NotTo(HaveOccurred())
			out := map[string]float64{}
			for _, family := range families {
				for _, m := range family.GetMetric() {
					if len(m.GetLabel()) != 3 {
						continue
					}
					out[fmt.Sprintf("%s{index=%s}", family.GetName(), m.GetLabel()[1].GetValue())] = m.GetGauge().GetValue()
				}
			}
			return out
		}
		Expect(series()).To(And(
			HaveKeyWithValue("corkboard_instance_crashes{index=1}", 1.0),
			HaveKeyWithValue("corkboard_instance_restarts{index=1}", 1.0),
			HaveKeyWithValue("corkboard_instance_crashes{index=0}", 0.0),
			HaveKeyWithValue("corkboard_instance_health_check_failures{index=2}", 1.0),
			HaveKeyWithValue("corkboard_instance_memory_p99_bytes{index=2}", float64(9<<20)),
			HaveKeyWithValue("corkboard_instance_time_to_ready_seconds{index=0}", 1.0),
		))

		By("removing index 2's row: its series go with it")
		c.Observe(models.ActualLRPRemoved(row(2, "g2", models.ActualLRP_RUNNING, ago(time.Second))))
		Expect(series()).NotTo(HaveKey("corkboard_instance_crashes{index=2}"))
		Expect(series()).To(HaveKey("corkboard_instance_crashes{index=1}"))
	})
})

// Window.CheckFailures: the failing check of each instance, as its cell
// last reported it.
var _ = Describe("Window.CheckFailures", func() {
	// failingReport is a report of lrp's v2 with one instance per part;
	// output "" is an instance whose checks pass.
	type failingPart struct {
		index        int32
		guid, output string
		at, since    time.Duration
	}
	failingReport := func(parts ...failingPart) *models.DefinitionHealth {
		h := report(nil, 0, nil)
		for _, p := range parts {
			in := &models.InstanceHealth{Index: p.index, InstanceGuid: p.guid,
				LatencyBucketCounts: make([]int64, len(models.HealthLatencyBucketsMs)+1)}
			if p.output != "" {
				in.LastCheckFailure, in.LastCheckFailureAt, in.CheckFailingSince = p.output, ago(p.at).UnixNano(), ago(p.since).UnixNano()
			}
			h.Instances = append(h.Instances, in)
		}
		return h
	}
	const refused, unavailable = "GET http://10.0.0.1:61001/health: connection refused", "GET http://10.0.0.1:61001/health: 503 Service Unavailable"

	It("keeps the latest failing check of each instance, by index", func() {
		w := signals.NewWindow(5 * time.Minute)
		w.Reported(failingReport(failingPart{3, "g3", refused, 20 * time.Second, 30 * time.Second}, failingPart{1, "g1", "", 0, 0}), ago(20*time.Second))
		w.Reported(failingReport(failingPart{3, "g3", unavailable, 10 * time.Second, 30 * time.Second}), ago(10*time.Second))
		Expect(w.CheckFailures(t0)).To(Equal([]models.CheckFailure{{
			ProcessGuid: "lrp", DefinitionID: "v2", Index: 3, InstanceGuid: "g3", Output: unavailable,
			At: ago(10 * time.Second).UnixNano(), Since: ago(30 * time.Second).UnixNano(),
		}}))
	})

	It("forgets it when a report of the same start says its checks pass, not for another start's", func() {
		w := signals.NewWindow(5 * time.Minute)
		w.Reported(failingReport(failingPart{3, "g3", refused, 20 * time.Second, 30 * time.Second}), ago(20*time.Second))
		w.Reported(failingReport(failingPart{3, "g-older", "", 0, 0}), ago(15*time.Second))
		Expect(w.CheckFailures(t0)).To(HaveLen(1), "another start's passing checks say nothing of g3")
		w.Reported(failingReport(failingPart{3, "g3", "", 0, 0}), ago(10*time.Second))
		Expect(w.CheckFailures(t0)).To(BeEmpty())
	})

	It("keeps the newer of two starts' failures when an older report arrives late", func() {
		w := signals.NewWindow(5 * time.Minute)
		w.Reported(failingReport(failingPart{3, "g-new", unavailable, 5 * time.Second, 8 * time.Second}), ago(5*time.Second))
		w.Reported(failingReport(failingPart{3, "g-old", refused, 40 * time.Second, 60 * time.Second}), ago(4*time.Second))
		failures := w.CheckFailures(t0)
		Expect(failures).To(HaveLen(1))
		Expect(failures[0].InstanceGuid).To(Equal("g-new"))
	})

	It("forgets a failure older than the span, and with its instance", func() {
		w := signals.NewWindow(5 * time.Minute)
		w.Reported(failingReport(failingPart{0, "g0", refused, 6 * time.Minute, 7 * time.Minute}, failingPart{1, "g1", refused, time.Minute, time.Minute}, failingPart{2, "g2", refused, time.Minute, time.Minute}), ago(time.Minute))
		w.InstanceRemoved("lrp", "v2", 2, models.ActualLRP_ORDINARY)
		failures := w.CheckFailures(t0)
		Expect(failures).To(HaveLen(1))
		Expect(failures[0].Index).To(BeEquivalentTo(1))
		w.Forget("lrp")
		Expect(w.CheckFailures(t0)).To(BeEmpty())
	})

	It("does not bring a forgotten failure back when its instance is seen again, and reports a new one", func() {
		w := signals.NewWindow(5 * time.Minute)
		w.Reported(failingReport(failingPart{2, "g2", refused, time.Minute, time.Minute}), ago(time.Minute))
		w.InstanceRemoved("lrp", "v2", 2, models.ActualLRP_ORDINARY)
		w.InstanceSeen("lrp", "v2", 2, "g2-again", ago(30*time.Second))
		Expect(w.CheckFailures(t0)).To(BeEmpty())
		w.Reported(failingReport(failingPart{2, "g2-again", unavailable, 20 * time.Second, 20 * time.Second}), ago(20*time.Second))
		failures := w.CheckFailures(t0)
		Expect(failures).To(HaveLen(1))
		Expect(failures[0].InstanceGuid).To(Equal("g2-again"))
		w.Reported(failingReport(failingPart{2, "g2-again", "", 0, 0}), ago(10*time.Second))
		Expect(w.CheckFailures(t0)).To(BeEmpty())
		w.Reported(failingReport(failingPart{2, "g2-again", refused, 5 * time.Second, 5 * time.Second}), ago(5*time.Second))
		Expect(w.CheckFailures(t0)).To(HaveLen(1), "failing again after passing")
	})

	It("reaches the collector's CheckFailures from a definition_health event", func() {
		c := signals.NewCollector(5*time.Minute, func() time.Time { return t0 })
		c.Observe(models.DefinitionHealthLogged("cell-1", failingReport(failingPart{3, "g3", unavailable, 10 * time.Second, 12 * time.Second})))
		failures := c.CheckFailures()
		Expect(failures).To(HaveLen(1))
		Expect(failures[0].Output).To(Equal(unavailable))
		Expect(time.Duration(failures[0].At - failures[0].Since)).To(Equal(2 * time.Second))
	})
})

// BenchmarkCheckFailures is what every convergence pass pays to read the
// failing checks of a board that knows 30,000 instances, one of them
// failing: it visits the failing one, not the 30,000.
func BenchmarkCheckFailures(b *testing.B) {
	w := signals.NewWindow(5 * time.Minute)
	for i := range 30000 {
		w.InstanceSeen(fmt.Sprintf("lrp-%d", i), fmt.Sprintf("def-%d", i), 0, "g", t0)
	}
	h := &models.DefinitionHealth{ProcessGuid: "lrp-7", DefinitionId: "def-7", Checks: 1, CheckFailures: 1,
		LatencyBucketCounts: make([]int64, len(models.HealthLatencyBucketsMs)+1),
		Instances: []*models.InstanceHealth{{Index: 0, InstanceGuid: "g", Checks: 1, CheckFailures: 1,
			LatencyBucketCounts: make([]int64, len(models.HealthLatencyBucketsMs)+1),
			LastCheckFailure:    "GET /health: 503", LastCheckFailureAt: t0.UnixNano(), CheckFailingSince: t0.UnixNano()}}}
	w.Reported(h, t0)
	for b.Loop() {
		if len(w.CheckFailures(t0)) != 1 {
			b.Fatal("want the one failing check")
		}
	}
}
