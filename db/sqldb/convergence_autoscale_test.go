package sqldb_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// The autoscaler's writes (convergence.AutoscaleWrite), the first group of a plan.
var _ = forEachDialect("ApplyConvergence of autoscale writes", func(b *board) {
	s := newAutoscalingSpecs(b)
	now, desire, get, update, operations, schedule := s.now, s.desire, s.get, s.update, s.operations, s.schedule
	messages := historyLines
	apply := func(writes ...convergence.AutoscaleWrite) *convergence.ConvergenceResult {
		GinkgoHelper()
		result, err := s.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Autoscale: writes})
		Expect(err).NotTo(HaveOccurred())
		return result
	}

	Describe("applying the autoscaler's writes", func() {
		decision := func(reason string) *models.AutoscalerDecision {
			return &models.AutoscalerDecision{At: now(), Occupied: 4, ReadyTarget: 0.5, Computed: 8, Wanted: 8,
				Min: 2, Max: 10, Instances: 8, PreviousInstances: 2, Reason: reason}
		}
		var before *models.DesiredLRP

		BeforeEach(func() {
			desire(autoscaled("web", 2, autoscalingSettings(2, 10)))
			b.clock.Advance(time.Minute)
			before = get("web")
			s.events.take()
		})

		It("moves instances and the tag on, records a FINISHED AUTOSCALE operation and emits desired_lrp_changed", func() {
			d := schedule("web")
			status := &models.AutoscalerStatus{LastDecision: decision("4 occupied"),
				Recommendations: []*models.AutoscalerRecommendation{{At: now(), Wanted: 8}}}
			result := apply(convergence.AutoscaleWrite{ProcessGuid: "web", ExpectModificationIndex: d.ModificationIndex,
				PreviousInstances: 2, Instances: 8, Status: status})
			Expect(result.Applied).To(Equal(1))
			Expect(result.Skipped).To(BeZero())

			after := get("web")
			Expect(after.Instances).To(BeEquivalentTo(8))
			Expect(after.ModificationTag.Index).To(Equal(before.ModificationTag.Index + 1))
			Expect(after.ModificationTag.Epoch).To(Equal(before.ModificationTag.Epoch))
			Expect(after.Autoscaler).To(EqualProto(status))
			Expect(schedule("web").ModificationIndex).To(Equal(d.ModificationIndex + 1))
			Expect(b.instances("web")).To(HaveLen(2), "the plan's creates add the instances, not the store")

			ops := operations("web")
			Expect(ops).To(HaveLen(2))
			op := ops[0]
			Expect(op.Kind).To(Equal(models.Operation_AUTOSCALE))
			Expect(op.Status).To(Equal(models.Operation_FINISHED))
			Expect(op.Sequence).To(BeEquivalentTo(2))
			Expect(op.Reason).To(Equal("4 occupied"))
			Expect(op.RequestedBy).To(Equal("autoscaler"))
			Expect(op.CreatedAt).To(Equal(now()))
			Expect(op.StartedAt).To(Equal(now()))
			Expect(op.FinishedAt).To(Equal(now()))
			Expect(op.History).To(HaveLen(1))
			Expect(op.History[0].At).To(Equal(now()))
			Expect(op.History[0].Message).To(Equal(decision("4 occupied").Describe()))
			Expect(op.History[0].Message).To(HavePrefix("occupied 4, ready_target 0.5: ceil(4 / (1 − 0.5)) = 8"))
			parameters := &models.AutoscalerDecision{}
			Expect(op.Parameters.UnmarshalTo(parameters)).To(Succeed())
			Expect(parameters).To(EqualProto(decision("4 occupied")))

			got := s.events.all()
			Expect(eventTypes(got)).To(Equal([]string{models.EventDesiredLRPChanged, models.EventOperationChanged}))
			changed := got[0].Payload.(*models.DesiredLRPChangedEvent)
			Expect(changed.Before.Instances).To(BeEquivalentTo(2))
			Expect(changed.After).To(EqualProto(withoutDefinition(after)))
			Expect(got[1].Payload.(*models.OperationChangedEvent).Operation).To(EqualProto(op))
		})

		It("says what it did when the decision gives no reason", func() {
			status := &models.AutoscalerStatus{LastDecision: decision("")}
			apply(convergence.AutoscaleWrite{ProcessGuid: "web", ExpectModificationIndex: schedule("web").ModificationIndex,
				PreviousInstances: 2, Instances: 8, Status: status})
			op := operations("web")[0]
			Expect(op.Reason).To(Equal("autoscaled from 2 to 8"))
			Expect(messages(op)).To(Equal([]string{decision("").Describe()}))
		})

		It("skips a write made from a snapshot older than an update, and counts it", func() {
			d := schedule("web")
			update(&models.DesiredLRPUpdate{Annotation: stringp("changed meanwhile")})
			s.events.take()
			result := apply(convergence.AutoscaleWrite{ProcessGuid: "web", ExpectModificationIndex: d.ModificationIndex,
				PreviousInstances: 2, Instances: 8, Status: &models.AutoscalerStatus{LastDecision: decision("")}})
			Expect(result.Applied).To(BeZero())
			Expect(result.Skipped).To(Equal(1))
			after := get("web")
			Expect(after.Instances).To(BeEquivalentTo(2))
			Expect(after.Autoscaler).To(EqualProto(before.Autoscaler))
			Expect(operations("web")).To(HaveLen(2), "the desire and the update, no AUTOSCALE")
			Expect(s.events.all()).To(BeEmpty())
		})

		It("skips a write once autoscaling is disabled, and one for an LRP that is gone", func() {
			d := schedule("web")
			b.exec("UPDATE desired_lrps SET autoscaling = NULL WHERE process_guid = 'web'")
			result := apply(
				convergence.AutoscaleWrite{ProcessGuid: "web", ExpectModificationIndex: d.ModificationIndex,
					PreviousInstances: 2, Instances: 8, Status: &models.AutoscalerStatus{}},
				convergence.AutoscaleWrite{ProcessGuid: "gone", PreviousInstances: 2, Instances: 8, Status: &models.AutoscalerStatus{}},
			)
			Expect(result.Skipped).To(Equal(2))
			Expect(get("web").Instances).To(BeEquivalentTo(2))
		})

		It("stores a status alone without moving the tag, recording an operation or emitting events", func() {
			d := schedule("web")
			status := &models.AutoscalerStatus{Recommendations: []*models.AutoscalerRecommendation{
				{At: now() - int64(time.Minute), Wanted: 2}, {At: now(), Wanted: 1}}}
			write := convergence.AutoscaleWrite{ProcessGuid: "web", ExpectModificationIndex: d.ModificationIndex,
				PreviousInstances: 2, Instances: 2, Status: status}
			Expect(apply(write).Applied).To(Equal(1))
			after := get("web")
			Expect(after.Autoscaler).To(EqualProto(status))
			Expect(after.Instances).To(BeEquivalentTo(2))
			Expect(after.ModificationTag).To(EqualProto(before.ModificationTag))
			Expect(operations("web")).To(HaveLen(1))
			Expect(s.events.all()).To(BeEmpty())

			// The same status again (MySQL counts no changed row) applies too.
			Expect(apply(write).Applied).To(Equal(1))
			Expect(get("web").Autoscaler).To(EqualProto(status))
		})

		It("applies a scale-up before the creates of the same plan", func() {
			d := schedule("web")
			var creates []convergence.NewActualLRP
			for i := int32(2); i < 8; i++ {
				creates = append(creates, convergence.NewActualLRP{ProcessGuid: "web", Index: i, Domain: "apps", DefinitionID: "v1"})
			}
			result, err := s.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{
				Autoscale: []convergence.AutoscaleWrite{{ProcessGuid: "web", ExpectModificationIndex: d.ModificationIndex,
					PreviousInstances: 2, Instances: 8, Status: &models.AutoscalerStatus{LastDecision: decision("")}}},
				Create: creates,
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(result.Applied).To(Equal(7))
			Expect(get("web").Instances).To(BeEquivalentTo(8))
			Expect(b.instances("web")).To(HaveLen(8))
			Expect(eventTypes(s.events.all())[:2]).To(Equal([]string{models.EventDesiredLRPChanged, models.EventOperationChanged}))
		})

		It("refuses writes that could never be right before writing anything", func() {
			for _, w := range []convergence.AutoscaleWrite{
				{ProcessGuid: "", Instances: 8, PreviousInstances: 2},
				{ProcessGuid: "web", Instances: -1, PreviousInstances: 2},
				{ProcessGuid: "web", Instances: 8, PreviousInstances: 2, ExpectModificationIndex: -1},
			} {
				_, err := s.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Autoscale: []convergence.AutoscaleWrite{w}})
				Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			}
			Expect(get("web")).To(EqualProto(before))
		})
	})
})
