package convergence_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("PlanRolloutStep", func() {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

	// outdated is n indices whose ORDINARY instances run an old definition
	// and serve, idle, since an hour ago; each change is applied in turn.
	outdated := func(n int, changes ...func([]convergence.RolloutIndex)) []convergence.RolloutIndex {
		indices := make([]convergence.RolloutIndex, n)
		for i := range indices {
			indices[i] = convergence.RolloutIndex{Index: int32(i), Serving: true, ServingSince: now.Add(-time.Hour)}
		}
		for _, change := range changes {
			change(indices)
		}
		return indices
	}
	// replaced: the index runs the active definition, serving for ago.
	replaced := func(ago time.Duration, at ...int) func([]convergence.RolloutIndex) {
		return func(indices []convergence.RolloutIndex) {
			for _, i := range at {
				indices[i] = convergence.RolloutIndex{Index: int32(i), Current: true, Serving: true, ServingSince: now.Add(-ago)}
			}
		}
	}
	// started: a replacement is under way; the RETIRING predecessor still
	// serves and the new instance is placed, not yet running.
	started := func(at ...int) func([]convergence.RolloutIndex) {
		return func(indices []convergence.RolloutIndex) {
			for _, i := range at {
				indices[i] = convergence.RolloutIndex{Index: int32(i), Current: true, Retiring: true, RetiringServing: true}
			}
		}
	}
	// runningFor: the started replacement's new instance has been RUNNING
	// and routable for ago.
	runningFor := func(ago time.Duration, at ...int) func([]convergence.RolloutIndex) {
		return func(indices []convergence.RolloutIndex) {
			for _, i := range at {
				indices[i].Serving = true
				indices[i].ServingSince = now.Add(-ago)
			}
		}
	}
	// toldToStop: the RETIRING predecessor was told to stop and drains
	// (no longer routable).
	toldToStop := func(at ...int) func([]convergence.RolloutIndex) {
		return func(indices []convergence.RolloutIndex) {
			for _, i := range at {
				indices[i].RetiringStopping = true
				indices[i].RetiringServing = false
			}
		}
	}
	occupied := func(at ...int) func([]convergence.RolloutIndex) {
		return func(indices []convergence.RolloutIndex) {
			for _, i := range at {
				indices[i].Occupied = true
			}
		}
	}
	notServing := func(at ...int) func([]convergence.RolloutIndex) {
		return func(indices []convergence.RolloutIndex) {
			for _, i := range at {
				indices[i].Serving = false
				indices[i].ServingSince = time.Time{}
			}
		}
	}
	// currentCrashed: the index runs the active definition but crashed.
	currentCrashed := func(at ...int) func([]convergence.RolloutIndex) {
		return func(indices []convergence.RolloutIndex) {
			for _, i := range at {
				indices[i] = convergence.RolloutIndex{Index: int32(i), Current: true}
			}
		}
	}

	type strategy struct {
		surge, unavailable string
		minReadyMs         int64
		// fast: resolved with FastRollout(room).
		fast bool
		room int32
	}
	serial := strategy{}
	start := func(i int32) convergence.Replacement { return convergence.Replacement{Index: i} }
	stopOld := func(i int32) convergence.Replacement { return convergence.Replacement{Index: i, StopOld: true} }

	DescribeTable("which replacements start and which predecessors stop",
		func(st strategy, indices []convergence.RolloutIndex, wantStart []convergence.Replacement, wantStop []int32, wantAvailable int) {
			s, err := models.ResolveRolloutStrategy(int32(len(indices)), &models.UpdateStrategy{
				MaxSurge: st.surge, MaxUnavailable: st.unavailable, MinReadyMs: st.minReadyMs,
			})
			Expect(err).NotTo(HaveOccurred())
			if st.fast {
				s = s.FastRollout(st.room)
			}
			step := convergence.PlanRolloutStep(indices, s, s.MaxUnavailable, now)
			if wantStart == nil {
				Expect(step.Start).To(BeEmpty(), "start")
			} else {
				Expect(step.Start).To(Equal(wantStart), "start")
			}
			if wantStop == nil {
				Expect(step.Stop).To(BeEmpty(), "stop")
			} else {
				Expect(step.Stop).To(Equal(wantStop), "stop")
			}
			Expect(step.Available).To(Equal(int32(wantAvailable)), "available")
		},

		// Serial default on 5 instances, S = 1, U = 0.
		Entry("serial: the first of 5 starts, before its old instance stops",
			serial, outdated(5), []convergence.Replacement{start(0)}, nil, 5),
		Entry("serial: nothing more while one is in flight",
			serial, outdated(5, started(0)), nil, nil, 5),
		Entry("serial: a new instance that runs but is not yet RUNNING for min_ready is still in flight",
			strategy{minReadyMs: 30_000}, outdated(5, started(0), runningFor(10*time.Second, 0)), nil, nil, 5),
		Entry("serial: ready, so its predecessor stops and the next index starts",
			serial, outdated(5, started(0), runningFor(time.Second, 0)), []convergence.Replacement{start(1)}, []int32{0}, 5),
		Entry("serial: a predecessor told to stop is not asked again, and frees the slot",
			serial, outdated(5, started(0), runningFor(time.Second, 0), toldToStop(0)), []convergence.Replacement{start(1)}, nil, 5),
		Entry("serial: the last index",
			serial, outdated(5, replaced(time.Minute, 0, 1, 2, 3)), []convergence.Replacement{start(4)}, nil, 5),
		Entry("serial: complete, nothing to do",
			serial, outdated(5, replaced(time.Minute, 0, 1, 2, 3, 4)), nil, nil, 5),

		// Surge 25% / unavailable 0 on 10: S = 3.
		Entry("surge 25%: three start at once, all start-before-stop",
			strategy{surge: "25%", unavailable: "0"}, outdated(10),
			[]convergence.Replacement{start(0), start(1), start(2)}, nil, 10),
		Entry("surge 25%: two in flight leave room for one",
			strategy{surge: "25%", unavailable: "0"}, outdated(10, started(0, 1)),
			[]convergence.Replacement{start(2)}, nil, 10),
		Entry("surge 25%: one ready frees its slot in the same pass",
			strategy{surge: "25%", unavailable: "0"}, outdated(10, started(0, 1, 2), runningFor(time.Second, 1)),
			[]convergence.Replacement{start(3)}, []int32{1}, 10),

		// Surge 0 / unavailable 1 on 10: U = 1, no surge.
		Entry("surge 0, unavailable 1: one index at a time, its old instance stops at once",
			strategy{surge: "0", unavailable: "1"}, outdated(10),
			[]convergence.Replacement{stopOld(0)}, nil, 9),
		Entry("surge 0, unavailable 1: nothing more while it is in flight",
			strategy{surge: "0", unavailable: "1"}, outdated(10, started(0), toldToStop(0)), nil, nil, 9),
		Entry("surge 0, unavailable 1: a crashed current index already uses the unavailability",
			strategy{surge: "0", unavailable: "1"}, outdated(10, currentCrashed(9)), nil, nil, 9),
		Entry("surge 0, unavailable 1: a not-serving old instance goes first and costs nothing",
			strategy{surge: "0", unavailable: "1"}, outdated(10, notServing(6)),
			[]convergence.Replacement{stopOld(6)}, nil, 9),

		// Both: the worked example.
		Entry("25%/25% on 10: three surge, two stop at once; 8 stay available",
			strategy{surge: "25%", unavailable: "25%"}, outdated(10),
			[]convergence.Replacement{start(0), start(1), start(2), stopOld(3), stopOld(4)}, nil, 8),

		// Victim order.
		Entry("occupied last: idle indices go first",
			strategy{surge: "2"}, outdated(5, occupied(0, 1, 2)),
			[]convergence.Replacement{start(3), start(4)}, nil, 5),
		Entry("occupied last: then occupied ones, by index",
			strategy{surge: "4"}, outdated(5, occupied(0, 1, 2)),
			[]convergence.Replacement{start(3), start(4), start(0), start(1)}, nil, 5),
		Entry("not serving first, even before idle ones",
			serial, outdated(5, notServing(3)),
			[]convergence.Replacement{stopOld(3)}, nil, 4),
		Entry("not serving, then idle, then occupied",
			strategy{surge: "4"}, outdated(5, occupied(0), notServing(4, 2)),
			[]convergence.Replacement{stopOld(2), stopOld(4), start(1), start(3)}, nil, 3),
		Entry("an outdated index whose predecessor still retires waits (supersede)",
			serial, outdated(3, started(0), func(x []convergence.RolloutIndex) { x[0].Current = false }),
			nil, nil, 3),

		// min_ready gating.
		Entry("min_ready: RUNNING and routable for exactly min_ready is ready",
			strategy{minReadyMs: 30_000}, outdated(3, started(0), runningFor(30*time.Second, 0)),
			[]convergence.Replacement{start(1)}, []int32{0}, 3),
		Entry("min_ready: a millisecond short is not",
			strategy{minReadyMs: 30_000}, outdated(3, started(0), runningFor(30*time.Second-time.Millisecond, 0)),
			nil, nil, 3),
		Entry("min_ready: a new instance that is not RUNNING and routable never is",
			strategy{minReadyMs: 0}, outdated(3, started(0)), nil, nil, 3),
		Entry("min_ready: only the ready ones of several stop",
			strategy{surge: "3", minReadyMs: 30_000},
			outdated(5, started(0, 1, 2), runningFor(time.Minute, 0), runningFor(time.Second, 1), runningFor(time.Hour, 2)),
			[]convergence.Replacement{start(3), start(4)}, []int32{0, 2}, 5),

		// Fast rollouts (models.RolloutStrategy.FastRollout), S = 1, U = 0
		// unless said: the worked examples 5 and 6.
		Entry("fast, room 20: all 10 start at once, start before stop",
			strategy{fast: true, room: 20}, outdated(10),
			[]convergence.Replacement{start(0), start(1), start(2), start(3), start(4), start(5), start(6), start(7), start(8), start(9)}, nil, 10),
		Entry("fast, room 4: 4 start, the rest wait for room",
			strategy{fast: true, room: 4}, outdated(10),
			[]convergence.Replacement{start(0), start(1), start(2), start(3)}, nil, 10),
		Entry("fast, room 0 while 4 surge: nothing more starts",
			strategy{fast: true, room: 0}, outdated(10, started(0, 1, 2, 3)), nil, nil, 10),
		Entry("fast, room 2 while 4 surge: 2 more start",
			strategy{fast: true, room: 2}, outdated(10, started(0, 1, 2, 3)),
			[]convergence.Replacement{start(4), start(5)}, nil, 10),
		Entry("fast: min_ready is not waited for, a serving successor is ready at once",
			strategy{fast: true, room: 0, minReadyMs: 30_000}, outdated(3, started(0), runningFor(time.Second, 0)),
			nil, []int32{0}, 3),
		Entry("fast, room 0, unavailable 1: the unavailability is used as any rollout uses it",
			strategy{surge: "0", unavailable: "1", fast: true, room: 0}, outdated(10),
			[]convergence.Replacement{stopOld(0)}, nil, 9),
		Entry("fast, room 3, unavailable 2: 3 start before stop, then 2 stop at once, never below 8",
			strategy{surge: "1", unavailable: "2", fast: true, room: 3}, outdated(10),
			[]convergence.Replacement{start(0), start(1), start(2), stopOld(3), stopOld(4)}, nil, 8),
		Entry("fast: not serving old instances go first, and are placed again in the room too",
			strategy{fast: true, room: 3}, outdated(5, notServing(3, 4)),
			[]convergence.Replacement{stopOld(3), stopOld(4), start(0)}, nil, 3),
	)

	It("wakes when the first serving replacement becomes ready", func() {
		s, err := models.ResolveRolloutStrategy(5, &models.UpdateStrategy{MaxSurge: "3", MinReadyMs: 30_000})
		Expect(err).NotTo(HaveOccurred())
		indices := outdated(5, started(0, 1, 2), runningFor(10*time.Second, 0), runningFor(20*time.Second, 1))
		step := convergence.PlanRolloutStep(indices, s, s.MaxUnavailable, now)
		Expect(step.Wake).To(Equal(now.Add(10 * time.Second)))
		Expect(step.InFlight).To(Equal(int32(3)))
		Expect(step.Surging).To(Equal(int32(3)))

		step = convergence.PlanRolloutStep(outdated(5), s, s.MaxUnavailable, now)
		Expect(step.Wake.IsZero()).To(BeTrue(), "nothing serving waits for min_ready")
	})

	It("counts in flight and surging after the step", func() {
		s, err := models.ResolveRolloutStrategy(10, &models.UpdateStrategy{MaxSurge: "25%", MaxUnavailable: "25%"})
		Expect(err).NotTo(HaveOccurred())
		step := convergence.PlanRolloutStep(outdated(10), s, s.MaxUnavailable, now)
		Expect(step.InFlight).To(Equal(int32(5)))
		Expect(step.Surging).To(Equal(int32(3)))
		Expect(step.Available).To(Equal(int32(8)))
		Expect(int32(10) + step.Surging).To(BeNumerically("<=", s.MaxInstances()))
	})
})
