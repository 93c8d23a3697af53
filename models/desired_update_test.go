package models_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("ApplyUpdate", func() {
	const now = int64(1_000)
	v2 := &models.LRPDefinition{DefinitionId: "v2", MemoryMb: 256}
	autoscaling := &models.Autoscaling{Enabled: true, Min: 2, Max: 5}
	staged := &models.StagedRollout{TargetPercent: 25}
	i32 := func(v int32) *int32 { return &v }

	// lrp is web with 4 instances on v1, autoscaling off unless edited.
	lrp := func(edit ...func(*models.DesiredLRP)) *models.DesiredLRP {
		d := &models.DesiredLRP{ProcessGuid: "web", Instances: 4, ActiveDefinitionId: "v1"}
		for _, e := range edit {
			e(d)
		}
		return d
	}
	autoscaled := func(d *models.DesiredLRP) { d.Autoscaling = autoscaling }

	type want struct {
		instances    *int32
		seeded       bool
		cleared      bool
		definitionID string
		active       string
		activated    bool
		staged       bool
		from, to     int32
	}

	DescribeTable("decides what an update does",
		func(before *models.DesiredLRP, update *models.DesiredLRPUpdate, w want) {
			kept := proto.Clone(before)
			change := models.ApplyUpdate(before, update, now)
			Expect(proto.Equal(kept, before)).To(BeTrue(), "ApplyUpdate changed the LRP it read")
			if w.instances == nil {
				Expect(change.Instances).To(BeNil())
			} else {
				Expect(change.Instances).To(HaveValue(Equal(*w.instances)))
			}
			Expect(change.Autoscaler.Seed != nil).To(Equal(w.seeded), "seeded")
			Expect(change.Autoscaler.Clear).To(Equal(w.cleared), "cleared")
			Expect(change.DefinitionID).To(Equal(w.definitionID))
			Expect(change.ActiveDefinitionID).To(Equal(w.active))
			Expect(change.Activated).To(Equal(w.activated))
			Expect(change.Stage != nil).To(Equal(w.staged), "staged")
			Expect([]int32{change.ScaleFrom, change.ScaleTo}).To(Equal([]int32{w.from, w.to}))
		},
		Entry("an empty update changes nothing",
			lrp(), &models.DesiredLRPUpdate{},
			want{active: "v1", from: 4, to: 4}),
		Entry("instances up",
			lrp(), &models.DesiredLRPUpdate{Instances: i32(6)},
			want{instances: i32(6), active: "v1", from: 4, to: 6}),
		Entry("instances down",
			lrp(), &models.DesiredLRPUpdate{Instances: i32(1)},
			want{instances: i32(1), active: "v1", from: 4, to: 1}),
		Entry("a new definition activates and starts a rollout",
			lrp(), &models.DesiredLRPUpdate{Definition: v2},
			want{definitionID: "v2", active: "v2", activated: true, from: 4, to: 4}),
		Entry("the update identifier names the definition",
			lrp(), &models.DesiredLRPUpdate{Definition: v2, UpdateIdentifier: "v3"},
			want{definitionID: "v3", active: "v3", activated: true, from: 4, to: 4}),
		Entry("the active definition again activates nothing",
			lrp(), &models.DesiredLRPUpdate{Definition: &models.LRPDefinition{DefinitionId: "v1"}},
			want{definitionID: "v1", active: "v1", from: 4, to: 4}),
		Entry("staged starts its rollout in a phase",
			lrp(), &models.DesiredLRPUpdate{Definition: v2, Staged: staged},
			want{definitionID: "v2", active: "v2", activated: true, staged: true, from: 4, to: 4}),
		Entry("staged without a new active definition starts no phase",
			lrp(), &models.DesiredLRPUpdate{Definition: &models.LRPDefinition{DefinitionId: "v1"}, Staged: staged},
			want{definitionID: "v1", active: "v1", from: 4, to: 4}),
		Entry("enabling autoscaling clamps instances and seeds its state",
			lrp(func(d *models.DesiredLRP) { d.Instances = 9 }), &models.DesiredLRPUpdate{Autoscaling: autoscaling},
			want{instances: i32(5), seeded: true, active: "v1", from: 9, to: 5}),
		Entry("changing enabled autoscaling clamps and keeps its state",
			lrp(autoscaled), &models.DesiredLRPUpdate{Autoscaling: &models.Autoscaling{Enabled: true, Min: 6, Max: 8}},
			want{instances: i32(6), active: "v1", from: 4, to: 6}),
		Entry("disabling autoscaling keeps instances and clears its state",
			lrp(autoscaled), &models.DesiredLRPUpdate{Autoscaling: &models.Autoscaling{}},
			want{cleared: true, active: "v1", from: 4, to: 4}),
		Entry("instances while autoscaling is enabled are the autoscaler's: kept",
			lrp(autoscaled), &models.DesiredLRPUpdate{Instances: i32(3)},
			want{active: "v1", from: 4, to: 4}),
	)

	It("plays the worked example of its doc comment", func() {
		update := &models.DesiredLRPUpdate{Definition: &models.LRPDefinition{}, UpdateIdentifier: "v2", Instances: i32(6), Staged: staged}
		change := models.ApplyUpdate(lrp(), update, now)
		Expect(change.Instances).To(HaveValue(BeEquivalentTo(6)))
		Expect(change.Autoscaler).To(BeZero())
		Expect(change.DefinitionID).To(Equal("v2"))
		Expect(change.ActiveDefinitionID).To(Equal("v2"))
		Expect(change.Activated).To(BeTrue())
		Expect(proto.Equal(change.Stage, models.NewRolloutStage(staged, "web", "v2", now))).To(BeTrue())
		Expect([]int32{change.ScaleFrom, change.ScaleTo}).To(Equal([]int32{4, 6}))

		again := models.ApplyUpdate(lrp(func(d *models.DesiredLRP) { d.Instances, d.ActiveDefinitionId = 6, "v2" }), update, now)
		Expect(again.Activated).To(BeFalse())
		Expect(again.Stage).To(BeNil())
		Expect([]int32{again.ScaleFrom, again.ScaleTo}).To(Equal([]int32{6, 6}))
	})
})

