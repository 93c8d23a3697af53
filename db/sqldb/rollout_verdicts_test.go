package sqldb_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// A rollout's judgement (rollout_verdicts.go, rollouts.go): the analysis
// and policy an update asks for, kept on the record it starts; the
// verdicts RecordVerdict appends while the rollout is judged; a HELD
// rollout resumed.
var _ = forEachDialect("rollout judgements", func(b *board) {
	var sink *recordingSink
	analysis := func() *models.RolloutAnalysis {
		return &models.RolloutAnalysis{IntervalMs: 5000, Checks: []*models.AnalysisCheck{
			{Name: "crashes", Provider: "board", Signal: "crash_rate", Max: proto.Float64(0.1)},
			{Name: "gate", Provider: "webhook", Url: "https://gate.example/check"},
		}}
	}
	verdict := func(outcome models.AnalysisOutcome, definition string) *models.AnalysisVerdict {
		return &models.AnalysisVerdict{Outcome: outcome, At: b.clock.Now().UnixNano(), DefinitionId: definition,
			BaselineDefinitionId: "v1", During: models.AnalysisDuringRolling,
			Checks: []*models.AnalysisCheckResult{{Name: "crashes", Outcome: outcome, Value: proto.Float64(0.4), Max: proto.Float64(0.1),
				Reason: "crashes 0.4 > max 0.1 (by 300%, margin 10%)"}}}
	}
	status := func() *models.RolloutStatus {
		GinkgoHelper()
		st, err := b.store.RolloutStatus(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		return st
	}
	var started int64

	BeforeEach(func() {
		sink = recordEvents(b)
		lrp := newLRP("web", "apps", 4)
		_, err := b.store.DesireLRP(b.ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		b.clock.Advance(time.Second)
		started = b.clock.Now().UnixNano()
		_, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
			Definition: newDefinition("", "/bin/web-v2"), UpdateIdentifier: "v2",
			Analysis: analysis(), OnFailure: "hold", OnMarginal: "hold", BakeMs: 600_000,
		})
		Expect(err).NotTo(HaveOccurred())
		sink.take()
		b.clock.Advance(time.Second)
	})

	It("keeps the update's analysis, policy and bake on the rollout it starts, verdicts counting from its start", func() {
		want := &models.RolloutJudgement{Analysis: analysis(), OnFailure: "hold", OnMarginal: "hold", BakeMs: 600_000, VerdictsFrom: started}
		Expect(proto.Equal(status().GetJudgement(), want)).To(BeTrue(), "got %v", status().GetJudgement())
		snap, err := b.store.ConvergenceSnapshot(b.ctx, []string{"web"})
		Expect(err).NotTo(HaveOccurred())
		Expect(snap.Rollouts).To(HaveLen(1))
		Expect(proto.Equal(snap.Rollouts[0].Judgement, want)).To(BeTrue(), "the planner reads it too")
	})

	It("appends a verdict, writes its line in the history of the operation that started the rollout, and announces both", func() {
		op := newestOperation(b, "web")
		v := verdict(models.AnalysisOutcome_FAIL, "v2")
		Expect(b.store.RecordVerdict(b.ctx, "web", "v2", v)).To(Succeed())

		st := status()
		Expect(st.GetJudgement().GetVerdicts()).To(HaveLen(1))
		Expect(proto.Equal(st.GetJudgement().LastVerdict(), v)).To(BeTrue())
		Expect(st.GetState()).To(Equal(models.RolloutStatus_PROGRESSING), "the planner acts on it, not the store")
		after, err := b.store.Operation(b.ctx, op.Id)
		Expect(err).NotTo(HaveOccurred())
		last := after.History[len(after.History)-1]
		Expect(last.Message).To(Equal("verdict " + models.VerdictLine(v)))
		events := sink.take()
		Expect(events).To(HaveLen(2))
		Expect(events[0].Type).To(Equal(models.EventRolloutChanged))
		Expect(proto.Equal(events[0].Payload.(*models.RolloutChangedEvent).Status.GetJudgement().LastVerdict(), v)).To(BeTrue())
		Expect(events[1].Type).To(Equal(models.EventOperationChanged))

		for range 25 {
			Expect(b.store.RecordVerdict(b.ctx, "web", "v2", verdict(models.AnalysisOutcome_PASS, "v2"))).To(Succeed())
		}
		Expect(status().GetJudgement().GetVerdicts()).To(HaveLen(models.KeptAnalysisVerdicts))
	})

	It("refuses, writing nothing, a verdict of a definition the rollout no longer moves to, or of a rollout no longer judged", func() {
		Expect(b.store.RecordVerdict(b.ctx, "web", "v1", verdict(models.AnalysisOutcome_FAIL, "v1"))).To(HaveErrorType(models.Error_ResourceConflict))
		_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Definition: newDefinition("", "/bin/web-v3"), UpdateIdentifier: "v3"})
		Expect(err).NotTo(HaveOccurred())
		sink.take()
		Expect(b.store.RecordVerdict(b.ctx, "web", "v2", verdict(models.AnalysisOutcome_FAIL, "v2"))).To(HaveErrorType(models.Error_ResourceConflict))
		Expect(b.store.RecordVerdict(b.ctx, "web", "v3", verdict(models.AnalysisOutcome_FAIL, "v3"))).To(HaveErrorType(models.Error_ResourceConflict),
			"v3's update asked for no analysis")
		Expect(status().GetJudgement()).To(BeNil())
		Expect(sink.take()).To(BeEmpty())
		Expect(b.store.RecordVerdict(b.ctx, "gone", "v2", verdict(models.AnalysisOutcome_FAIL, "v2"))).To(HaveErrorType(models.Error_ResourceNotFound))
	})

	It("resumes a HELD rollout: PROGRESSING, judged again from now, the verdict that held it no longer acting", func() {
		Expect(b.store.RecordVerdict(b.ctx, "web", "v2", verdict(models.AnalysisOutcome_FAIL, "v2"))).To(Succeed())
		snap, err := b.store.ConvergenceSnapshot(b.ctx, []string{"web"})
		Expect(err).NotTo(HaveOccurred())
		held := snap.Rollouts[0]
		held.State, held.Reason = models.RolloutStatus_HELD, "held: verdict FAIL"
		held.Judgement = proto.Clone(held.Judgement).(*models.RolloutJudgement)
		held.Judgement.HeldAt = b.clock.Now().UnixNano()
		_, err = b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{{
			ProcessGuid: "web", ExpectModificationIndex: held.ModificationIndex, ExpectActiveDefinitionID: "v2", Record: held,
		}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(status().GetState()).To(Equal(models.RolloutStatus_HELD))
		Expect(b.store.RecordVerdict(b.ctx, "web", "v2", verdict(models.AnalysisOutcome_PASS, "v2"))).To(HaveErrorType(models.Error_ResourceConflict),
			"a HELD rollout is not judged")

		b.clock.Advance(time.Minute)
		st, err := b.store.ResumeRollout(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(st.GetState()).To(Equal(models.RolloutStatus_PROGRESSING))
		Expect(st.GetJudgement().GetHeldAt()).To(BeZero())
		Expect(st.GetJudgement().GetVerdictsFrom()).To(Equal(b.clock.Now().UnixNano()))
		Expect(st.GetJudgement().ActingVerdict("v2")).To(BeNil())
		Expect(newestOperation(b, "web").History[0].Message).To(HavePrefix("resumed the rollout held since "))
	})
})
