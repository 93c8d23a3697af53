package convergence_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// Whole rollouts, pass after pass, on random LRPs: every plan is applied
// as ApplyConvergence would, then the simulated cells act (placed
// instances start, mostly healthy; instances told to stop go away), and
// time moves on. Invariants 1–3 of DESIGN §10 hold after every pass, and
// every rollout ends with each index on the active definition.
var _ = Describe("Rollouts over many passes", func() {
	It("keep one ORDINARY row per index, never drop below instances - max_unavailable, never delete a definition in use, and finish", func() {
		cfg := convergence.DefaultConfig()
		for seed := range uint64(150) {
			r := rand.New(rand.NewPCG(seed, 11))
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			s := rolloutSnapshot(r, now)
			floors := map[string]int{}
			for _, d := range s.Desired {
				st, err := models.ResolveRolloutStrategy(d.Instances, d.UpdateStrategy)
				Expect(err).NotTo(HaveOccurred())
				floors[d.ProcessGuid] = int(st.MinAvailable())
			}
			for pass := 0; pass < 600 && !rolledOut(s); pass++ {
				plan := convergence.Compute(s, now, cfg)
				servingBefore := map[string]int{}
				for _, d := range s.Desired {
					servingBefore[d.ProcessGuid] = servingIndices(s, d.ProcessGuid)
				}
				checkNoDefinitionInUseDeleted(s, plan, seed)
				after, err := convergence.ApplyPlan(s, plan, now)
				Expect(err).NotTo(HaveOccurred(), "seed %d pass %d", seed, pass)
				for _, d := range after.Desired {
					floor := min(floors[d.ProcessGuid], servingBefore[d.ProcessGuid])
					Expect(servingIndices(after, d.ProcessGuid)).To(BeNumerically(">=", floor),
						"seed %d pass %d: %s below instances - max_unavailable: %v", seed, pass, d.ProcessGuid, plan.Reasons)
				}
				now = now.Add(time.Second)
				s = simulateCells(r, after, now)
			}
			Expect(rolledOut(s)).To(BeTrue(), "seed %d: not rolled out after 600 passes: %+v", seed, s.Rollouts)
		}
	})
})

// rolloutSnapshot is a few LRPs running v1 on healthy cells, each just
// updated to v2 with a random strategy.
func rolloutSnapshot(r *rand.Rand, now time.Time) *convergence.Snapshot {
	s := &convergence.Snapshot{FreshDomains: []string{"apps"}}
	for i := range 4 {
		s.Cells = append(s.Cells, convergence.CellRow{
			CellID: fmt.Sprintf("cell-%d", i), Zone: fmt.Sprintf("z%d", i%2),
			Capacity:  convergence.Resources{MemoryMB: 1 << 20, DiskMB: 1 << 20, Instances: 1000},
			ExpiresAt: now.Add(time.Hour).UnixNano(),
		})
	}
	counts := []string{"", "0", "1", "2", "25%", "50%", "100%"}
	for l := range 1 + r.IntN(4) {
		guid := fmt.Sprintf("lrp-%d", l)
		instances := int32(1 + r.IntN(10))
		strategy := &models.UpdateStrategy{MaxSurge: counts[r.IntN(len(counts))], MaxUnavailable: counts[r.IntN(len(counts))]}
		s.Desired = append(s.Desired, convergence.DesiredSchedule{
			ProcessGuid: guid, Domain: "apps", Instances: instances, ActiveDefinitionID: "v2",
			HealthyDefinitionID: "v1", UpdateStrategy: strategy, MemoryMB: 64, DiskMB: 64,
		})
		s.Rollouts = append(s.Rollouts, convergence.RolloutRow{
			ProcessGuid: guid, State: models.RolloutStatus_PROGRESSING, DefinitionID: "v2",
			StartedAt: now.UnixNano(), ProgressAt: now.UnixNano(), ModificationIndex: 1,
		})
		s.Definitions = append(s.Definitions,
			convergence.DefinitionRow{ProcessGuid: guid, DefinitionID: "v2", CreatedAt: now.UnixNano()},
			convergence.DefinitionRow{ProcessGuid: guid, DefinitionID: "v1", CreatedAt: now.Add(-time.Hour).UnixNano()})
		for index := range instances {
			row := convergence.ActualRow{
				ProcessGuid: guid, Index: index, Presence: ordinary, State: runningState, Domain: "apps",
				CellID: fmt.Sprintf("cell-%d", r.IntN(4)), DefinitionID: "v1", Routable: true,
				Occupied: r.IntN(3) == 0, Since: now.Add(-time.Hour).UnixNano(), ModificationIndex: 3,
				MemoryMB: 64, DiskMB: 64,
			}
			if r.IntN(8) == 0 {
				row.State, row.Routable, row.CrashCount = crashedState, false, 1
			}
			s.Actual = append(s.Actual, row)
		}
	}
	return s
}

