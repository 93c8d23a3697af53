package main

import (
	"errors"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("staged phases", func() {
	DescribeTable("parseSafeRate reads <percent>%/<duration>",
		func(value string, want *models.SafeRate) {
			rate, err := parseSafeRate("safe-rate", value)
			Expect(err).NotTo(HaveOccurred())
			Expect(proto.Equal(rate, want)).To(BeTrue(), "got %v", rate)
		},
		Entry("Storj's 5% every 6 hours", "5%/6h", &models.SafeRate{Percent: 5, PerMs: 6 * 3600 * 1000}),
		Entry("seconds", "10%/5s", &models.SafeRate{Percent: 10, PerMs: 5000}),
		Entry("a fraction and a compound duration", "6.25%/1h30m", &models.SafeRate{Percent: 6.25, PerMs: 90 * 60 * 1000}),
		Entry("everything at once", "100%/1ms", &models.SafeRate{Percent: 100, PerMs: 1}),
	)

	DescribeTable("parseSafeRate refuses anything else as a usage error naming the flag",
		func(value, why string) {
			rate, err := parseSafeRate("rate", value)
			Expect(rate).To(BeNil())
			var usage *usageError
			Expect(errors.As(err, &usage)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(HavePrefix(`--rate "` + value + `": `))
			Expect(err.Error()).To(ContainSubstring(why))
			Expect(err.Error()).To(HaveSuffix("want <percent>%/<duration>, e.g. 5%/6h"))
		},
		Entry("no period", "5%", "no '/'"),
		Entry("no percent sign", "5/6h", "must end with '%'"),
		Entry("a share that is no number", "five%/6h", "a number above 0 and at most 100"),
		Entry("a share of 0", "0%/6h", "a number above 0 and at most 100"),
		Entry("a share over 100", "150%/6h", "a number above 0 and at most 100"),
		Entry("an empty period", "5%/", "a duration of at least 1ms"),
		Entry("a period without a unit", "5%/6", "a duration of at least 1ms"),
		Entry("a negative period", "5%/-1h", "a duration of at least 1ms"),
		Entry("a period under a millisecond", "5%/500us", "a duration of at least 1ms"),
		Entry("a period that is not whole milliseconds", "5%/1500us", "a whole number of milliseconds"),
	)

	DescribeTable("formatPercent: no trailing zeros, at most three decimals",
		func(percent float64, want string) {
			Expect(formatPercent(percent)).To(Equal(want))
		},
		Entry("a whole share", 50.0, "50%"),
		Entry("none", 0.0, "0%"),
		Entry("a quarter of a quarter", 6.25, "6.25%"),
		Entry("a share caught mid-growth", 0.023148148148148147, "0.023%"),
	)

	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	status := func(stage *models.RolloutStage) *models.RolloutStatus {
		return &models.RolloutStatus{
			ProcessGuid: "hello", State: models.RolloutStatus_PROGRESSING, ActiveDefinitionId: "v2", HealthyDefinitionId: "v1",
			Instances: 16, UpdatedInstances: 1, Stage: stage, Reason: "rolling from v1 to v2",
		}
	}
	growing := func() *models.RolloutStage {
		return &models.RolloutStage{
			PriorPercent: 6.25, TargetPercent: 12.5, SafeRate: &models.SafeRate{Percent: 5, PerMs: 6 * 3600 * 1000},
			SharePercent: 7.34, AllowedInstances: 2, ActiveInstances: 1,
			TargetAt: now.Add(4*time.Hour + 12*time.Minute + 3*time.Second + 400*time.Millisecond).UnixNano(),
		}
	}

	DescribeTable("stageCell: the phase, the share, the counts, and the time to the target or the pause",
		func(change func(*models.RolloutStage), want string) {
			stage := growing()
			change(stage)
			Expect(stageCell(status(stage), now)).To(Equal(want))
		},
		Entry("growing at a rate", func(*models.RolloutStage) {},
			"6.25% → 12.5% at 5%/6h0m0s; share 7.3%; allowed 2, on v2 1; target in 4h12m3s"),
		Entry("at its target", func(s *models.RolloutStage) { s.SharePercent, s.TargetAt = 12.5, 0 },
			"6.25% → 12.5% at 5%/6h0m0s; share 12.5%; allowed 2, on v2 1; target reached"),
		Entry("at once", func(s *models.RolloutStage) {
			s.SafeRate, s.TargetPercent, s.SharePercent, s.AllowedInstances, s.TargetAt = nil, 50, 50, 8, 0
		},
			"6.25% → 50% at once; share 50.0%; allowed 8, on v2 1; target reached"),
		Entry("paused, and why", func(s *models.RolloutStage) {
			s.Paused, s.PausedAt, s.TargetAt = true, now.UnixNano(), 0
			s.PauseReason = "paused by cork (alice@laptop) from 127.0.0.1:53122"
		}, "6.25% → 12.5% at 5%/6h0m0s; share 7.3%; allowed 2, on v2 1; paused by cork (alice@laptop) from 127.0.0.1:53122"),
		Entry("paused without a reason", func(s *models.RolloutStage) { s.Paused, s.TargetAt = true, 0 },
			"6.25% → 12.5% at 5%/6h0m0s; share 7.3%; allowed 2, on v2 1; paused"),
		Entry("a reason on one line", func(s *models.RolloutStage) { s.Paused, s.PauseReason = true, "index 3 crashed:\n  exit 1" },
			"6.25% → 12.5% at 5%/6h0m0s; share 7.3%; allowed 2, on v2 1; paused: index 3 crashed: exit 1"),
		Entry("a target the board's clock put just behind cork's", func(s *models.RolloutStage) { s.TargetAt = now.Add(-time.Second).UnixNano() },
			"6.25% → 12.5% at 5%/6h0m0s; share 7.3%; allowed 2, on v2 1; target in 0s"),
	)

	It("stageCell is empty without a staged phase, so the table shows -", func() {
		Expect(stageCell(status(nil), now)).To(BeEmpty())
		row := rolloutStatusRow(status(nil), nil, now)
		Expect(row).To(HaveLen(len(rolloutStatusHeaders)))
		var out strings.Builder
		Expect(printTable(&out, rolloutStatusHeaders, [][]string{row})).To(Succeed())
		cells := strings.Fields(strings.Split(out.String(), "\n")[1])
		Expect(cells[8]).To(Equal("no"), "not fast")
		Expect(cells[10]).To(Equal("-"))
		Expect(strings.Join(cells[11:], " ")).To(Equal("rolling from v1 to v2"))
	})

	It("puts the stage in the STAGE column, before REASON, every column before it one word", func() {
		Expect(rolloutStatusHeaders[10:]).To(Equal([]string{"STAGE", "REASON"}))
		s := status(growing())
		s.State = models.RolloutStatus_HOLDING
		var out strings.Builder
		Expect(printTable(&out, rolloutStatusHeaders, [][]string{rolloutStatusRow(s, nil, now)})).To(Succeed())
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		Expect(lines).To(HaveLen(2))
		Expect(strings.Fields(lines[1])[:10]).To(Equal([]string{"hello", "HOLDING", "v2", "v1", "1/16", "0", "-", "-", "no",
			"max_surge=1,max_unavailable=0,min_ready=0s,progress_deadline=10m,auto_revert=no,history_limit=10"}))
		Expect(lines[1][strings.Index(lines[0], "STAGE"):]).To(HavePrefix("6.25% → 12.5% at 5%/6h0m0s; share 7.3%; allowed 2, on v2 1; target in 4h12m3s  rolling from v1 to v2"))
	})

	Describe("rolloutOver", func() {
		It("ends a watch at HOLDING with exit 5, naming the target", func() {
			s := status(growing())
			s.State, s.Reason = models.RolloutStatus_HOLDING, "2 of 16 run v2"
			over, err := rolloutOver(s)
			Expect(over).To(BeTrue())
			var outcome *outcomeError
			Expect(errors.As(err, &outcome)).To(BeTrue())
			Expect(outcome.code).To(Equal(5))
			Expect(outcome.msg).To(Equal("rollout holding at 12.5% until promoted: 2 of 16 run v2"))
		})

		It("keeps watching a paused phase", func() {
			stage := growing()
			stage.Paused = true
			over, err := rolloutOver(status(stage))
			Expect(over).To(BeFalse())
			Expect(err).NotTo(HaveOccurred())
		})
	})
})

var _ = Describe("sameForWatch", func() {
	staged := func(share float64, allowed int32) *models.RolloutStatus {
		return &models.RolloutStatus{
			ProcessGuid: "hello", State: models.RolloutStatus_PROGRESSING,
			Stage: &models.RolloutStage{TargetPercent: 25, SharePercent: share, AllowedInstances: allowed},
		}
	}

	It("prints nothing new when only the share grew between two reads, and leaves the statuses as they were", func() {
		a, b := staged(0.0001, 1), staged(0.0002, 1)
		Expect(sameForWatch(a, b, true)).To(BeTrue())
		Expect(a.GetStage().GetSharePercent()).To(Equal(0.0001))
		Expect(b.GetStage().GetSharePercent()).To(Equal(0.0002))
	})

	It("prints a row when the share allows another instance, or anything else changed", func() {
		Expect(sameForWatch(staged(4.9, 1), staged(5.1, 2), true)).To(BeFalse())
		moved := staged(5.1, 2)
		moved.UpdatedInstances = 1
		Expect(sameForWatch(staged(5.1, 2), moved, true)).To(BeFalse())
		Expect(sameForWatch(staged(5.1, 2), &models.RolloutStatus{ProcessGuid: "hello", State: models.RolloutStatus_PROGRESSING}, true)).To(BeFalse())
		Expect(sameForWatch(staged(5.1, 2), nil, true)).To(BeFalse(), "the first status of a watch")
	})

	It("prints no table row when only the signals changed, which no column shows, and a JSON line when they did", func() {
		withCrashes := func(n int32) *models.RolloutStatus {
			s := staged(5.1, 2)
			s.Definitions = []*models.DefinitionInstances{{DefinitionId: "v2", Instances: 2, Signals: &models.DefinitionSignals{Crashes: n}}}
			return s
		}
		Expect(sameForWatch(withCrashes(1), withCrashes(2), true)).To(BeTrue())
		Expect(sameForWatch(withCrashes(1), withCrashes(2), false)).To(BeFalse())
		more := withCrashes(2)
		more.Definitions[0].Instances = 3
		Expect(sameForWatch(withCrashes(1), more, true)).To(BeFalse())
	})

	It("prints no JSON line when only the signals' windows moved with the clock", func() {
		read := func(windowMs int64, rate float64) *models.RolloutStatus {
			s := staged(5.1, 2)
			s.Definitions = []*models.DefinitionInstances{{DefinitionId: "v2", Instances: 2,
				Signals:         &models.DefinitionSignals{WindowMs: windowMs, Crashes: 1, CrashRate: rate},
				InstanceSignals: []*models.InstanceSignals{{Index: 0, WindowMs: windowMs, Crashes: 1}}}}
			return s
		}
		Expect(sameForWatch(read(30_000, 0.5), read(90_000, 1.0/3), false)).To(BeTrue())
		crashed := read(90_000, 1.0/3)
		crashed.Definitions[0].InstanceSignals[0].Crashes = 2
		Expect(sameForWatch(read(30_000, 0.5), crashed, false)).To(BeFalse())
	})
})
