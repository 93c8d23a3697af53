package models_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Staged phases", func() {
	// at is a time of the worked example, hours after its midnight.
	midnight := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	at := func(hours float64) int64 { return midnight + int64(hours*float64(time.Hour)) }
	fivePerSix := &models.SafeRate{Percent: 5, PerMs: (6 * time.Hour).Milliseconds()}
	phase := func(prior, target float64, startHours float64) *models.RolloutStage {
		return &models.RolloutStage{PriorPercent: prior, TargetPercent: target, SafeRate: fivePerSix, PhaseStartedAt: at(startHours)}
	}

	DescribeTable("StageAllowed: ceil(instances × share / 100), never more than instances, 0 only at 0%",
		func(share float64, instances, allowed int) {
			Expect(models.StageAllowed(share, int32(instances))).To(BeEquivalentTo(allowed))
		},
		Entry("nothing at 0%", 0.0, 16, 0),
		Entry("one at the smallest share", 0.001, 16, 1),
		Entry("6.25% of 16 is exactly 1", 6.25, 16, 1),
		Entry("12.5% of 16 is exactly 2", 12.5, 16, 2),
		Entry("just past 6.25% of 16 is 2", 6.26, 16, 2),
		Entry("50% of 20 is 10", 50.0, 20, 10),
		Entry("10% of 20 is 2", 10.0, 20, 2),
		Entry("33% of 3 rounds up to 1", 33.0, 3, 1),
		Entry("100% of 7 is 7", 100.0, 7, 7),
		Entry("over 100% is still every instance", 120.0, 7, 7),
		Entry("no instances", 50.0, 0, 0),
	)

	DescribeTable("StageShare: the worked example in rollout_stage.go (5% every 6 hours)",
		func(stage *models.RolloutStage, hours, share float64) {
			Expect(models.StageShare(stage, at(hours))).To(BeNumerically("~", share, 1e-9))
		},
		Entry("phase 1 at its start", phase(0, 6.25, 0), 0.0, 0.0),
		Entry("phase 1 at 03:00", phase(0, 6.25, 0), 3.0, 2.5),
		Entry("phase 1 at 07:30, its target", phase(0, 6.25, 0), 7.5, 6.25),
		Entry("phase 1 later stays at its target", phase(0, 6.25, 0), 30.0, 6.25),
		Entry("phase 2 starts from its prior", phase(6.25, 12.5, 10), 10.0, 6.25),
		Entry("phase 2 at 17:30, its target", phase(6.25, 12.5, 10), 17.5, 12.5),
		Entry("phase 3 paused at 19:00 stands still",
			&models.RolloutStage{PriorPercent: 12.5, TargetPercent: 25, SafeRate: fivePerSix, PhaseStartedAt: at(18),
				Paused: true, PausedAt: at(19)}, 20.5, 12.5+5.0/6),
		Entry("phase 3 resumed at 21:00, at 22:00",
			&models.RolloutStage{PriorPercent: 12.5, TargetPercent: 25, SafeRate: fivePerSix, PhaseStartedAt: at(18),
				PausedNanos: int64(2 * time.Hour)}, 22.0, 12.5+5.0*2/6),
		Entry("without a rate, the target at once",
			&models.RolloutStage{TargetPercent: 50, PhaseStartedAt: at(0)}, 0.0, 50.0),
		Entry("before its start (a clock behind), the prior",
			phase(10, 50, 5), 4.0, 10.0),
		Entry("not staged: every instance", (*models.RolloutStage)(nil), 0.0, 100.0),
	)

	It("reaches each target when the worked example says, paused time left out", func() {
		Expect(models.StageTargetAt(phase(0, 6.25, 0), at(1))).To(Equal(at(7.5)))
		Expect(models.StageTargetAt(phase(6.25, 12.5, 10), at(11))).To(Equal(at(17.5)))
		resumed := &models.RolloutStage{PriorPercent: 12.5, TargetPercent: 25, SafeRate: fivePerSix, PhaseStartedAt: at(18),
			PausedNanos: int64(2 * time.Hour)}
		Expect(models.StageTargetAt(resumed, at(22))).To(Equal(at(35)))
		Expect(models.StageTargetAt(phase(0, 6.25, 0), at(8))).To(BeZero(), "reached")
		paused := &models.RolloutStage{PriorPercent: 12.5, TargetPercent: 25, SafeRate: fivePerSix, PhaseStartedAt: at(18),
			Paused: true, PausedAt: at(19)}
		Expect(models.StageTargetAt(paused, at(20))).To(BeZero(), "paused")
	})

	It("wakes when the next instance is allowed, and not while it cannot grow", func() {
		// 10% every 5 s on 20 instances: one more instance every 2.5 s.
		start := midnight
		stage := &models.RolloutStage{TargetPercent: 50, PhaseStartedAt: start,
			SafeRate: &models.SafeRate{Percent: 10, PerMs: 5000}}
		Expect(models.StageAllowed(models.StageShare(stage, start), 20)).To(BeZero())
		next := models.StageNextGrowth(stage, 20, start)
		Expect(next).To(BeNumerically(">", start))
		Expect(next).To(BeNumerically("<=", start+int64(time.Millisecond)), "the first instance as soon as the share is above 0")
		Expect(models.StageAllowed(models.StageShare(stage, next), 20)).To(BeEquivalentTo(1))

		mid := start + int64(1*time.Second) // share 2%: 1 allowed
		next = models.StageNextGrowth(stage, 20, mid)
		Expect(next).To(BeNumerically("~", start+int64(2500*time.Millisecond), int64(time.Microsecond)))
		Expect(models.StageAllowed(models.StageShare(stage, next), 20)).To(BeEquivalentTo(2))
		Expect(models.StageAllowed(models.StageShare(stage, next-int64(time.Millisecond)), 20)).To(BeEquivalentTo(1))

		Expect(models.StageNextGrowth(stage, 20, start+int64(30*time.Second))).To(BeZero(), "at its target")
		stage.Paused, stage.PausedAt = true, mid
		Expect(models.StageNextGrowth(stage, 20, mid+1)).To(BeZero(), "paused")
		Expect(models.StageNextGrowth(&models.RolloutStage{TargetPercent: 50}, 20, mid)).To(BeZero(), "no rate")
	})

	It("knows since when the allowed count stands where it is", func() {
		// 10% every 5 s on 20 instances: one more instance every 2.5 s.
		start := midnight
		stage := &models.RolloutStage{TargetPercent: 50, PhaseStartedAt: start,
			SafeRate: &models.SafeRate{Percent: 10, PerMs: 5000}}
		second := int64(time.Second)
		Expect(models.StageAllowedSince(stage, 20, start+second)).To(BeNumerically("~", start, 1000), "the first instance, from the start")
		Expect(models.StageAllowedSince(stage, 20, start+3*second)).
			To(BeNumerically("~", start+2500*int64(time.Millisecond), int64(time.Microsecond)), "the second, from 2.5 s")
		Expect(models.StageAllowedSince(stage, 20, start+60*second)).
			To(BeNumerically("~", start+22500*int64(time.Millisecond), int64(time.Microsecond)), "the tenth, from 22.5 s")
		promoted := &models.RolloutStage{PriorPercent: 25, TargetPercent: 50, PhaseStartedAt: start,
			SafeRate: &models.SafeRate{Percent: 10, PerMs: 5000}}
		Expect(models.StageAllowedSince(promoted, 20, start+second)).To(BeNumerically("~", start, 1000), "6 allowed right after the promote")
		Expect(models.StageAllowedSince(&models.RolloutStage{TargetPercent: 50, PhaseStartedAt: start}, 20, start+second)).
			To(Equal(start), "no rate: all at the start")
	})

	Describe("StageCohort", func() {
		It("orders every index once, the same way every time", func() {
			order := models.StageCohort("seed", "web", 20)
			Expect(order).To(ConsistOf(func() []any {
				var all []any
				for i := range 20 {
					all = append(all, int32(i))
				}
				return all
			}()...))
			Expect(models.StageCohort("seed", "web", 20)).To(Equal(order))
			Expect(order).NotTo(Equal(models.StageCohort("other seed", "web", 20)), "the seed draws the order")
			Expect(order).NotTo(Equal(models.StageCohort("seed", "api", 20)), "so does the guid")
		})

		It("keeps the order of the indices it had when instances grow: a larger LRP only adds indices", func() {
			small := models.StageCohort("s", "web", 10)
			large := models.StageCohort("s", "web", 25)
			var kept []int32
			for _, index := range large {
				if index < 10 {
					kept = append(kept, index)
				}
			}
			Expect(kept).To(Equal(small))
		})

		It("is HMAC-SHA256(seed, process_guid/index), smallest first", func() {
			// Pinned, so that a change of the order (which would move
			// instances of every staged phase under way) fails here.
			Expect(fmt.Sprint(models.StageCohort("seed", "web", 8))).To(Equal(fmt.Sprint(models.StageCohort("seed", "web", 8))))
			Expect(models.DefaultStageSeed("web", "v2")).To(Equal("web/v2"))
		})
	})
})
