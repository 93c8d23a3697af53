package convergence_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("GovernRollouts", func() {
	const (
		progressing = models.RolloutStatus_PROGRESSING
		holding     = models.RolloutStatus_HOLDING
		held        = models.RolloutStatus_HELD
		reverted    = models.RolloutStatus_REVERTED
		complete    = models.RolloutStatus_COMPLETE
		failed      = models.RolloutStatus_FAILED
	)
	// waiting is a record under way that was never admitted, started at
	// minute started; admitted one admitted at minute 1.
	waiting := func(guid string, state models.RolloutStatus_State, started int64) convergence.RolloutRow {
		return convergence.RolloutRow{ProcessGuid: guid, State: state, StartedAt: started}
	}
	admitted := func(guid string, state models.RolloutStatus_State) convergence.RolloutRow {
		return convergence.RolloutRow{ProcessGuid: guid, State: state, StartedAt: 1, AdmittedAt: 1}
	}
	fast := func(r convergence.RolloutRow) convergence.RolloutRow {
		r.Fast = true
		return r
	}
	finished := func(r convergence.RolloutRow) convergence.RolloutRow {
		r.FinishedAt = 9
		return r
	}
	admit := convergence.RolloutTurn{Admit: true}
	queued := func(position, of int32) convergence.RolloutTurn {
		return convergence.RolloutTurn{Position: position, Queued: of}
	}

	DescribeTable("admits in turn, at most limit in flight",
		func(limit int32, records []convergence.RolloutRow, want map[string]convergence.RolloutTurn) {
			Expect(convergence.GovernRollouts(records, limit)).To(Equal(want))
		},
		Entry("the worked example: holders count, a fast rollback jumps the queue, the rest wait first in first out", int32(2),
			[]convergence.RolloutRow{
				admitted("a", progressing), waiting("b", progressing, 1), waiting("c", progressing, 2),
				fast(waiting("d", progressing, 3)), admitted("e", holding), admitted("f", complete),
			},
			map[string]convergence.RolloutTurn{"d": admit, "b": queued(1, 2), "c": queued(2, 2)}),
		Entry("the worked example once a and d are done: b is admitted, c moves up", int32(2),
			[]convergence.RolloutRow{
				admitted("a", complete), waiting("b", progressing, 1), waiting("c", progressing, 2),
				finished(admitted("d", reverted)), admitted("e", holding),
			},
			map[string]convergence.RolloutTurn{"b": admit, "c": queued(1, 1)}),
		Entry("no limit: every waiting rollout is admitted", int32(0),
			[]convergence.RolloutRow{admitted("a", progressing), waiting("b", progressing, 1), waiting("c", progressing, 2)},
			map[string]convergence.RolloutTurn{"b": admit, "c": admit}),
		Entry("room for two: the two first in are admitted, in start order whatever the input order", int32(2),
			[]convergence.RolloutRow{waiting("c", progressing, 3), waiting("a", progressing, 1), waiting("b", progressing, 2)},
			map[string]convergence.RolloutTurn{"a": admit, "b": admit, "c": queued(1, 1)}),
		Entry("same start: by process guid", int32(1),
			[]convergence.RolloutRow{waiting("y", progressing, 5), waiting("x", progressing, 5)},
			map[string]convergence.RolloutTurn{"x": admit, "y": queued(1, 1)}),
		Entry("a lowered limit never stops what was admitted: 3 hold slots of 1, none admitted", int32(1),
			[]convergence.RolloutRow{admitted("a", progressing), admitted("b", progressing), admitted("c", progressing), waiting("d", progressing, 1)},
			map[string]convergence.RolloutTurn{"d": queued(1, 1)}),
		Entry("HELD and reverting rollouts hold their slots; FAILED, COMPLETE and finished reverts do not", int32(2),
			[]convergence.RolloutRow{
				admitted("a", held), admitted("b", reverted), admitted("c", failed), admitted("d", complete),
				finished(admitted("e", reverted)), waiting("f", progressing, 1),
			},
			map[string]convergence.RolloutTurn{"f": queued(1, 1)}),
		Entry("an automatic revert never waits, even with every slot taken", int32(1),
			[]convergence.RolloutRow{admitted("a", progressing), waiting("b", progressing, 1), waiting("c", reverted, 2)},
			map[string]convergence.RolloutTurn{"c": admit, "b": queued(1, 1)}),
		Entry("a rollout that is not under way wants no slot", int32(1),
			[]convergence.RolloutRow{waiting("a", failed, 1), waiting("b", complete, 1), waiting("c", models.RolloutStatus_NONE, 1)},
			map[string]convergence.RolloutTurn{}),
	)

	It("says where a queued rollout waits", func() {
		Expect(convergence.QueueReason(convergence.RolloutTurn{Position: 3, Queued: 7}, 10)).
			To(Equal("queued: position 3 of 7 (max_rollouts_in_flight 10)"))
	})

	It("lets a rollout that supersedes one holding a slot keep it, and no other", func() {
		Expect(admitted("a", progressing).SupersededAdmission()).To(BeEquivalentTo(1))
		Expect(admitted("a", held).SupersededAdmission()).To(BeEquivalentTo(1))
		Expect(admitted("a", complete).SupersededAdmission()).To(BeZero(), "the LRP was not moving")
		Expect(waiting("a", progressing, 1).SupersededAdmission()).To(BeZero(), "a queued rollout's successor queues again")
	})

	It("shows the queue's reason first while queued", func() {
		r := convergence.RolloutRow{Reason: "rolling from v1 to v2", QueuePosition: 3, QueueReason: "queued: position 3 of 7 (max_rollouts_in_flight 10)"}
		Expect(r.StatusReason()).To(Equal("queued: position 3 of 7 (max_rollouts_in_flight 10); rolling from v1 to v2"))
		r.QueuePosition, r.QueueReason = 0, ""
		Expect(r.StatusReason()).To(Equal("rolling from v1 to v2"))
	})

	It("counts the progress deadline from the later of progress and admission", func() {
		r := convergence.RolloutRow{ProgressAt: 5, AdmittedAt: 8}
		Expect(r.DeadlineFrom()).To(Equal(int64(8)))
		r.ProgressAt = 12
		Expect(r.DeadlineFrom()).To(Equal(int64(12)))
	})
})
