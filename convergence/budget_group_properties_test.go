package convergence_test

import (
	"fmt"
	"math/rand/v2"
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
				present := presentCells(s, now)
				for _, d := range s.Desired {
					b := models.ResolveDisruptionBudget(d.Instances, d.DisruptionBudget, models.StoredRolloutStrategy(d.Instances, d.UpdateStrategy))
					before := budgetServingIndices(s.Actual, d, present)
					Expect(budgetServingIndices(after.Actual, d, present)).To(BeNumerically(">=", min(int(d.Instances-b), before)),
						"%s\n%s\nseed %d pass %d: %s (%d instances, budget %d) from %d serving: %v", dumpRows(s.Actual, d.ProcessGuid), dumpRows(after.Actual, d.ProcessGuid), seed, pass, d.ProcessGuid, d.Instances, b, before, plan.Reasons)
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
						"seed %d pass %d: group %s (%v: %d instances, budget %d) from %d serving: %v", seed, pass, g.Name, members, total, b, before, plan.Reasons)
				}
				for _, st := range plan.Writes.Rollouts {
					if strings.Contains(st.Record.BlockedBy.GetDetail(), "budget group") {
						groupHeld++
					}
				}
				now = now.Add(2 * time.Second)
				s = betweenPasses(r, after, now)
			}
		}
		// The groups held something: the floor above is not met by
		// chance only.
		Expect(groupHeld).To(BeNumerically(">", 0))
		fmt.Fprintf(GinkgoWriter, "rollout passes a budget group held: %d\n", groupHeld)
	})
})
