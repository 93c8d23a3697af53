package convergence_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// These specs play the passes of budget_properties_test.go with the LRPs
// sharing budget groups: random LRPs name one of two groups, with a budget
// of their own that is often larger than the group's, or a group nobody
// defined. Every pass's plan is held, for every group, to the members'
// instances − the group's budget (or to what served before the pass when
// that was below already), on top of each LRP's own floor; between passes
// drains hand over as DecideEvacuation allows within the group too.
var _ = Describe("Passes under budget groups", func() {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := convergence.DefaultConfig()

	It("never take a group's serving indices below its members' instances − its budget, pass after pass", func() {
		groupHeld := 0
		for seed := range uint64(300) {
			r := rand.New(rand.NewPCG(seed, 53))
			now := start
			s := randomBudgetState(r, now)
			groupBudgets := []string{"0", "1", "2", "10%", "25%"}
			s.BudgetGroups = []*models.BudgetGroup{
				{Name: "checkout", MaxUnavailable: groupBudgets[r.IntN(len(groupBudgets))]},
				{Name: "search", MaxUnavailable: groupBudgets[r.IntN(len(groupBudgets))]},
			}
			for i := range s.Desired {
				d := &s.Desired[i]
				// Own budgets generous, so that the group is what holds.
				own := []string{"", "2", "50%", "100%"}[r.IntN(4)]
				group := []string{"checkout", "checkout", "search", "undefined", ""}[r.IntN(5)]
				d.DisruptionBudget = &models.DisruptionBudget{MaxUnavailable: own, Group: group}
			}
			for pass := range 20 {
				plan := convergence.Compute(s, now, cfg)
				after, err := convergence.ApplyPlan(s, plan, now)
				Expect(err).NotTo(HaveOccurred(), "seed %d pass %d: %v", seed, pass, plan.Reasons)
				expectGroupFloors(s, after, plan, presentCells(s, now), fmt.Sprintf("seed %d pass %d", seed, pass))
				groupHeld += heldByGroup(plan)
				now = now.Add(2 * time.Second)
				s = betweenPasses(r, after, now)
			}
		}
		// The groups held something: the floor above is not met by
		// chance only.
		Expect(groupHeld).To(BeNumerically(">", 0))
		fmt.Fprintf(GinkgoWriter, "rollout passes a budget group held: %d\n", groupHeld)
	})

	It("keeps the floor when every member of one group rolls out at once, stopping before it starts", func() {
		groupHeld := 0
		for seed := range uint64(200) {
			r := rand.New(rand.NewPCG(seed, 59))
			now := start
			s := rollingGroupState(r, now)
			for pass := range 10 {
				plan := convergence.Compute(s, now, cfg)
				after, err := convergence.ApplyPlan(s, plan, now)
				Expect(err).NotTo(HaveOccurred(), "seed %d pass %d: %v", seed, pass, plan.Reasons)
				expectGroupFloors(s, after, plan, presentCells(s, now), fmt.Sprintf("seed %d pass %d", seed, pass))
				groupHeld += heldByGroup(plan)
				now = now.Add(2 * time.Second)
				s = betweenPasses(r, after, now)
			}
		}
		Expect(groupHeld).To(BeNumerically(">", 0))
	})
})

// expectGroupFloors holds the plan that took s to after to each LRP's own
// floor and to each group's: its members' serving indices stay at or above
// their instances together − the group's budget, or at what served before
// when that was below already.
func expectGroupFloors(s, after *convergence.Snapshot, plan *convergence.Plan, present map[string]bool, where string) {
	GinkgoHelper()
	for _, d := range s.Desired {
		b := models.ResolveDisruptionBudget(d.Instances, d.DisruptionBudget, models.StoredRolloutStrategy(d.Instances, d.UpdateStrategy))
		before := budgetServingIndices(s.Actual, d, present)
		Expect(budgetServingIndices(after.Actual, d, present)).To(BeNumerically(">=", min(int(d.Instances-b), before)),
			"%s\n%s\n%s: %s (%d instances, budget %d) from %d serving: %v", dumpRows(s.Actual, d.ProcessGuid), dumpRows(after.Actual, d.ProcessGuid),
			where, d.ProcessGuid, d.Instances, b, before, plan.Reasons)
	}
	for _, g := range s.BudgetGroups {
		total, before, served := int32(0), 0, 0
		var members []string
		for _, d := range s.Desired {
			if d.DisruptionBudget.GetGroup() == g.Name {
				total += d.Instances
				before += budgetServingIndices(s.Actual, d, present)
				served += budgetServingIndices(after.Actual, d, present)
				members = append(members, d.ProcessGuid)
			}
		}
		b, _ := models.ResolveGroupBudget(total, g)
		Expect(served).To(BeNumerically(">=", min(int(total-b), before)),
			"%s: group %s (%v: %d instances, budget %d) from %d serving: %v", where, g.Name, members, total, b, before, plan.Reasons)
	}
}

