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
	)
})
