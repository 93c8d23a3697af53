package convergence_test

import (
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
)

var _ = Describe("Spreading LRPs with more instances than cells", func() {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

	It("keeps each LRP even across zones and cells while other LRPs take memory", func() {
		zoneOf := map[string]string{}
		var cells []convergence.CellRow
		for i := range 10 {
			c := convergence.CellRow{
				CellID:    fmt.Sprintf("cell-%d", i),
				Zone:      fmt.Sprintf("z%d", i%2),
				Capacity:  convergence.Resources{MemoryMB: 1_000_000, DiskMB: 1_000_000, Instances: 10_000},
				ExpiresAt: now.Add(time.Minute).UnixNano(),
			}
			zoneOf[c.CellID] = c.Zone
			cells = append(cells, c)
		}
		desired := []convergence.DesiredSchedule{
			{ProcessGuid: "big-a", Domain: "apps", Instances: 1000, ActiveDefinitionID: "v1", MemoryMB: 100, DiskMB: 1},
			{ProcessGuid: "big-b", Domain: "apps", Instances: 995, ActiveDefinitionID: "v1", MemoryMB: 7, DiskMB: 1},
			{ProcessGuid: "small", Domain: "apps", Instances: 3, ActiveDefinitionID: "v1", MemoryMB: 5000, DiskMB: 1},
		}
		plan := convergence.Compute(&convergence.Snapshot{Desired: desired, Cells: cells}, now, convergence.DefaultConfig())
		Expect(plan.Counts.Unplaced).To(BeZero())

		perCell := map[string]map[string]int{}
		perZone := map[string]map[string]int{}
		for _, c := range plan.Writes.Create {
			if perCell[c.ProcessGuid] == nil {
				perCell[c.ProcessGuid], perZone[c.ProcessGuid] = map[string]int{}, map[string]int{}
			}
			perCell[c.ProcessGuid][c.CellID]++
			perZone[c.ProcessGuid][zoneOf[c.CellID]]++
		}
		sortedCounts := func(counts map[string]int) []int {
			var n []int
			for _, count := range counts {
				n = append(n, count)
			}
			slices.Sort(n)
			return n
		}
		Expect(sortedCounts(perZone["big-a"])).To(Equal([]int{500, 500}))
		Expect(sortedCounts(perCell["big-a"])).To(Equal(slices.Repeat([]int{100}, 10)))
		Expect(sortedCounts(perZone["big-b"])).To(Equal([]int{497, 498}))
		Expect(sortedCounts(perCell["big-b"])).To(Equal([]int{99, 99, 99, 99, 99, 100, 100, 100, 100, 100}))
		Expect(sortedCounts(perCell["small"])).To(Equal([]int{1, 1, 1}))
	})
})
