package models_test

import (
	"math"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

func validAutoscaling() *models.Autoscaling {
	return &models.Autoscaling{
		Enabled: true, Min: 2, Max: 10,
		Policy: &models.AutoscalingPolicy{
			Type: models.RoomOccupancyPolicy,
			Parameters: &models.AutoscalingPolicyParameters{
				RoomOccupancy: &models.RoomOccupancyParameters{ReadyTarget: 0.5},
			},
		},
	}
}

var _ = Describe("Autoscaling validation", func() {
	DescribeTable("on desire: each error names its field",
		func(mutate func(*models.Autoscaling), want string) {
			lrp := validDesiredLRP()
			lrp.Autoscaling = validAutoscaling()
			mutate(lrp.Autoscaling)
			expectValidation(&models.DesireLRPRequest{DesiredLrp: lrp}, want)
		},
		Entry("valid settings", func(*models.Autoscaling) {}, ""),
		Entry("no max (-1)", func(a *models.Autoscaling) { a.Max = -1 }, ""),
		Entry("ready_target at its bounds", func(a *models.Autoscaling) { a.Policy.Parameters.RoomOccupancy.ReadyTarget = 0.1 }, ""),
		Entry("ready_target 0.9", func(a *models.Autoscaling) { a.Policy.Parameters.RoomOccupancy.ReadyTarget = 0.9 }, ""),
		Entry("disabled settings are not checked", func(a *models.Autoscaling) { *a = models.Autoscaling{Enabled: false, Min: -4} }, ""),
		Entry("min 0", func(a *models.Autoscaling) { a.Min = 0 },
			"desired_lrp.autoscaling.min: must be greater than 0; to run no instances, disable autoscaling and set instances to 0"),
		Entry("min negative", func(a *models.Autoscaling) { a.Min = -1 },
			"desired_lrp.autoscaling.min: must be greater than 0, got -1"),
		Entry("max equal to min", func(a *models.Autoscaling) { a.Max = 2 },
			"desired_lrp.autoscaling.max: must be greater than min (2) and at most 100000, or -1 for no limit, got 2"),
		Entry("max below min", func(a *models.Autoscaling) { a.Max = 1 },
			"desired_lrp.autoscaling.max: must be greater than min (2) and at most 100000, or -1 for no limit, got 1"),
		Entry("max 0", func(a *models.Autoscaling) { a.Max = 0 },
			"desired_lrp.autoscaling.max: must be greater than min (2) and at most 100000, or -1 for no limit, got 0"),
		Entry("max -2", func(a *models.Autoscaling) { a.Max = -2 },
			"desired_lrp.autoscaling.max: must be greater than min (2) and at most 100000, or -1 for no limit, got -2"),
		Entry("ready_target 0.05", func(a *models.Autoscaling) { a.Policy.Parameters.RoomOccupancy.ReadyTarget = 0.05 },
			"desired_lrp.autoscaling.policy.parameters.room_occupancy.ready_target: must be between 0.1 and 0.9, got 0.05"),
		Entry("ready_target 0.95", func(a *models.Autoscaling) { a.Policy.Parameters.RoomOccupancy.ReadyTarget = 0.95 },
			"desired_lrp.autoscaling.policy.parameters.room_occupancy.ready_target: must be between 0.1 and 0.9, got 0.95"),
		Entry("ready_target NaN", func(a *models.Autoscaling) { a.Policy.Parameters.RoomOccupancy.ReadyTarget = math.NaN() },
			"desired_lrp.autoscaling.policy.parameters.room_occupancy.ready_target: must be between 0.1 and 0.9, got NaN"),
		Entry("no ready_target", func(a *models.Autoscaling) { a.Policy.Parameters = nil },
			"desired_lrp.autoscaling.policy.parameters.room_occupancy.ready_target: must be between 0.1 and 0.9, got 0"),
		Entry("another policy type", func(a *models.Autoscaling) { a.Policy.Type = "cpu" },
			`desired_lrp.autoscaling.policy.type: must be "roomOccupancy", got "cpu"`),
		Entry("no policy", func(a *models.Autoscaling) { a.Policy = nil },
			`desired_lrp.autoscaling.policy.type: must be "roomOccupancy", got ""`),
		Entry("a negative window", func(a *models.Autoscaling) { a.ScaleDownStabilizationMs = -1 },
			"desired_lrp.autoscaling.scale_down_stabilization_ms: must be between 0 (the board's default) and 86400000, got -1"),
	)

	DescribeTable("on update",
		func(update *models.DesiredLRPUpdate, want string) {
			expectValidation(&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: update}, want)
		},
		Entry("enabling", &models.DesiredLRPUpdate{Autoscaling: validAutoscaling()}, ""),
		Entry("disabling, with instances", &models.DesiredLRPUpdate{
			Autoscaling: &models.Autoscaling{Enabled: false}, Instances: proto.Int32(3)}, ""),
		Entry("enabling and setting instances at once", &models.DesiredLRPUpdate{
			Autoscaling: validAutoscaling(), Instances: proto.Int32(3)}, "update.instances: "+models.ErrInstancesAutoscaled),
		Entry("invalid settings", &models.DesiredLRPUpdate{Autoscaling: &models.Autoscaling{Enabled: true, Min: 0}},
			"update.autoscaling.min: must be greater than 0; to run no instances, disable autoscaling and set instances to 0"),
	)
})

