package signals_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
			got := w.Figures("v2", instances, t0)
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
		Expect(w.Figures("v2", 1, t0).GetTopCrashReason()).To(Equal("a"))
	})

	It("knows nothing of a definition it never saw, and forgets a removed LRP's", func() {
		w := signals.NewWindow(5 * time.Minute)
		Expect(w.Figures("v9", 1, t0)).To(BeNil())
		w.Crashed("lrp", "v2", ago(time.Second), "x")
		w.Crashed("other", "w1", ago(time.Second), "x")
		w.Forget("lrp")
		Expect(w.Figures("v2", 1, t0)).To(BeNil())
		Expect(w.Figures("w1", 1, t0).GetCrashes()).To(Equal(int32(1)))
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

		f := c.Figures("v2", 2)
		Expect(proto.Equal(f, &models.DefinitionSignals{
			WindowMs: 120000, Crashes: 1, CrashRate: 0.25, TopCrashReason: "exited with code 2",
			Readied: 1, TimeToReadyP50Ms: 2000, TimeToReadyP99Ms: 2000,
		})).To(BeTrue(), "got %v", f)

		c.Observe(models.DesiredLRPRemoved(&models.DesiredLRP{ProcessGuid: "lrp"}))
		Expect(c.Figures("v2", 2)).To(BeNil())
	})
})
