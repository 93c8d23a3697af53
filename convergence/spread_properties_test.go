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

// Random boards with instances piled into some zones and some cells over
// capacity, run pass after pass (plans applied, placed instances started,
// instances told to stop removed) until a pass has nothing to do. No pass
// may add to a cell beyond its capacity, and at rest every cell fits and
// every LRP's zones are at most one apart: each zone has a big cell, so
// capacity always allows it.
var _ = Describe("Capacity and zone spread over many passes", func() {
	It("never fill a cell beyond capacity, and end with every cell fitting and zones at most one apart", func() {
		cfg := convergence.DefaultConfig()
		for seed := range uint64(200) {
			r := rand.New(rand.NewPCG(seed, 23))
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			s := crowdedSnapshot(r, now)
			quiet := false
			for pass := 0; pass < 300 && !quiet; pass++ {
				plan := convergence.Compute(s, now, cfg)
				quiet = plan.Writes.Empty()
				before := cellUsage(s)
				after, err := convergence.ApplyPlan(s, plan, now)
				Expect(err).NotTo(HaveOccurred(), "seed %d pass %d", seed, pass)
				for _, c := range s.Cells {
					used, was := cellUsage(after)[c.CellID], before[c.CellID]
					Expect(used.Instances).To(BeNumerically("<=", max(c.Capacity.Instances, was.Instances)),
						"seed %d pass %d: %s given more instances than it has slots: %v", seed, pass, c.CellID, plan.Reasons)
					Expect(used.MemoryMB).To(BeNumerically("<=", max(c.Capacity.MemoryMB, was.MemoryMB)),
						"seed %d pass %d: %s given more memory than it has: %v", seed, pass, c.CellID, plan.Reasons)
				}
				now = now.Add(time.Second)
				s = playCells(after, now, nil)
			}
			Expect(quiet).To(BeTrue(), "seed %d: still moving after 300 passes", seed)
			used := cellUsage(s)
			for _, c := range s.Cells {
				Expect(used[c.CellID].Instances).To(BeNumerically("<=", c.Capacity.Instances), "seed %d: %s over capacity at rest", seed, c.CellID)
				Expect(used[c.CellID].MemoryMB).To(BeNumerically("<=", c.Capacity.MemoryMB), "seed %d: %s over capacity at rest", seed, c.CellID)
			}
			for _, d := range s.Desired {
				counts := zoneCounts(s, d.ProcessGuid)
				Expect(spreadOf(counts)).To(BeNumerically("<=", 1), "seed %d: %s spread %v", seed, d.ProcessGuid, counts)
			}
		}
	})
})

// crowdedSnapshot is two or three zones, each with one big cell and a few
// small ones, and a few LRPs whose running instances sit on random cells
// of one or two zones, small cells included whatever their capacity.
func crowdedSnapshot(r *rand.Rand, now time.Time) *convergence.Snapshot {
	s := &convergence.Snapshot{FreshDomains: []string{"apps"}}
	zones := 2 + r.IntN(2)
	for z := range zones {
		s.Cells = append(s.Cells, convergence.CellRow{
			CellID: fmt.Sprintf("big-%d", z), Zone: fmt.Sprintf("z%d", z),
			Capacity:  convergence.Resources{MemoryMB: 1 << 20, DiskMB: 1 << 20, Instances: 1000},
			ExpiresAt: now.Add(time.Hour).UnixNano(),
		})
		for c := range r.IntN(3) {
			s.Cells = append(s.Cells, convergence.CellRow{
				CellID: fmt.Sprintf("small-%d-%d", z, c), Zone: fmt.Sprintf("z%d", z),
				Capacity:  convergence.Resources{MemoryMB: int32(64 * (1 + r.IntN(4))), DiskMB: 1 << 20, Instances: int32(1 + r.IntN(3))},
				ExpiresAt: now.Add(time.Hour).UnixNano(),
			})
		}
	}
	counts := []string{"", "1", "2", "50%"}
	for l := range 1 + r.IntN(4) {
		guid := fmt.Sprintf("lrp-%d", l)
		instances := int32(1 + r.IntN(9))
		s.Desired = append(s.Desired, convergence.DesiredSchedule{
			ProcessGuid: guid, Domain: "apps", Instances: instances, ActiveDefinitionID: "v1", HealthyDefinitionID: "v1",
			UpdateStrategy: &models.UpdateStrategy{MaxSurge: counts[r.IntN(len(counts))]}, MemoryMB: 64, DiskMB: 64,
		})
		// Crowd the instances into the first one or two cells.
		crowd := 1 + r.IntN(2)
		for index := range instances {
			s.Actual = append(s.Actual, convergence.ActualRow{
				ProcessGuid: guid, Index: index, Presence: ordinary, State: runningState, Domain: "apps",
				CellID: s.Cells[r.IntN(crowd)].CellID, DefinitionID: "v1", Routable: true,
				Occupied: r.IntN(4) == 0, Since: now.Add(-time.Hour).UnixNano(), ModificationIndex: 3,
				MemoryMB: 64, DiskMB: 64,
			})
		}
	}
	return s
}

// cellUsage sums, by cell, what every row naming it uses.
func cellUsage(s *convergence.Snapshot) map[string]convergence.Resources {
	used := map[string]convergence.Resources{}
	for _, r := range s.Actual {
		if r.CellID == "" {
			continue
		}
		u := used[r.CellID]
		u.Instances++
		u.MemoryMB += r.MemoryMB
		u.DiskMB += r.DiskMB
		used[r.CellID] = u
	}
	return used
}

// zoneCounts counts an LRP's ORDINARY instances by the zone of their cell,
// with a zero for every zone that has a cell.
func zoneCounts(s *convergence.Snapshot, guid string) map[string]int {
	zoneOf := map[string]string{}
	counts := map[string]int{}
	for _, c := range s.Cells {
		zoneOf[c.CellID] = c.Zone
		counts[c.Zone] += 0
	}
	for _, r := range s.Actual {
		if r.ProcessGuid == guid && r.Presence == ordinary && r.CellID != "" {
			counts[zoneOf[r.CellID]]++
		}
	}
	return counts
}

func spreadOf(counts map[string]int) int {
	lo, hi := -1, 0
	for _, n := range counts {
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	return hi - lo
}
