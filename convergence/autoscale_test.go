package convergence_test

import (
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
)

var _ = Describe("WantedInstances", func() {
	// The table: total rooms, occupied, ready_target → desired,
	// with min 1 and no max. The total does not enter the formula; it is
	// the count the autoscaler starts from.
	DescribeTable("ceil(occupied / (1 − ready_target)), min 1, no max",
		func(total, occupied int32, readyTarget float64, want int32) {
			Expect(convergence.WantedInstances(occupied, readyTarget, 1, -1)).To(Equal(want), "from %d rooms", total)
		},
		Entry(nil, int32(100), int32(80), 0.5, int32(160)),
		Entry(nil, int32(100), int32(50), 0.5, int32(100)),
		Entry(nil, int32(100), int32(30), 0.5, int32(60)),
		Entry(nil, int32(50), int32(40), 0.3, int32(58)),
		Entry(nil, int32(50), int32(35), 0.3, int32(50)),
		Entry(nil, int32(50), int32(10), 0.3, int32(15)),
		Entry(nil, int32(10), int32(5), 0.9, int32(50)),
		Entry(nil, int32(10), int32(1), 0.9, int32(10)),
		Entry(nil, int32(10), int32(1), 0.8, int32(5)),
		Entry(nil, int32(5), int32(5), 0.1, int32(6)),
		Entry(nil, int32(1), int32(1), 0.3, int32(2)),
		Entry(nil, int32(2), int32(2), 0.9, int32(20)),
	)

	DescribeTable("clamped to [min, max]",
		func(occupied int32, readyTarget float64, least, most, want int32) {
			Expect(convergence.WantedInstances(occupied, readyTarget, least, most)).To(Equal(want))
		},
		Entry("nothing occupied: min", int32(0), 0.5, int32(2), int32(10), int32(2)),
		Entry("below min", int32(1), 0.5, int32(3), int32(10), int32(3)),
		Entry("above max", int32(8), 0.5, int32(2), int32(10), int32(10)),
		Entry("at max exactly", int32(5), 0.5, int32(2), int32(10), int32(10)),
		Entry("no max", int32(500), 0.5, int32(2), int32(-1), int32(1000)),
	)
})

var _ = Describe("Stabilize", func() {
	const window = int64(120e9)
	noon := int64(1_800_000_000) * 1e9
	at := func(seconds int64) int64 { return noon + seconds*1e9 }
	// The worked example in autoscale.go.
	history := []convergence.Recommendation{{At: at(0), Wanted: 8}, {At: at(30), Wanted: 4}, {At: at(60), Wanted: 6}}

	DescribeTable("up at once, down to the highest wanted within the window",
		func(current, wanted int32, now int64, want int32, keptFrom int, dueAt int64) {
			got := convergence.Stabilize(current, wanted, history, now, window)
			Expect(got.Instances).To(Equal(want))
			Expect(got.Kept[0]).To(Equal(history[keptFrom]))
			Expect(got.Kept[len(got.Kept)-1].Wanted).To(Equal(wanted))
			Expect(got.DueAt).To(Equal(dueAt))
		},
		Entry("1. the 8 of 12:00:00 is within the window: stay", int32(8), int32(6), at(60), int32(8), 0, at(150)),
		Entry("2. 12:02:10: 8 was still wanted at 12:00:10: stay", int32(8), int32(6), at(130), int32(8), 0, at(150)),
		Entry("3. 12:02:30: down to 6, the 8 no longer kept", int32(8), int32(6), at(150), int32(6), 1, int64(0)),
		Entry("4. more wanted: up at once", int32(6), int32(10), at(160), int32(10), 1, int64(0)),
		Entry("everything left the window: down to what is wanted", int32(8), int32(6), at(400), int32(6), 2, int64(0)),
		Entry("never above what runs", int32(5), int32(6), at(60), int32(6), 0, int64(0)),
		Entry("held, but not above what runs: due when the 6, the last of at least 5, is gone", int32(5), int32(4), at(70), int32(5), 0, at(190)),
	)

	It("is due when the last recommendation of at least the count leaves the window (example 5)", func() {
		later := append(slices.Clone(history), convergence.Recommendation{At: at(160), Wanted: 10},
			convergence.Recommendation{At: at(180), Wanted: 7}, convergence.Recommendation{At: at(200), Wanted: 9})
		got := convergence.Stabilize(10, 5, later, at(220), window)
		Expect(got.Instances).To(Equal(int32(10)))
		Expect(got.DueAt).To(Equal(at(300)), "12:05:00: the 10 leaves as 7 takes over")
		got = convergence.Stabilize(10, 5, got.Kept, at(300), window)
		Expect(got.Instances).To(Equal(int32(9)), "the 9 of 12:03:20 is the highest left")
		Expect(got.DueAt).To(Equal(at(340)), "12:05:40: 5 takes over from 9")
		got = convergence.Stabilize(9, 5, got.Kept, at(340), window)
		Expect(got.Instances).To(Equal(int32(5)))
		Expect(got.DueAt).To(BeZero())
	})

	It("records a change of the wanted count, and only a change", func() {
		got := convergence.Stabilize(8, 3, history, at(70), window)
		Expect(got.Kept).To(Equal(append(slices.Clone(history), convergence.Recommendation{At: at(70), Wanted: 3})))
		Expect(got.Instances).To(Equal(int32(8)))
		got = convergence.Stabilize(8, 6, history, at(70), window)
		Expect(got.Kept).To(Equal(history))
	})

	It("drops a recommendation dated after now (a clock that went back)", func() {
		got := convergence.Stabilize(8, 3, history, at(-10), window)
		Expect(got.Kept).To(Equal([]convergence.Recommendation{{At: at(-10), Wanted: 3}}))
		Expect(got.Instances).To(Equal(int32(3)))
	})
})
