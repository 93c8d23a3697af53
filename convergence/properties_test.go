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

// These specs run Compute on many random states and apply each plan to an
// in-memory copy the way ApplyConvergence is specified to (every write
// conditional on the version it names, each applied write bumping the
// modification index by one), then check what a person would expect of
// the result.
var _ = Describe("Plans for random states", func() {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := convergence.DefaultConfig()

	It("apply without conflicts, repair everything they can and leave nothing for a second pass", func() {
		for seed := range uint64(400) {
			snapshot := randomSnapshot(rand.New(rand.NewPCG(seed, 7)), now)
			plan := convergence.Compute(snapshot, now, cfg)
			after, err := convergence.ApplyPlan(snapshot, plan, now)
			Expect(err).NotTo(HaveOccurred(), "seed %d", seed)
			checkRepaired(snapshot, after, now, cfg, seed)
			checkPlacements(snapshot, plan, now, seed)

			again := convergence.Compute(after, now, cfg)
			w := again.Writes
			Expect(len(w.Delete)+len(w.Promote)+len(w.MarkSuspect)+len(w.Create)+
				len(w.Restart)+len(w.Unassign)).To(BeZero(),
				"seed %d: a second pass at the same time still has work: %v", seed, again.Reasons)

			shuffled := shuffleSnapshot(snapshot, seed)
			Expect(convergence.Compute(shuffled, now, cfg)).To(Equal(plan), "seed %d: order matters", seed)
		}
	})
})

func randomSnapshot(r *rand.Rand, now time.Time) *convergence.Snapshot {
	s := &convergence.Snapshot{FreshDomains: []string{"apps"}}
	if r.IntN(2) == 0 {
		s.FreshDomains = append(s.FreshDomains, "legacy")
	}
	tagSets := [][]string{nil, nil, {"gpu"}, {"ssd"}, {"gpu", "ssd"}}
	zones := []string{"z1", "z2", "z3"}[:1+r.IntN(3)]
	cellCount := 1 + r.IntN(12)
	var cellIDs []string
	for i := range cellCount {
		expires := now.Add(30 * time.Second)
		if r.IntN(5) == 0 {
			expires = now.Add(-time.Duration(r.IntN(60)) * time.Second)
		}
		id := fmt.Sprintf("cell-%02d", i)
		cellIDs = append(cellIDs, id)
		s.Cells = append(s.Cells, convergence.CellRow{
			CellID: id,
			Zone:   zones[r.IntN(len(zones))],
			Capacity: convergence.Resources{
				MemoryMB:  int32(256 * (1 + r.IntN(16))),
				DiskMB:    int32(512 * (1 + r.IntN(16))),
				Instances: int32(r.IntN(12)),
			},
			PlacementTags: tagSets[r.IntN(len(tagSets))],
			ExpiresAt:     expires.UnixNano(),
			Draining:      r.IntN(6) == 0,
		})
	}
	cellIDs = append(cellIDs, "ghost", "")

	states := []models.ActualLRP_State{unclaimedState, claimedState, runningState, crashedState}
	crashCounts := []int32{0, 1, 3, 4, 5, 9, 199, 200}
	for l := range 1 + r.IntN(12) {
		guid := fmt.Sprintf("lrp-%02d", l)
		domain := []string{"apps", "legacy"}[r.IntN(2)]
		instances := int32(r.IntN(6))
		if r.IntN(6) > 0 {
			s.Desired = append(s.Desired, convergence.DesiredSchedule{
				ProcessGuid:        guid,
				Domain:             domain,
				Instances:          instances,
				PlacementTags:      tagSets[r.IntN(len(tagSets))],
				ActiveDefinitionID: "v2",
				MemoryMB:           int32(128 * (1 + r.IntN(8))),
				DiskMB:             int32(256 * (1 + r.IntN(8))),
			})
		}
		for index := range instances + 2 {
			for _, presence := range []models.ActualLRP_Presence{ordinary, suspect, evacuating} {
				odds := map[models.ActualLRP_Presence]int{ordinary: 4, suspect: 1, evacuating: 1}[presence]
				if r.IntN(6) >= odds {
					continue
				}
				row := convergence.ActualRow{
					ProcessGuid:       guid,
					Index:             index,
					Presence:          presence,
					State:             states[r.IntN(len(states))],
					Domain:            domain,
					CellID:            cellIDs[r.IntN(len(cellIDs))],
					DefinitionID:      "v2", // rollouts have a property test of their own
					Since:             now.Add(-time.Duration(r.IntN(1200)) * time.Second).UnixNano(),
					ModificationIndex: int64(1 + r.IntN(9)),
					MemoryMB:          int32(128 * (1 + r.IntN(8))),
					DiskMB:            int32(256 * (1 + r.IntN(8))),
				}
				if row.State == crashedState {
					row.CrashCount = crashCounts[r.IntN(len(crashCounts))]
				}
				if row.State == claimedState || row.State == runningState {
					row.CellID = cellIDs[r.IntN(len(cellIDs)-1)] // never empty
				}
				s.Actual = append(s.Actual, row)
			}
		}
	}
	// Remembered crashes, some outside the window, some on cells not
	// registered; drawn last so the states above stay what they were.
	for range r.IntN(8) {
		s.Crashes = append(s.Crashes, convergence.CrashRow{
			ProcessGuid:  fmt.Sprintf("lrp-%02d", r.IntN(12)),
			DefinitionID: "v2",
			CellID:       cellIDs[r.IntN(len(cellIDs)-1)],
			At:           now.Add(-time.Duration(r.IntN(1200)) * time.Second).UnixNano(),
		})
	}
	return s
}