var _ = Describe("UpdateConverges", func() {
	note := "v2 notes"
	three := int32(3)
	routes, err := structpb.NewStruct(map[string]any{"http": []any{map[string]any{"hostname": "web.example.com", "port": 8080}}})
	Expect(err).NotTo(HaveOccurred())
	tag := &models.ModificationTag{Epoch: "e", Index: 4}

	DescribeTable("asks for a pass unless every field set is one convergence never reads",
		func(update *models.DesiredLRPUpdate, converges bool) {
			Expect(models.UpdateConverges(update)).To(Equal(converges))
		},
		Entry("nothing set", &models.DesiredLRPUpdate{}, false),
		Entry("annotation", &models.DesiredLRPUpdate{Annotation: &note}, false),
		Entry("routes", &models.DesiredLRPUpdate{Routes: routes}, false),
		Entry("annotation, routes and a tag", &models.DesiredLRPUpdate{Annotation: &note, Routes: routes, ModificationTag: tag}, false),
		Entry("annotation and instances (the worked example)", &models.DesiredLRPUpdate{Annotation: &note, Instances: &three}, true),
		Entry("instances 0", &models.DesiredLRPUpdate{Instances: new(int32)}, true),
		Entry("a definition", &models.DesiredLRPUpdate{Definition: &models.LRPDefinition{}}, true),
		Entry("an update identifier", &models.DesiredLRPUpdate{UpdateIdentifier: "v2"}, true),
		Entry("an update strategy", &models.DesiredLRPUpdate{UpdateStrategy: &models.UpdateStrategy{}}, true),
		Entry("autoscaling", &models.DesiredLRPUpdate{Autoscaling: &models.Autoscaling{}}, true),
		Entry("staged", &models.DesiredLRPUpdate{Staged: &models.StagedRollout{TargetPercent: 25}}, true),
		Entry("queue", &models.DesiredLRPUpdate{Queue: true}, true),
		Entry("validate", &models.DesiredLRPUpdate{Validate: true}, true),
	)
})