// heldByGroup counts the rollouts the plan says a budget group holds.
func heldByGroup(plan *convergence.Plan) int {
	held := 0
	for _, w := range plan.Writes.Rollouts {
		if strings.Contains(w.Record.BlockedBy.GetDetail(), "budget group") {
			held++
		}
	}
	return held
}

// rollingGroupState is 2 to 5 LRPs of group checkout (budget 1 to 3), each
// with a budget of its own of 1 to 3 and a strategy with no surge, every
// instance serving v1 on a present cell and a rollout to v2 under way: each
// member would stop instances at once, and only the group's budget, drawn
// LRP after LRP, keeps them together within it.
func rollingGroupState(r *rand.Rand, now time.Time) *convergence.Snapshot {
	s := &convergence.Snapshot{FreshDomains: []string{"apps"},
		BudgetGroups: []*models.BudgetGroup{{Name: "checkout", MaxUnavailable: fmt.Sprint(1 + r.IntN(3))}}}
	for i := range 3 {
		s.Cells = append(s.Cells, convergence.CellRow{
			CellID: fmt.Sprintf("cell-%d", i), Zone: fmt.Sprintf("z%d", i%2),
			Capacity:  convergence.Resources{MemoryMB: 8192, DiskMB: 8192, Instances: 100},
			ExpiresAt: now.Add(time.Minute).UnixNano(),
		})
	}
	for l := range 2 + r.IntN(4) {
		guid := fmt.Sprintf("lrp-%d", l)
		d := convergence.DesiredSchedule{
			ProcessGuid: guid, Domain: "apps", Instances: int32(2 + r.IntN(5)), ActiveDefinitionID: "v2", HealthyDefinitionID: "v1",
			UpdateStrategy:   &models.UpdateStrategy{MaxSurge: "0", MaxUnavailable: fmt.Sprint(1 + r.IntN(3))},
			DisruptionBudget: &models.DisruptionBudget{MaxUnavailable: fmt.Sprint(1 + r.IntN(3)), Group: "checkout"},
			MemoryMB:         64, DiskMB: 64,
		}
		s.Desired = append(s.Desired, d)
		s.Rollouts = append(s.Rollouts, convergence.RolloutRow{
			ProcessGuid: guid, State: models.RolloutStatus_PROGRESSING, DefinitionID: "v2",
			StartedAt: now.Add(-time.Minute).UnixNano(), ProgressAt: now.Add(-time.Minute).UnixNano(),
			AdmittedAt: now.Add(-time.Minute).UnixNano(), ModificationIndex: 1,
		})
		s.Definitions = append(s.Definitions,
			convergence.DefinitionRow{ProcessGuid: guid, DefinitionID: "v2", CreatedAt: now.Add(-time.Hour).UnixNano()},
			convergence.DefinitionRow{ProcessGuid: guid, DefinitionID: "v1", CreatedAt: now.Add(-2 * time.Hour).UnixNano()})
		for index := range d.Instances {
			s.Actual = append(s.Actual, convergence.ActualRow{
				ProcessGuid: guid, Index: index, Presence: ordinary, Domain: "apps", CellID: fmt.Sprintf("cell-%d", r.IntN(3)),
				InstanceGuid: fmt.Sprintf("%s-%d", guid, index), DefinitionID: "v1", State: runningState, Routable: true,
				Since: now.Add(-time.Hour).UnixNano(), ModificationIndex: 1, MemoryMB: 64, DiskMB: 64,
			})
		}
	}
	slices.SortFunc(s.Actual, func(a, b convergence.ActualRow) int { return compareKeys(a.Key(), b.Key()) })
	return s
}
