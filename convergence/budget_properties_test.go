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

// These specs play many passes: between two passes the cells' reps act
// (placed instances start, instances told to stop stop, an EVACUATING
// instance stops once its index's ORDINARY instance serves), drains begin
// and hand instances over as DecideEvacuation allows, instances crash,
// and LRPs scale down. Every pass's plan is held to the same floor as
// above, so the budget holds over random interleavings of them all, not
// only from states written by hand.
var _ = Describe("Passes under disruption budgets, with drains, crashes and scale-downs between them", func() {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := convergence.DefaultConfig()

	It("never take an LRP's serving indices below instances − budget, pass after pass", func() {
		for seed := range uint64(300) {
			r := rand.New(rand.NewPCG(seed, 47))
			now := start
			s := randomBudgetState(r, now)
			for pass := range 20 {
				plan := convergence.Compute(s, now, cfg)
				after, err := convergence.ApplyPlan(s, plan, now)
				Expect(err).NotTo(HaveOccurred(), "seed %d pass %d: %v", seed, pass, plan.Reasons)
				present := presentCells(s, now)
				for _, d := range s.Desired {
					b := models.ResolveDisruptionBudget(d.Instances, d.DisruptionBudget, models.StoredRolloutStrategy(d.Instances, d.UpdateStrategy))
					before := budgetServingIndices(s.Actual, d, present)
					floor := min(int(d.Instances-b), before)
					Expect(budgetServingIndices(after.Actual, d, present)).To(BeNumerically(">=", floor),
						"%s\n%s\nseed %d pass %d: %s (%d instances, budget %d) from %d serving: %v", dumpRows(s.Actual, d.ProcessGuid), dumpRows(after.Actual, d.ProcessGuid), seed, pass, d.ProcessGuid, d.Instances, b, before, plan.Reasons)
				}
				now = now.Add(2 * time.Second)
				s = betweenPasses(r, after, now)
			}
		}
	})
})

// presentCells says which cells' presence has not expired at now.
func presentCells(s *convergence.Snapshot, now time.Time) map[string]bool {
	present := map[string]bool{}
	for _, c := range s.Cells {
		present[c.CellID] = c.ExpiresAt > now.UnixNano()
	}
	return present
}

