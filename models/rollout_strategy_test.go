package models_test

import (
	"errors"
	"math"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("ResolveRolloutStrategy", func() {
	DescribeTable("max_surge and max_unavailable as counts",
		func(instances int32, surge, unavailable string, wantSurge, wantUnavailable int32) {
			s, err := models.ResolveRolloutStrategy(instances,
				&models.UpdateStrategy{MaxSurge: surge, MaxUnavailable: unavailable})
			Expect(err).NotTo(HaveOccurred())
			Expect(s.MaxSurge).To(Equal(wantSurge), "surge")
			Expect(s.MaxUnavailable).To(Equal(wantUnavailable), "unavailable")
		},
		Entry("empty strings are the defaults: serial, never below count", int32(10), "", "", int32(1), int32(0)),
		Entry("only max_surge given: unavailable stays 0", int32(10), "2", "", int32(2), int32(0)),
		Entry("only max_unavailable given: surge stays 1", int32(10), "", "2", int32(1), int32(2)),
		Entry("0/0 surges by one", int32(10), "0", "0", int32(1), int32(0)),
		Entry("0%/0% surges by one", int32(10), "0%", "0%", int32(1), int32(0)),
		Entry("surge 0, unavailable 1", int32(10), "0", "1", int32(0), int32(1)),
		Entry("surge 25% on 10 rounds 2.5 up to 3", int32(10), "25%", "0", int32(3), int32(0)),
		Entry("unavailable 25% on 10 rounds 2.5 down to 2", int32(10), "0", "25%", int32(0), int32(2)),
		Entry("25%/25% on 10: at most 13, at least 8", int32(10), "25%", "25%", int32(3), int32(2)),
		Entry("25%/25% on 3: 0.75 up to 1, down to 0", int32(3), "25%", "25%", int32(1), int32(0)),
		Entry("33%/33% on 3: 0.99 up to 1, down to 0", int32(3), "33%", "33%", int32(1), int32(0)),
		Entry("34%/34% on 3: 1.02 up to 2, down to 1", int32(3), "34%", "34%", int32(2), int32(1)),
		Entry("50%/50% on 3: 1.5 up to 2, down to 1", int32(3), "50%", "50%", int32(2), int32(1)),
		Entry("0%/34% on 3: no surge, one down", int32(3), "0%", "34%", int32(0), int32(1)),
		Entry("1%/1% on 10: surge 0.1 up to 1, unavailable down to 0", int32(10), "1%", "1%", int32(1), int32(0)),
		Entry("0 and 1% on 10: both come to 0, surge becomes 1", int32(10), "0", "1%", int32(1), int32(0)),
		Entry("100%/100% on 10", int32(10), "100%", "100%", int32(10), int32(10)),
		Entry("100%/100% on 3", int32(3), "100%", "100%", int32(3), int32(3)),
		Entry("exact percents need no rounding: 20% of 10", int32(10), "20%", "20%", int32(2), int32(2)),
		Entry("10% of 7 is 0.7", int32(7), "10%", "10%", int32(1), int32(0)),
		Entry("33% of 1000", int32(1000), "33%", "33%", int32(330), int32(330)),
		Entry("counts larger than instances count as the instances", int32(10), "20", "15", int32(10), int32(10)),
		Entry("counts larger than 3 instances", int32(3), "5", "4", int32(3), int32(3)),
		Entry("a count far beyond int32", int32(3), "99999999999", "0", int32(3), int32(0)),
		Entry("0 instances: everything is 0, so surge 1", int32(0), "25%", "25%", int32(1), int32(0)),
		Entry("0 instances with counts", int32(0), "3", "3", int32(1), int32(0)),
		Entry("negative instances count as 0", int32(-4), "2", "2", int32(1), int32(0)),
	)

	It("resolves a nil strategy to every default", func() {
		s, err := models.ResolveRolloutStrategy(10, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(s).To(Equal(models.RolloutStrategy{
			Instances:        10,
			MaxSurge:         1,
			MaxUnavailable:   0,
			MinReady:         0,
			ProgressDeadline: 10 * time.Minute,
			AutoRevert:       false,
			HistoryLimit:     10,
		}))
		Expect(s.MaxInstances()).To(Equal(int32(11)))
		Expect(s.MinAvailable()).To(Equal(int32(10)))
	})

	It("gives the bounds of the worked example: 10 instances, 25%/25%", func() {
		s, err := models.ResolveRolloutStrategy(10, &models.UpdateStrategy{MaxSurge: "25%", MaxUnavailable: "25%"})
		Expect(err).NotTo(HaveOccurred())
		Expect(s.MaxInstances()).To(Equal(int32(13)))
		Expect(s.MinAvailable()).To(Equal(int32(8)))
	})

	DescribeTable("the other fields",
		func(in *models.UpdateStrategy, check func(models.RolloutStrategy)) {
			s, err := models.ResolveRolloutStrategy(5, in)
			Expect(err).NotTo(HaveOccurred())
			check(s)
		},
		Entry("min_ready in milliseconds", &models.UpdateStrategy{MinReadyMs: 1500},
			func(s models.RolloutStrategy) { Expect(s.MinReady).To(Equal(1500 * time.Millisecond)) }),
		Entry("min_ready 0 is 0", &models.UpdateStrategy{},
			func(s models.RolloutStrategy) { Expect(s.MinReady).To(BeZero()) }),
		Entry("progress_deadline 0 is the default 10 min", &models.UpdateStrategy{},
			func(s models.RolloutStrategy) { Expect(s.ProgressDeadline).To(Equal(10 * time.Minute)) }),
		Entry("progress_deadline given", &models.UpdateStrategy{ProgressDeadlineMs: 90_000},
			func(s models.RolloutStrategy) { Expect(s.ProgressDeadline).To(Equal(90 * time.Second)) }),
		Entry("auto_revert given", &models.UpdateStrategy{AutoRevert: true},
			func(s models.RolloutStrategy) { Expect(s.AutoRevert).To(BeTrue()) }),
		Entry("history_limit 0 is the default 10", &models.UpdateStrategy{},
			func(s models.RolloutStrategy) { Expect(s.HistoryLimit).To(Equal(int32(10))) }),
		Entry("history_limit given", &models.UpdateStrategy{HistoryLimit: 3},
			func(s models.RolloutStrategy) { Expect(s.HistoryLimit).To(Equal(int32(3))) }),
		Entry("instances kept", &models.UpdateStrategy{},
			func(s models.RolloutStrategy) { Expect(s.Instances).To(Equal(int32(5))) }),
	)

	DescribeTable("rejects a bad strategy, naming the field",
		func(in *models.UpdateStrategy, field string) {
			_, err := models.ResolveRolloutStrategy(10, in)
			var modelErr *models.Error
			Expect(errors.As(err, &modelErr)).To(BeTrue(), "a models.Error: %v", err)
			Expect(modelErr.GetType()).To(Equal(models.Error_InvalidRequest))
			Expect(modelErr.GetMessage()).To(HavePrefix(field + ": "))
		},
		Entry("a word", &models.UpdateStrategy{MaxSurge: "lots"}, "max_surge"),
		Entry("a percent over 100", &models.UpdateStrategy{MaxSurge: "101%"}, "max_surge"),
		Entry("a negative count", &models.UpdateStrategy{MaxUnavailable: "-1"}, "max_unavailable"),
		Entry("a fraction", &models.UpdateStrategy{MaxUnavailable: "2.5"}, "max_unavailable"),
		Entry("a bare percent sign", &models.UpdateStrategy{MaxUnavailable: "%"}, "max_unavailable"),
		Entry("a negative min_ready", &models.UpdateStrategy{MinReadyMs: -1}, "min_ready_ms"),
		Entry("a negative progress_deadline", &models.UpdateStrategy{ProgressDeadlineMs: -1}, "progress_deadline_ms"),
		Entry("a negative history_limit", &models.UpdateStrategy{HistoryLimit: -1}, "history_limit"),
	)

	DescribeTable("StoredRolloutStrategy: as ResolveRolloutStrategy, every default for a strategy that no longer validates",
		func(in *models.UpdateStrategy, want models.RolloutStrategy) {
			Expect(models.StoredRolloutStrategy(10, in)).To(Equal(want))
		},
		Entry("nil: every default", nil, models.RolloutStrategy{
			Instances: 10, MaxSurge: 1, ProgressDeadline: 10 * time.Minute, HistoryLimit: 10,
		}),
		Entry("a valid strategy as resolved", &models.UpdateStrategy{MaxSurge: "25%", ProgressDeadlineMs: 90_000, AutoRevert: true},
			models.RolloutStrategy{Instances: 10, MaxSurge: 3, ProgressDeadline: 90 * time.Second, AutoRevert: true, HistoryLimit: 10}),
		Entry("an invalid one: every default, its valid fields too", &models.UpdateStrategy{MaxSurge: "lots", ProgressDeadlineMs: 90_000},
			models.RolloutStrategy{Instances: 10, MaxSurge: 1, ProgressDeadline: 10 * time.Minute, HistoryLimit: 10}),
	)
})

var _ = Describe("FastRollout and SurgeNow", func() {
	// twelve is 12 instances with the default strategy: max_surge 1,
	// max_unavailable 0, and a min_ready of 30 s.
	twelve := func() models.RolloutStrategy {
		s, err := models.ResolveRolloutStrategy(12, &models.UpdateStrategy{MinReadyMs: 30_000})
		Expect(err).NotTo(HaveOccurred())
		return s
	}

	It("waits for no min_ready and keeps max_unavailable", func() {
		s, err := models.ResolveRolloutStrategy(12, &models.UpdateStrategy{MaxUnavailable: "2", MinReadyMs: 30_000})
		Expect(err).NotTo(HaveOccurred())
		fast := s.FastRollout(5)
		Expect(fast.Fast).To(BeTrue())
		Expect(fast.MinReady).To(BeZero())
		Expect(fast.Room).To(Equal(int32(5)))
		Expect(fast.MaxUnavailable).To(Equal(int32(2)))
		Expect(fast.MaxSurge).To(Equal(s.MaxSurge), "the strategy's own surge is kept; SurgeNow replaces it")
	})

	DescribeTable("SurgeNow",
		func(fast bool, room, surging, want int32) {
			s := twelve()
			if fast {
				s = s.FastRollout(room)
			}
			Expect(s.SurgeNow(surging)).To(Equal(want))
		},
		// The worked example's steps.
		Entry("1. fast, room 20: every index", true, int32(20), int32(0), int32(12)),
		Entry("2. fast, room 5: 5", true, int32(5), int32(0), int32(5)),
		Entry("2. fast, 5 surging and no room left: still 5, nothing more", true, int32(0), int32(5), int32(5)),
		Entry("3. fast, predecessors told to stop hold the room: 0", true, int32(0), int32(0), int32(0)),
		Entry("4. fast, they are gone: 5 more", true, int32(5), int32(0), int32(5)),
		// Bounds.
		Entry("fast, room beyond the instances: the instances", true, int32(30), int32(0), int32(12)),
		Entry("fast, surging plus room beyond the instances", true, int32(10), int32(5), int32(12)),
		Entry("fast, a negative room counts as 0", true, int32(-3), int32(2), int32(2)),
		Entry("fast, the room of a huge board does not overflow", true, int32(math.MaxInt32), int32(math.MaxInt32), int32(12)),
		Entry("not fast: max_surge whatever the room", false, int32(20), int32(0), int32(1)),
		Entry("not fast: max_surge whatever surges", false, int32(0), int32(5), int32(1)),
	)
})
