package models_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("ResolveDisruptionBudget", func() {
	strategy := func(instances int32, maxUnavailable string) models.RolloutStrategy {
		s, err := models.ResolveRolloutStrategy(instances, &models.UpdateStrategy{MaxUnavailable: maxUnavailable})
		Expect(err).NotTo(HaveOccurred())
		return s
	}

	DescribeTable("count or percent, default the strategy's max_unavailable",
		func(instances int32, strategyUnavailable string, budget *models.DisruptionBudget, want int32) {
			Expect(models.ResolveDisruptionBudget(instances, budget, strategy(instances, strategyUnavailable))).To(Equal(want))
		},
		// The worked example: 8 instances, strategy max_unavailable "25%".
		Entry("1. no budget: the strategy's 2", int32(8), "25%", nil, int32(2)),
		Entry("1. an empty budget too", int32(8), "25%", &models.DisruptionBudget{}, int32(2)),
		Entry("2. 10% rounds down to 0", int32(8), "25%", &models.DisruptionBudget{MaxUnavailable: "10%"}, int32(0)),
		Entry("3. a count", int32(8), "25%", &models.DisruptionBudget{MaxUnavailable: "3"}, int32(3)),
		Entry("3. a count above the instances", int32(8), "25%", &models.DisruptionBudget{MaxUnavailable: "20"}, int32(8)),
		Entry("the default strategy: 0", int32(8), "", nil, int32(0)),
		Entry("25% of 6 is 1", int32(6), "", &models.DisruptionBudget{MaxUnavailable: "25%"}, int32(1)),
		Entry("a stored budget that does not validate: the default", int32(8), "1", &models.DisruptionBudget{MaxUnavailable: "lots"}, int32(1)),
	)

	DescribeTable("validation names the field",
		func(u *models.DesiredLRPUpdate, want string) {
			err := (&models.UpdateDesiredLRPRequest{ProcessGuid: "web", Update: u}).Validate()
			if want == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("an update with a percent", &models.DesiredLRPUpdate{DisruptionBudget: &models.DisruptionBudget{MaxUnavailable: "25%"}}, ""),
		Entry("an update with a bad count", &models.DesiredLRPUpdate{DisruptionBudget: &models.DisruptionBudget{MaxUnavailable: "-1"}},
			"update.disruption_budget.max_unavailable"),
		Entry("an update above 100%", &models.DesiredLRPUpdate{DisruptionBudget: &models.DisruptionBudget{MaxUnavailable: "101%"}},
			"update.disruption_budget.max_unavailable"),
		Entry("an update with a count of 16 characters", &models.DesiredLRPUpdate{DisruptionBudget: &models.DisruptionBudget{MaxUnavailable: "0000000000000001"}}, ""),
		Entry("an update with a count of 17 characters", &models.DesiredLRPUpdate{DisruptionBudget: &models.DisruptionBudget{MaxUnavailable: "00000000000000001"}},
			"update.disruption_budget.max_unavailable: must be at most 16 characters, got 17"),
		Entry("an update with a count of 19 digits", &models.DesiredLRPUpdate{DisruptionBudget: &models.DisruptionBudget{MaxUnavailable: "1234567890123456789"}},
			"update.disruption_budget.max_unavailable: must be at most 16 characters, got 19"),
		Entry("an update naming a group", &models.DesiredLRPUpdate{DisruptionBudget: &models.DisruptionBudget{Group: "checkout"}}, ""),
		Entry("an update naming a group with a leading space", &models.DesiredLRPUpdate{DisruptionBudget: &models.DisruptionBudget{Group: " checkout"}},
			"update.disruption_budget.group: must not start or end with a space"),
	)

	It("plays no part for the group: a budget naming one resolves as before", func() {
		b := &models.DisruptionBudget{MaxUnavailable: "3", Group: "checkout"}
		Expect(models.ResolveDisruptionBudget(8, b, strategy(8, "25%"))).To(Equal(int32(3)))
		Expect(models.ResolveDisruptionBudget(8, &models.DisruptionBudget{Group: "checkout"}, strategy(8, "25%"))).To(Equal(int32(2)))
	})
})

var _ = Describe("Budget groups", func() {
	DescribeTable("ResolveGroupBudget",
		func(total int32, g *models.BudgetGroup, want int32, wantOK bool) {
			got, ok := models.ResolveGroupBudget(total, g)
			Expect([]any{got, ok}).To(Equal([]any{want, wantOK}))
		},
		// The worked example: 12 LRPs of 2 instances.
		Entry("1. a count", int32(24), &models.BudgetGroup{Name: "checkout", MaxUnavailable: "2"}, int32(2), true),
		Entry("2. 10% rounds down", int32(24), &models.BudgetGroup{Name: "checkout", MaxUnavailable: "10%"}, int32(2), true),
		Entry("2. 25%", int32(24), &models.BudgetGroup{Name: "checkout", MaxUnavailable: "25%"}, int32(6), true),
		Entry("2. 0", int32(24), &models.BudgetGroup{Name: "checkout", MaxUnavailable: "0"}, int32(0), true),
		Entry("3. a count above the total", int32(24), &models.BudgetGroup{Name: "checkout", MaxUnavailable: "40"}, int32(24), true),
		Entry("not defined", int32(24), nil, int32(0), false),
		Entry("a stored value that does not validate", int32(24), &models.BudgetGroup{Name: "checkout", MaxUnavailable: "lots"}, int32(0), false),
	)

	DescribeTable("validation names the field",
		func(r interface{ Validate() error }, want string) {
			err := r.Validate()
			if want == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("a count", &models.SetBudgetGroupRequest{Group: &models.BudgetGroup{Name: "checkout", MaxUnavailable: "2"}}, ""),
		Entry("a percent", &models.SetBudgetGroupRequest{Group: &models.BudgetGroup{Name: "checkout", MaxUnavailable: "10%"}}, ""),
		Entry("no group", &models.SetBudgetGroupRequest{}, "group: required"),
		Entry("no name", &models.SetBudgetGroupRequest{Group: &models.BudgetGroup{MaxUnavailable: "2"}}, "group.name: required"),
		Entry("no max_unavailable", &models.SetBudgetGroupRequest{Group: &models.BudgetGroup{Name: "checkout"}},
			"group.max_unavailable: required"),
		Entry("a bad max_unavailable", &models.SetBudgetGroupRequest{Group: &models.BudgetGroup{Name: "checkout", MaxUnavailable: "2.5"}},
			`group.max_unavailable: must be a count like "2" or a percent like "25%" (0-100%), got "2.5"`),
		Entry("a max_unavailable of 17 characters", &models.SetBudgetGroupRequest{Group: &models.BudgetGroup{Name: "checkout", MaxUnavailable: "12345678901234567"}},
			"group.max_unavailable: must be at most 16 characters, got 17"),
		Entry("remove: no name", &models.RemoveBudgetGroupRequest{}, "name: required"),
		Entry("remove: a name", &models.RemoveBudgetGroupRequest{Name: "checkout"}, ""),
	)
})