// betweenPasses is what the world does to s between two passes, at now:
// see the Describe above. Present cells stay present.
func betweenPasses(r *rand.Rand, s *convergence.Snapshot, now time.Time) *convergence.Snapshot {
	for i := range s.Cells {
		if c := &s.Cells[i]; c.ExpiresAt > now.Add(-time.Minute).UnixNano() && c.ExpiresAt < now.Add(time.Minute).UnixNano() {
			// Present cells heartbeat; a cell lost stays lost.
			if c.ExpiresAt > now.Add(-2*time.Second).UnixNano() {
				c.ExpiresAt = now.Add(time.Minute).UnixNano()
			}
		}
		if r.IntN(40) == 0 {
			s.Cells[i].Draining = true
		}
	}
	present := presentCells(s, now)
	draining := map[string]bool{}
	for _, c := range s.Cells {
		draining[c.CellID] = c.Draining
	}
	serves := func(row convergence.ActualRow) bool {
		return row.State == runningState && row.Routable && present[row.CellID]
	}
	ordinaryServes := map[models.ActualLRPKey]bool{}
	for _, row := range s.Actual {
		if row.Presence == ordinary && serves(row) {
			ordinaryServes[row.Key()] = true
		}
	}
	var rows []convergence.ActualRow
	for _, row := range s.Actual {
		changed := true
		switch {
		case row.Presence == ordinary && (row.State == unclaimedState && row.CellID != "" || row.State == models.ActualLRP_CLAIMED) && present[row.CellID] && r.IntN(3) != 0:
			row.State, row.Routable, row.Since = runningState, true, now.UnixNano()
			row.InstanceGuid = fmt.Sprintf("%s-%d-%d", row.ProcessGuid, row.Index, now.Unix())
		case row.Presence == models.ActualLRP_RETIRING && row.StopRequested && r.IntN(4) != 0:
			continue
		case row.Presence == models.ActualLRP_EVACUATING && ordinaryServes[models.ActualLRPKey{ProcessGuid: row.ProcessGuid, Index: row.Index, Presence: ordinary}]:
			continue
		case row.State == runningState && r.IntN(50) == 0:
			if row.Presence == models.ActualLRP_EVACUATING {
				// An evacuating instance that crashes is gone: its rep
				// removes its row.
				continue
			}
			row.State, row.Routable, row.CrashCount, row.Since = crashedState, false, row.CrashCount+1, now.UnixNano()
		default:
			changed = false
		}
		if changed {
			row.ModificationIndex++
		}
		rows = append(rows, row)
	}
	s.Actual = rows
	for i := range s.Desired {
		if d := &s.Desired[i]; d.Instances > 1 && r.IntN(30) == 0 {
			d.Instances--
		}
	}
	// Drains hand over their cells' serving ORDINARY instances, one at a
	// time per LRP, as the store does: each asks DecideEvacuation over
	// the rows as they are after the handovers before it.
	evacuating := map[models.ActualLRPKey]bool{}
	for _, row := range s.Actual {
		if row.Presence == models.ActualLRP_EVACUATING {
			evacuating[models.ActualLRPKey{ProcessGuid: row.ProcessGuid, Index: row.Index, Presence: ordinary}] = true
		}
	}
	for i := range s.Actual {
		row := s.Actual[i]
		if row.Presence != ordinary || !draining[row.CellID] || !serves(row) || evacuating[row.Key()] || r.IntN(2) == 0 {
			continue
		}
		var d convergence.DesiredSchedule
		for _, x := range s.Desired {
			if x.ProcessGuid == row.ProcessGuid {
				d = x
			}
		}
		t := tallyLRP(s, d, present)
		if !convergence.DecideEvacuation(row.ProcessGuid, true, t, tallyGroupOf(s, d, present), 0, now.UnixNano()).Go {
			continue
		}
		evac := row
		evac.Presence, evac.ModificationIndex = models.ActualLRP_EVACUATING, 1
		s.Actual[i].State, s.Actual[i].CellID, s.Actual[i].Routable, s.Actual[i].InstanceGuid = unclaimedState, "", false, ""
		s.Actual[i].Since, s.Actual[i].ModificationIndex = now.UnixNano(), row.ModificationIndex+1
		s.Actual = append(s.Actual, evac)
	}
	slices.SortFunc(s.Actual, func(a, b convergence.ActualRow) int { return compareKeys(a.Key(), b.Key()) })
	return s
}

// tallyLRP tallies d's own budget over s's rows, as the store does before
// a hand-over.
func tallyLRP(s *convergence.Snapshot, d convergence.DesiredSchedule, present map[string]bool) convergence.DisruptionBudget {
	b := models.ResolveDisruptionBudget(d.Instances, d.DisruptionBudget, models.StoredRolloutStrategy(d.Instances, d.UpdateStrategy))
	var budgetRows []convergence.BudgetRow
	for _, x := range s.Actual {
		if x.ProcessGuid == d.ProcessGuid {
			budgetRows = append(budgetRows, convergence.BudgetRow{Index: x.Index, Presence: x.Presence, State: x.State, Routable: x.Routable,
				StopRequested: x.StopRequested, OnPresentCell: present[x.CellID], Since: x.Since})
		}
	}
	return convergence.TallyRows(d.Instances, b, budgetRows, nil)
}

// tallyGroupOf tallies d's budget group over its members' rows in s, as
// the store does before a hand-over; nil when d names no defined group.
func tallyGroupOf(s *convergence.Snapshot, d convergence.DesiredSchedule, present map[string]bool) *convergence.GroupBudget {
	name := d.DisruptionBudget.GetGroup()
	for _, g := range s.BudgetGroups {
		if name == "" || g.Name != name {
			continue
		}
		var members []convergence.GroupMember
		for _, m := range s.Desired {
			if m.DisruptionBudget.GetGroup() == name {
				members = append(members, convergence.GroupMember{ProcessGuid: m.ProcessGuid, Budget: tallyLRP(s, m, present)})
			}
		}
		return convergence.TallyGroup(g, members)
	}
	return nil
}

func dumpRows(rows []convergence.ActualRow, guid string) string {
	out := ""
	for _, r := range rows {
		if r.ProcessGuid == guid {
			out += fmt.Sprintf("%d %v %v cell=%s def=%s routable=%v stop=%v\n", r.Index, r.Presence, r.State, r.CellID, r.DefinitionID, r.Routable, r.StopRequested)
		}
	}
	return out
}