// checkRepaired checks the state after the plan against the rules.
func checkRepaired(before, after *convergence.Snapshot, now time.Time, cfg convergence.Config, seed uint64) {
	present, draining := map[string]bool{}, map[string]bool{}
	for _, c := range before.Cells {
		present[c.CellID] = c.ExpiresAt > now.UnixNano()
		draining[c.CellID] = c.Draining
	}
	fresh := map[string]bool{}
	for _, d := range before.FreshDomains {
		fresh[d] = true
	}
	desired := map[string]convergence.DesiredSchedule{}
	for _, d := range before.Desired {
		desired[d.ProcessGuid] = d
	}
	original := map[models.ActualLRPKey]convergence.ActualRow{}
	for _, r := range before.Actual {
		original[r.Key()] = r
	}
	rows := map[models.ActualLRPKey]convergence.ActualRow{}
	for _, r := range after.Actual {
		rows[r.Key()] = r
	}

	for _, d := range before.Desired {
		for index := range d.Instances {
			key := models.ActualLRPKey{ProcessGuid: d.ProcessGuid, Index: index, Presence: ordinary}
			Expect(rows).To(HaveKey(key), "seed %d: every desired index has an ORDINARY row", seed)
		}
	}
	for key, r := range rows {
		d, isDesired := desired[key.ProcessGuid]
		wanted := isDesired && key.Index >= 0 && key.Index < d.Instances
		switch {
		case key.Presence == evacuating:
			Expect(r).To(Equal(original[key]), "seed %d: %+v: an evacuating row is kept as it is or deleted", seed, key)
			Expect(present[r.CellID]).To(BeTrue(), "seed %d: %+v: an evacuating row's cell is present", seed, key)
			Expect(wanted || !fresh[r.Domain]).To(BeTrue(), "seed %d: %+v is not wanted in a fresh domain but kept", seed, key)
			if replacement, ok := rows[models.ActualLRPKey{ProcessGuid: key.ProcessGuid, Index: key.Index, Presence: ordinary}]; wanted && ok && replacement.State == runningState {
				Expect(now.Sub(time.Unix(0, replacement.Since))).To(BeNumerically("<", cfg.EvacuationGrace),
					"seed %d: %+v: its replacement has not run for the evacuation grace", seed, key)
			}
		case key.Presence != ordinary && key.Presence != suspect:
			Expect(r).To(Equal(original[key]), "seed %d: other presences are left alone", seed)
		case !wanted && fresh[r.Domain]:
			Fail(fmt.Sprintf("seed %d: %+v is not wanted in a fresh domain but kept", seed, key))
		case !wanted:
			Expect(r).To(Equal(original[key]), "seed %d: unwanted rows in stale domains are left alone", seed)
		case key.Presence == suspect:
			Expect(present[r.CellID]).To(BeFalse(), "seed %d: %+v: a suspect's cell is gone", seed, key)
			Expect(r.State).To(BeElementOf(runningState, claimedState), "seed %d: %+v: a suspect serves", seed, key)
			replacement := rows[models.ActualLRPKey{ProcessGuid: key.ProcessGuid, Index: key.Index, Presence: ordinary}]
			Expect(replacement.State).NotTo(Equal(runningState), "seed %d: %+v: its replacement runs", seed, key)
		case r.State == runningState || r.State == claimedState:
			Expect(present[r.CellID]).To(BeTrue(), "seed %d: %+v runs on a present cell", seed, key)
		case r.State == unclaimedState && r.CellID != "":
			Expect(present[r.CellID]).To(BeTrue(), "seed %d: %+v is placed on a present cell", seed, key)
			Expect(draining[r.CellID]).To(BeFalse(), "seed %d: %+v is not left placed on a draining cell", seed, key)
			Expect(now.Sub(time.Unix(0, r.Since))).To(BeNumerically("<", cfg.StaleUnclaimed),
				"seed %d: %+v: no stale placement is left", seed, key)
		case r.State == crashedState:
			delay, restarts := cfg.CrashPolicy.RestartDelay(r.CrashCount)
			if restarts {
				Expect(now.Sub(time.Unix(0, r.Since))).To(BeNumerically("<", delay),
					"seed %d: %+v: no crash whose backoff is over is left", seed, key)
			}
		case r.State == unclaimedState:
			Expect(r.PlacementError).NotTo(BeEmpty(), "seed %d: %+v: unplaced rows say why", seed, key)
		}
	}
}

