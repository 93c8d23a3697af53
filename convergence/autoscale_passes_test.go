package convergence_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// Maestro's two rollouts with autoscaling, pass after pass (ready_target
// 0.5, surge 25%): 25 rooms on v1 when v2 becomes active, 5 or 20 of them
// occupied. Every plan is applied as ApplyConvergence would; new rooms
// start idle; for 100 s rooms fill and empty at random, then they only
// empty. After every
// pass: no more rooms than the count wanted plus the surge; an occupied
// room is never stopped while an idle one of its LRP keeps running
// (idle rooms go first, and occupied ones are replaced last); and in the
// end every room runs v2 at the count the occupancy wants.
var _ = Describe("Autoscaling over many passes", func() {
	DescribeTable("Maestro's rollouts: never above wanted + surge, never an occupied room before an idle one",
		func(occupied []int32) {
			cfg := convergence.DefaultConfig()
			for seed := range uint64(40) {
				r := rand.New(rand.NewPCG(seed, 13))
				now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
				s := maestroSnapshot(now, occupied)
				for pass := 0; pass < 400 && !(rolledOut(s) && settledScale(s, now, cfg)); pass++ {
					plan := convergence.Compute(s, now, cfg)
					checkOccupiedLast(s, plan, seed, pass)
					after, err := convergence.ApplyPlan(s, plan, now)
					Expect(err).NotTo(HaveOccurred(), "seed %d pass %d", seed, pass)
					d := after.Desired[0]
					st, err := models.ResolveRolloutStrategy(d.Instances, d.UpdateStrategy)
					Expect(err).NotTo(HaveOccurred())
					Expect(liveRooms(after)).To(BeNumerically("<=", int(d.Instances+st.MaxSurge)),
						"seed %d pass %d: more rooms than %d wanted + %d surge: %v", seed, pass, d.Instances, st.MaxSurge, plan.Reasons)
					now = now.Add(time.Second)
					s = playCells(after, now, nil)
					changeOccupancy(r, s, pass < 100)
				}
				Expect(rolledOut(s)).To(BeTrue(), "seed %d: not rolled out: %+v", seed, s.Rollouts)
				Expect(settledScale(s, now, cfg)).To(BeTrue(), "seed %d: instances %d for %d occupied", seed, s.Desired[0].Instances, occupiedRooms(s))
			}
		},
		Entry("downscale: 5 of 25 occupied, to 10", []int32{3, 9, 14, 20, 24}),
		Entry("upscale: 20 of 25 occupied, to 40", []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}),
	)
})

// maestroSnapshot is 25 rooms on v1, the given ones occupied, when v2 has
// just become active; the autoscaler wanted 25 long ago and, in the
// downscale, 10 for longer than its window of 10 s. Replacements are ready
// after 3 s.
func maestroSnapshot(now time.Time, occupied []int32) *convergence.Snapshot {
	s := &convergence.Snapshot{FreshDomains: []string{"apps"}}
	for i := range 2 {
		s.Cells = append(s.Cells, convergence.CellRow{
			CellID: fmt.Sprintf("cell-%d", i), Zone: fmt.Sprintf("z%d", i),
			Capacity:  convergence.Resources{MemoryMB: 1 << 20, DiskMB: 1 << 20, Instances: 1000},
			ExpiresAt: now.Add(time.Hour).UnixNano(),
		})
	}
	s.Desired = []convergence.DesiredSchedule{{
		ProcessGuid: "rooms", Domain: "apps", Instances: 25, ActiveDefinitionID: "v2", HealthyDefinitionID: "v1",
		UpdateStrategy: &models.UpdateStrategy{MaxSurge: "25%", MaxUnavailable: "0", MinReadyMs: 3000}, MemoryMB: 64, DiskMB: 64,
		Autoscaling: &models.Autoscaling{
			Enabled: true, Min: 1, Max: 50, ScaleDownStabilizationMs: 10_000,
			Policy: &models.AutoscalingPolicy{Type: models.RoomOccupancyPolicy, Parameters: &models.AutoscalingPolicyParameters{
				RoomOccupancy: &models.RoomOccupancyParameters{ReadyTarget: 0.5},
			}},
		},
		Autoscaler: &models.AutoscalerStatus{Recommendations: []*models.AutoscalerRecommendation{
			{At: now.Add(-time.Hour).UnixNano(), Wanted: 25},
			{At: now.Add(-time.Minute).UnixNano(), Wanted: convergence.WantedInstances(int32(len(occupied)), 0.5, 1, 50)},
		}},
		ModificationIndex: 1,
	}}
	s.Rollouts = []convergence.RolloutRow{{
		ProcessGuid: "rooms", State: models.RolloutStatus_PROGRESSING, DefinitionID: "v2",
		StartedAt: now.UnixNano(), ProgressAt: now.UnixNano(), ModificationIndex: 1,
	}}
	s.Definitions = []convergence.DefinitionRow{
		{ProcessGuid: "rooms", DefinitionID: "v2", CreatedAt: now.UnixNano()},
		{ProcessGuid: "rooms", DefinitionID: "v1", CreatedAt: now.Add(-time.Hour).UnixNano()},
	}
	for index := range int32(25) {
		s.Actual = append(s.Actual, convergence.ActualRow{
			ProcessGuid: "rooms", Index: index, Presence: ordinary, State: runningState, Domain: "apps",
			CellID: fmt.Sprintf("cell-%d", index%2), DefinitionID: "v1", Routable: true,
			Occupied: slices.Contains(occupied, index), Since: now.Add(-time.Hour).UnixNano(),
			ModificationIndex: 1, MemoryMB: 64, DiskMB: 64,
		})
	}
	return s
}

