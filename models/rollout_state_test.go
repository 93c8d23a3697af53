package models_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Rollout states", func() {
	paused := &models.RolloutStage{Paused: true, PausedAt: 5}
	running := &models.RolloutStage{TargetPercent: 50}

	DescribeTable("advancing, under way, open, deadline running",
		func(state models.RolloutStatus_State, finishedAt int64, stage *models.RolloutStage, advancing, underWay, open, deadline bool) {
			Expect(models.RolloutAdvancing(state)).To(Equal(advancing), "advancing")
			Expect(models.RolloutUnderWay(state, finishedAt)).To(Equal(underWay), "under way")
			Expect(models.RolloutOpen(state, finishedAt)).To(Equal(open), "open")
			Expect(models.RolloutDeadlineRuns(state, finishedAt, stage)).To(Equal(deadline), "deadline runs")
		},
		Entry("1. PROGRESSING", models.RolloutStatus_PROGRESSING, int64(0), nil, true, true, true, true),
		Entry("1. PROGRESSING, staged and running", models.RolloutStatus_PROGRESSING, int64(0), running, true, true, true, true),
		Entry("2. PROGRESSING, staged and paused", models.RolloutStatus_PROGRESSING, int64(0), paused, true, true, true, false),
		Entry("3. HOLDING", models.RolloutStatus_HOLDING, int64(0), running, true, true, true, false),
		Entry("4. REVERTED, going back", models.RolloutStatus_REVERTED, int64(0), nil, false, true, true, true),
		Entry("5. REVERTED and finished", models.RolloutStatus_REVERTED, int64(9), nil, false, false, false, false),
		Entry("5. COMPLETE", models.RolloutStatus_COMPLETE, int64(9), nil, false, false, false, false),
		Entry("5. FAILED", models.RolloutStatus_FAILED, int64(9), nil, false, false, false, false),
		Entry("HELD: waits for an operator, not over", models.RolloutStatus_HELD, int64(0), nil, false, false, true, false),
		Entry("NONE", models.RolloutStatus_NONE, int64(0), nil, false, false, false, false),
	)
})
