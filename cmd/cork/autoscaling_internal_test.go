package main

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("autoscaling in words", func() {
	settings := func(enabled bool, least, most int32, target float64, windowMs int64) *models.Autoscaling {
		return &models.Autoscaling{
			Enabled: enabled, Min: least, Max: most, ScaleDownStabilizationMs: windowMs,
			Policy: &models.AutoscalingPolicy{
				Type: models.RoomOccupancyPolicy,
				Parameters: &models.AutoscalingPolicyParameters{
					RoomOccupancy: &models.RoomOccupancyParameters{ReadyTarget: target},
				},
			},
		}
	}

	DescribeTable("autoscaleCell: min-max@ready_target while enabled",
		func(s *models.Autoscaling, want string) {
			Expect(orDash([]string{autoscaleCell(s)})[0]).To(Equal(want))
		},
		Entry("a range", settings(true, 2, 10, 0.5, 0), "2-10@0.5"),
		Entry("no limit", settings(true, 1, -1, 0.3, 0), "1-∞@0.3"),
		Entry("disabled", settings(false, 2, 10, 0.5, 0), "-"),
		Entry("none", nil, "-"),
	)

	DescribeTable("autoscalingLine: the settings",
		func(s *models.Autoscaling, want string) {
			Expect(autoscalingLine(s)).To(Equal(want))
		},
		Entry("enabled, with a window", settings(true, 2, 10, 0.5, 120_000),
			"enabled, min 2, max 10, policy roomOccupancy, ready_target 0.5, scale-down window 2m0s"),
		Entry("no limit, the board's window", settings(true, 3, -1, 0.25, 0),
			"enabled, min 3, max no limit, policy roomOccupancy, ready_target 0.25, scale-down window the board's default"),
		Entry("disabled settings kept", settings(false, 2, 10, 0.5, 1500),
			"disabled, min 2, max 10, policy roomOccupancy, ready_target 0.5, scale-down window 1.5s"),
		Entry("disabled, nothing else", &models.Autoscaling{}, "disabled"),
	)

	It("autoscalerLine: the last decision and when, or none yet while enabled", func() {
		at := time.Date(2026, 11, 26, 16, 0, 0, 0, time.UTC)
		lrp := &models.DesiredLRP{Autoscaling: settings(true, 2, 10, 0.5, 0)}
		Expect(autoscalerLine(lrp)).To(Equal("no decision yet"))
		lrp.Autoscaler = &models.AutoscalerStatus{LastDecision: &models.AutoscalerDecision{
			At: at.UnixNano(), Occupied: 1, ReadyTarget: 0.5, Computed: 2, Wanted: 3, Min: 3, Max: -1,
			Instances: 5, PreviousInstances: 5, Reason: "scale-down kept by the window",
		}}
		Expect(autoscalerLine(lrp)).To(Equal("occupied 1, ready_target 0.5: ceil(1 / (1 − 0.5)) = 2, clamped to [3, no limit]: wanted 3; instances 5 → 5 (scale-down kept by the window) (at 2026-11-26T16:00:00Z)"))
		Expect(autoscalerLine(&models.DesiredLRP{})).To(BeEmpty())
	})
})
