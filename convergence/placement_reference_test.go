package convergence_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
)

// The planner places with heaps and shortcuts; this is the placement rule
// of doc.go done the slow, obvious way, to compare against on random
// states of new instances: rounds of one instance per LRP in guid order,
// each to the fitting cell with the fewest instances of its LRP in the
// zone, then on the cell, then the most free memory, then the lowest id;
// a cell where the LRP's definition crashed within the last 10 minutes
// only when no other cell fits.
func referencePlacement(s *convergence.Snapshot, now time.Time) []string {
	type cell struct {
		convergence.CellRow
		memory, disk, slots int64
	}
	cells := make([]*cell, 0, len(s.Cells))
	for _, c := range s.Cells {
		if c.ExpiresAt > now.UnixNano() {
			cap := c.Capacity
			cells = append(cells, &cell{c, int64(cap.MemoryMB), int64(cap.DiskMB), int64(cap.Instances)})
		}
	}
	byID := map[string]*cell{}
	for _, c := range cells {
		byID[c.CellID] = c
	}
	onCell := map[string]int{}    // guid/cell
	inZone := map[string]int{}    // guid/zone
	existing := map[string]bool{} // guid/index
	for _, r := range s.Actual {
		existing[fmt.Sprintf("%s/%d", r.ProcessGuid, r.Index)] = true
		if c, ok := byID[r.CellID]; ok {
			c.memory -= int64(r.MemoryMB)
			c.disk -= int64(r.DiskMB)
			c.slots--
			onCell[r.ProcessGuid+"/"+r.CellID]++
			inZone[r.ProcessGuid+"/"+c.Zone]++
		}
	}
	desired := slices.Clone(s.Desired)
	slices.SortFunc(desired, func(a, b convergence.DesiredSchedule) int { return compareStrings(a.ProcessGuid, b.ProcessGuid) })

	type request struct {
		d     convergence.DesiredSchedule
		index int32
		rank  int
	}
	var requests []request
	for _, d := range desired {
		rank := 0
		for i := range d.Instances {
			if !existing[fmt.Sprintf("%s/%d", d.ProcessGuid, i)] {
				requests = append(requests, request{d, i, rank})
				rank++
			}
		}
	}
	placed := make([]string, len(requests)) // in Create order
	order := slices.Clone(requests)
	slices.SortStableFunc(order, func(a, b request) int { return a.rank - b.rank })
	position := map[string]int{}
	for i, r := range requests {
		position[fmt.Sprintf("%s/%d", r.d.ProcessGuid, r.index)] = i
	}
	crashedOn := map[string]bool{} // guid/definition/cell
	for _, c := range s.Crashes {
		if now.UnixNano()-c.At < int64(10*time.Minute) {
			crashedOn[c.ProcessGuid+"/"+c.DefinitionID+"/"+c.CellID] = true
		}
	}
	for _, r := range order {
		var best *cell
		key := func(c *cell) []int64 {
			return []int64{int64(inZone[r.d.ProcessGuid+"/"+c.Zone]), int64(onCell[r.d.ProcessGuid+"/"+c.CellID]), -c.memory}
		}
		for _, avoidCrashes := range []bool{true, false} {
			for _, c := range cells {
				fits := c.memory >= int64(r.d.MemoryMB) && c.disk >= int64(r.d.DiskMB) && c.slots >= 1
				for _, tag := range r.d.PlacementTags {
					fits = fits && slices.Contains(c.PlacementTags, tag)
				}
				if !fits || (avoidCrashes && crashedOn[r.d.ProcessGuid+"/"+r.d.ActiveDefinitionID+"/"+c.CellID]) {
					continue
				}
				if best == nil || slices.Compare(key(c), key(best)) < 0 ||
					(slices.Compare(key(c), key(best)) == 0 && c.CellID < best.CellID) {
					best = c
				}
			}
			if best != nil {
				break
			}
		}
		if best == nil {
			continue
		}
		best.memory -= int64(r.d.MemoryMB)
		best.disk -= int64(r.d.DiskMB)
		best.slots--
		onCell[r.d.ProcessGuid+"/"+best.CellID]++
		inZone[r.d.ProcessGuid+"/"+best.Zone]++
		placed[position[fmt.Sprintf("%s/%d", r.d.ProcessGuid, r.index)]] = best.CellID
	}
	return placed
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func randomPlacementState(r *rand.Rand, now time.Time) *convergence.Snapshot {
	s := &convergence.Snapshot{}
	tagSets := [][]string{nil, nil, {"gpu"}, {"gpu", "ssd"}}
	cellCount := 1 + r.IntN(8)
	for i := range cellCount {
		expires := now.Add(time.Minute)
		if r.IntN(8) == 0 {
			expires = now.Add(-time.Minute)
		}
		s.Cells = append(s.Cells, convergence.CellRow{
			CellID: fmt.Sprintf("c%d", i),
			Zone:   fmt.Sprintf("z%d", r.IntN(3)),
			Capacity: convergence.Resources{
				MemoryMB:  int32(100 * (5 + r.IntN(200))),
				DiskMB:    int32(100 * (5 + r.IntN(200))),
				Instances: int32(r.IntN(40)),
			},
			PlacementTags: tagSets[r.IntN(len(tagSets))],
			ExpiresAt:     expires.UnixNano(),
		})
	}
	for l := range 1 + r.IntN(5) {
		d := convergence.DesiredSchedule{
			ProcessGuid:        fmt.Sprintf("lrp-%d", l),
			Domain:             "apps",
			Instances:          int32(r.IntN(30)),
			PlacementTags:      tagSets[r.IntN(len(tagSets))],
			ActiveDefinitionID: "v1",
			MemoryMB:           int32(10 * (1 + r.IntN(60))),
			DiskMB:             int32(10 * (1 + r.IntN(60))),
		}
		s.Desired = append(s.Desired, d)
		for i := range d.Instances {
			if r.IntN(4) == 0 {
				c := s.Cells[r.IntN(len(s.Cells))]
				if c.ExpiresAt > now.UnixNano() {
					s.Actual = append(s.Actual, convergence.ActualRow{
						ProcessGuid: d.ProcessGuid, Index: i, Presence: ordinary, State: runningState,
						Domain: "apps", CellID: c.CellID, DefinitionID: "v1",
						MemoryMB: int32(10 * r.IntN(60)), DiskMB: int32(10 * r.IntN(60)),
					})
				}
			}
		}
	}
	// Crashes, drawn last so the states above stay what they were: some
	// within the window, some outside it, some of another definition.
	for range r.IntN(2 * len(s.Cells)) {
		s.Crashes = append(s.Crashes, convergence.CrashRow{
			ProcessGuid:  fmt.Sprintf("lrp-%d", r.IntN(len(s.Desired))),
			DefinitionID: []string{"v1", "v1", "v0"}[r.IntN(3)],
			CellID:       s.Cells[r.IntN(len(s.Cells))].CellID,
			At:           now.Add(-time.Duration(r.IntN(15)) * time.Minute).UnixNano(),
		})
	}
	return s
}

var _ = Describe("Placement against a slow reference", func() {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

	It("places every new instance where the documented rule says", func() {
		for seed := range uint64(500) {
			s := randomPlacementState(rand.New(rand.NewPCG(seed, 11)), now)
			plan := convergence.Compute(s, now, convergence.DefaultConfig())
			var got []string
			for _, c := range plan.Writes.Create {
				got = append(got, c.CellID)
			}
			want := referencePlacement(s, now)
			if len(want) == 0 {
				want = nil
			}
			Expect(got).To(Equal(want), "seed %d", seed)
		}
	})
})