// checkPlacements checks every placement against the cells: present and
// not draining, tags covered, and no cell given more than it had free.
func checkPlacements(s *convergence.Snapshot, plan *convergence.Plan, now time.Time, seed uint64) {
	type free struct{ memory, disk, slots int64 }
	cells := map[string]*free{}
	tags := map[string][]string{}
	for _, c := range s.Cells {
		if c.ExpiresAt > now.UnixNano() && !c.Draining {
			cells[c.CellID] = &free{int64(c.Capacity.MemoryMB), int64(c.Capacity.DiskMB), int64(c.Capacity.Instances)}
			tags[c.CellID] = c.PlacementTags
		}
	}
	charge := func(cellID string, memoryMB, diskMB int32) {
		if f, ok := cells[cellID]; ok {
			f.memory -= int64(memoryMB)
			f.disk -= int64(diskMB)
			f.slots--
		}
	}
	for _, r := range s.Actual {
		charge(r.CellID, r.MemoryMB, r.DiskMB)
	}
	desired := map[string]convergence.DesiredSchedule{}
	for _, d := range s.Desired {
		desired[d.ProcessGuid] = d
	}
	rows := map[models.ActualLRPKey]convergence.ActualRow{}
	for _, r := range s.Actual {
		rows[r.Key()] = r
	}
	placedOn := map[string]bool{}
	place := func(guid, cellID string, memoryMB, diskMB int32) {
		Expect(cells).To(HaveKey(cellID), "seed %d: %s placed on a present cell that is not draining", seed, guid)
		for _, tag := range desired[guid].PlacementTags {
			Expect(tags[cellID]).To(ContainElement(tag), "seed %d: %s placed on %s", seed, guid, cellID)
		}
		charge(cellID, memoryMB, diskMB)
		placedOn[cellID] = true
	}
	for _, c := range plan.Writes.Create {
		if c.CellID != "" {
			place(c.ProcessGuid, c.CellID, desired[c.ProcessGuid].MemoryMB, desired[c.ProcessGuid].DiskMB)
		}
	}
	for _, p := range plan.Writes.Place {
		r := rows[p.Row.Key]
		place(r.ProcessGuid, p.CellID, r.MemoryMB, r.DiskMB)
	}
	for cellID := range placedOn {
		f := cells[cellID]
		Expect(f.memory >= 0 && f.disk >= 0 && f.slots >= 0).To(BeTrue(),
			"seed %d: %s is overcommitted: %+v", seed, cellID, *f)
	}
}