// checkNoDefinitionInUseDeleted is invariant 3: a definition that is
// active, healthy or referenced by any row is never deleted.
func checkNoDefinitionInUseDeleted(s *convergence.Snapshot, plan *convergence.Plan, seed uint64) {
	inUse := map[convergence.DefinitionRef]bool{}
	for _, d := range s.Desired {
		inUse[convergence.DefinitionRef{ProcessGuid: d.ProcessGuid, DefinitionID: d.ActiveDefinitionID}] = true
		inUse[convergence.DefinitionRef{ProcessGuid: d.ProcessGuid, DefinitionID: d.HealthyDefinitionID}] = true
	}
	for _, r := range s.Actual {
		inUse[convergence.DefinitionRef{ProcessGuid: r.ProcessGuid, DefinitionID: r.DefinitionID}] = true
	}
	for _, ref := range plan.Writes.DeleteDefinitions {
		Expect(inUse[ref]).To(BeFalse(), "seed %d: deletes %+v, which is in use", seed, ref)
	}
}

// servingIndices counts the indices of an LRP with a RUNNING, routable
// instance that was not told to stop.
func servingIndices(s *convergence.Snapshot, guid string) int {
	serving := map[int32]bool{}
	for _, r := range s.Actual {
		if r.ProcessGuid == guid && r.State == runningState && r.Routable && !r.StopRequested &&
			(r.Presence == ordinary || r.Presence == models.ActualLRP_RETIRING) {
			serving[r.Index] = true
		}
	}
	return len(serving)
}

// simulateCells plays the reps for one second: placed UNCLAIMED instances
// start (one in eight crashes instead), crashed ones stay down, and RETIRING
// instances told to stop are drained and removed.
func simulateCells(r *rand.Rand, s *convergence.Snapshot, now time.Time) *convergence.Snapshot {
	return playCells(s, now, func() bool { return r.IntN(8) == 0 })
}

// playCells plays the reps for one second: placed UNCLAIMED instances
// start, unless crashes (nil: never) says this one crashes instead, and
// RETIRING instances told to stop are drained and removed.
func playCells(s *convergence.Snapshot, now time.Time, crashes func() bool) *convergence.Snapshot {
	next := *s
	next.Actual = nil
	for _, row := range s.Actual {
		switch {
		case row.Presence == models.ActualLRP_RETIRING && row.StopRequested:
			continue
		case row.State == unclaimedState && row.CellID != "":
			row.ModificationIndex++
			row.Since = now.UnixNano()
			row.State, row.Routable = runningState, true
			if crashes != nil && crashes() {
				row.State, row.Routable, row.CrashCount = crashedState, false, row.CrashCount+1
			}
		}
		next.Actual = append(next.Actual, row)
	}
	return &next
}

// rolledOut reports whether every rollout record is settled and every
// row of a desired LRP runs its active definition.
func rolledOut(s *convergence.Snapshot) bool {
	if len(s.Rollouts) > 0 {
		return false
	}
	active := map[string]string{}
	for _, d := range s.Desired {
		active[d.ProcessGuid] = d.ActiveDefinitionID
	}
	for _, r := range s.Actual {
		if r.DefinitionID != active[r.ProcessGuid] || r.Presence != ordinary {
			return false
		}
	}
	return true
}
