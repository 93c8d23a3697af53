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

// These specs run Compute once on random states that mix what draws on a
// disruption budget — rollouts (outdated rows, RETIRING rows told to stop
// or not), drains (EVACUATING rows on a draining cell beside unplaced
// ORDINARY ones), crashes, lost cells, scale-downs (rows above the count),
// fast rollbacks and uneven zones — under random budgets, and check that
// the plan's voluntary writes never take an LRP's serving indices below
// instances − budget (nor lower them at all when already below).
var _ = Describe("Plans under disruption budgets", func() {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := convergence.DefaultConfig()

	It("never take an LRP's serving indices below instances − budget", func() {
		for seed := range uint64(3000) {
			r := rand.New(rand.NewPCG(seed, 31))
			s := randomBudgetState(r, now)
			plan := convergence.Compute(s, now, cfg)
			after, err := convergence.ApplyPlan(s, plan, now)
			Expect(err).NotTo(HaveOccurred(), "seed %d: %v", seed, plan.Reasons)
			present := map[string]bool{}
			for _, c := range s.Cells {
				present[c.CellID] = c.ExpiresAt > now.UnixNano()
			}
			for _, d := range s.Desired {
				b := models.ResolveDisruptionBudget(d.Instances, d.DisruptionBudget, models.StoredRolloutStrategy(d.Instances, d.UpdateStrategy))
				before := budgetServingIndices(s.Actual, d, present)
				floor := min(int(d.Instances-b), before)
				Expect(budgetServingIndices(after.Actual, d, present)).To(BeNumerically(">=", floor),
					"seed %d: %s (%d instances, budget %d) from %d serving: %v", seed, d.ProcessGuid, d.Instances, b, before, plan.Reasons)
			}
		}
	})
})

// budgetServingIndices counts d's wanted indices with a RUNNING, routable
// instance on a present cell that keeps serving: ORDINARY, EVACUATING, or
// RETIRING not told to stop. (An instance on a lost cell is an
// involuntary loss: it counts for nothing.)
func budgetServingIndices(rows []convergence.ActualRow, d convergence.DesiredSchedule, present map[string]bool) int {
	indices := map[int32]bool{}
	for _, r := range rows {
		if r.ProcessGuid != d.ProcessGuid || r.Index < 0 || r.Index >= d.Instances || r.State != runningState || !r.Routable {
			continue
		}
		switch r.Presence {
		case ordinary, models.ActualLRP_EVACUATING:
			if present[r.CellID] {
				indices[r.Index] = true
			}
		case models.ActualLRP_RETIRING:
			if !r.StopRequested && present[r.CellID] {
				indices[r.Index] = true
			}
		}
	}
	return len(indices)
}

// randomBudgetState is a few LRPs with random strategies and budgets, rows
// on v1 or v2 (v2 active: a rollout), a record of the rollout (fast at
// times: a rollback), RETIRING and EVACUATING rows, on four cells in two
// zones of which one may drain and one may be lost.
func randomBudgetState(r *rand.Rand, now time.Time) *convergence.Snapshot {
	s := &convergence.Snapshot{FreshDomains: []string{"apps"}}
	for i := range 4 {
		c := convergence.CellRow{
			CellID: fmt.Sprintf("cell-%d", i), Zone: fmt.Sprintf("z%d", i%2),
			Capacity:  convergence.Resources{MemoryMB: 8192, DiskMB: 8192, Instances: int32(4 + r.IntN(30))},
			ExpiresAt: now.Add(time.Minute).UnixNano(),
		}
		switch r.IntN(6) {
		case 0:
			c.Draining = true
		case 1:
			c.ExpiresAt = now.Add(-5 * time.Second).UnixNano()
		}
		s.Cells = append(s.Cells, c)
	}
	counts := []string{"", "0", "1", "2", "25%", "50%", "100%"}
	defs := []string{"v1", "v2"}
	for l := range 1 + r.IntN(4) {
		guid := fmt.Sprintf("lrp-%d", l)
		instances := int32(1 + r.IntN(8))
		d := convergence.DesiredSchedule{
			ProcessGuid: guid, Domain: "apps", Instances: instances, ActiveDefinitionID: defs[r.IntN(2)], HealthyDefinitionID: "v1",
			UpdateStrategy: &models.UpdateStrategy{MaxSurge: counts[r.IntN(len(counts))], MaxUnavailable: counts[r.IntN(len(counts))]},
			MemoryMB:       64, DiskMB: 64,
		}
		if r.IntN(3) != 0 {
			d.DisruptionBudget = &models.DisruptionBudget{MaxUnavailable: counts[r.IntN(len(counts))]}
		}
		s.Desired = append(s.Desired, d)
		if r.IntN(2) == 0 {
			s.Rollouts = append(s.Rollouts, convergence.RolloutRow{
				ProcessGuid: guid, State: models.RolloutStatus_PROGRESSING, DefinitionID: d.ActiveDefinitionID,
				StartedAt: now.Add(-time.Minute).UnixNano(), ProgressAt: now.Add(-time.Minute).UnixNano(),
				AdmittedAt: now.Add(-time.Minute).UnixNano(), Fast: r.IntN(3) == 0, ModificationIndex: 1,
			})
			s.Definitions = append(s.Definitions,
				convergence.DefinitionRow{ProcessGuid: guid, DefinitionID: "v2", CreatedAt: now.Add(-time.Hour).UnixNano()},
				convergence.DefinitionRow{ProcessGuid: guid, DefinitionID: "v1", CreatedAt: now.Add(-2 * time.Hour).UnixNano()})
		}
		// A scale-down leaves rows above the count.
		for index := range instances + int32(r.IntN(3)) {
			row := convergence.ActualRow{
				ProcessGuid: guid, Index: index, Presence: ordinary, Domain: "apps", CellID: fmt.Sprintf("cell-%d", r.IntN(4)),
				InstanceGuid: fmt.Sprintf("%s-%d", guid, index), DefinitionID: defs[r.IntN(2)],
				Since: now.Add(-time.Hour).UnixNano(), ModificationIndex: 1, MemoryMB: 64, DiskMB: 64,
			}
			switch r.IntN(8) {
			case 0:
				row.State, row.CellID = unclaimedState, ""
			case 1:
				row.State, row.CrashCount = crashedState, 1
			default:
				row.State, row.Routable = runningState, r.IntN(8) != 0
			}
			switch r.IntN(5) {
			case 0:
				// Evacuating: the ORDINARY row was handed over.
				evac := row
				evac.Presence = models.ActualLRP_EVACUATING
				evac.State, evac.Routable = runningState, true
				s.Actual = append(s.Actual, evac)
				row.State, row.CellID, row.Routable, row.InstanceGuid = unclaimedState, "", false, ""
				row.Since = now.Add(-time.Second).UnixNano()
			case 1:
				ret := row
				ret.Presence = models.ActualLRP_RETIRING
				ret.CellID = fmt.Sprintf("cell-%d", r.IntN(4))
				ret.DefinitionID = defs[r.IntN(2)]
				ret.State, ret.Routable, ret.StopRequested = runningState, true, r.IntN(3) == 0
				s.Actual = append(s.Actual, ret)
			}
			s.Actual = append(s.Actual, row)
		}
	}
	slices.SortFunc(s.Actual, func(a, b convergence.ActualRow) int { return compareKeys(a.Key(), b.Key()) })
	return s
}