var _ = Describe("AutoscaledUpdate", func() {
	const now = int64(1_800_000_000_000_000_000)
	lrp := func(instances int32, a *models.Autoscaling) *models.DesiredLRP {
		return &models.DesiredLRP{Instances: instances, Autoscaling: a}
	}
	enabled := validAutoscaling() // min 2, max 10
	disabled := &models.Autoscaling{Enabled: false}
	seeded := func(n int32) *models.AutoscalerStatus { return models.SeedAutoscaler(n, now) }

	DescribeTable("the count an update leaves and what becomes of the autoscaler's state",
		func(before *models.DesiredLRP, update *models.DesiredLRPUpdate, instances *int32, change models.AutoscalerChange) {
			gotInstances, gotChange := models.AutoscaledUpdate(before, update, now)
			Expect(gotInstances).To(Equal(instances))
			Expect(gotChange.Clear).To(Equal(change.Clear))
			Expect(proto.Equal(gotChange.Seed, change.Seed)).To(BeTrue(), "seed %v, want %v", gotChange.Seed, change.Seed)
		},
		Entry("no autoscaling: instances as the update sets them",
			lrp(3, nil), &models.DesiredLRPUpdate{Instances: proto.Int32(5)}, proto.Int32(5), models.AutoscalerChange{}),
		Entry("enabled before, not touched: the autoscaler keeps the count",
			lrp(3, enabled), &models.DesiredLRPUpdate{Instances: proto.Int32(5)}, (*int32)(nil), models.AutoscalerChange{}),
		Entry("enabling: clamped up to min and seeded",
			lrp(1, nil), &models.DesiredLRPUpdate{Autoscaling: enabled}, proto.Int32(2), models.AutoscalerChange{Seed: seeded(2)}),
		Entry("enabling: clamped down to max and seeded",
			lrp(40, disabled), &models.DesiredLRPUpdate{Autoscaling: enabled}, proto.Int32(10), models.AutoscalerChange{Seed: seeded(10)}),
		Entry("changing enabled settings: clamped, the state kept",
			lrp(9, enabled), &models.DesiredLRPUpdate{Autoscaling: &models.Autoscaling{Enabled: true, Min: 1, Max: 4, Policy: enabled.Policy}},
			proto.Int32(4), models.AutoscalerChange{}),
		Entry("disabling: the count kept unless set, the state cleared",
			lrp(6, enabled), &models.DesiredLRPUpdate{Autoscaling: disabled}, (*int32)(nil), models.AutoscalerChange{Clear: true}),
		Entry("disabling and setting instances",
			lrp(6, enabled), &models.DesiredLRPUpdate{Autoscaling: disabled, Instances: proto.Int32(3)}, proto.Int32(3), models.AutoscalerChange{Clear: true}),
	)
})