// checkOccupiedLast fails when the plan stops an occupied room while an
// idle one could go instead: it deletes an occupied ORDINARY room while an
// idle RUNNING one keeps running, or tells an occupied RETIRING room to
// stop while an idle room of an index below the count is on an outdated
// definition and not replaced yet.
func checkOccupiedLast(s *convergence.Snapshot, plan *convergence.Plan, seed uint64, pass int) {
	rows := map[models.ActualLRPKey]convergence.ActualRow{}
	for _, r := range s.Actual {
		rows[r.Key()] = r
	}
	stopped := map[models.ActualLRPKey]bool{}
	for _, v := range slices.Concat(plan.Writes.Delete, plan.Writes.RequestStop) {
		stopped[v.Key] = true
	}
	retired := map[int32]bool{}
	for _, ret := range plan.Writes.Retire {
		retired[ret.Row.Key.Index] = true
	}
	active := s.Desired[0].ActiveDefinitionID
	for key := range stopped {
		r := rows[key]
		if !r.Occupied || r.State != runningState {
			continue
		}
		for _, other := range s.Actual {
			idle := other.Presence == ordinary && other.State == runningState && !other.Occupied && !stopped[other.Key()]
			if r.Presence == models.ActualLRP_RETIRING {
				// A rollout's victim: idle outdated indices go first (an
				// extra above the count is no victim; it goes anyway).
				idle = idle && other.DefinitionID != active && !retired[other.Index] && other.Index < s.Desired[0].Instances
			}
			Expect(idle).To(BeFalse(),
				"seed %d pass %d: stops occupied %+v while idle %+v keeps running: %v", seed, pass, key, other.Key(), plan.Reasons)
		}
	}
}

// liveRooms counts the rows that run or will run a room: every row but
// the RETIRING ones told to stop.
func liveRooms(s *convergence.Snapshot) int {
	n := 0
	for _, r := range s.Actual {
		if !(r.Presence == models.ActualLRP_RETIRING && r.StopRequested) {
			n++
		}
	}
	return n
}

func occupiedRooms(s *convergence.Snapshot) int32 {
	n := int32(0)
	for _, r := range s.Actual {
		if r.Occupied && r.State == runningState {
			n++
		}
	}
	return n
}

// settledScale reports whether the count is what the occupancy wants and
// every room is one of its indices or stands for one.
func settledScale(s *convergence.Snapshot, now time.Time, cfg convergence.Config) bool {
	d := s.Desired[0]
	wanted := convergence.WantedInstances(occupiedRooms(s), 0.5, 1, 50)
	return d.Instances == wanted && int32(liveRooms(s)) == wanted
}

// changeOccupancy plays the players for a second: while busy, an idle
// running room fills with a chance of 1 in 25 and an occupied one empties
// with a chance of 1 in 40; after that, rooms only empty, 1 in 10.
func changeOccupancy(r *rand.Rand, s *convergence.Snapshot, busy bool) {
	for i := range s.Actual {
		row := &s.Actual[i]
		switch {
		case row.State != runningState:
			continue
		case row.Occupied && r.IntN(map[bool]int{true: 40, false: 10}[busy]) == 0:
			row.Occupied = false
		case !row.Occupied && busy && row.Presence == ordinary && r.IntN(25) == 0:
			row.Occupied = true
		default:
			continue
		}
		row.ModificationIndex++
	}
}
