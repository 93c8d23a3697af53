package models_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("DecideStage", func() {
	// The worked example in rollout_stage.go: hours after a midnight.
	midnight := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	at := func(hours float64) int64 { return midnight + int64(hours*float64(time.Hour)) }
	fivePerSix := &models.SafeRate{Percent: 5, PerMs: (6 * time.Hour).Milliseconds()}

	holding := models.StageRecord{
		State: models.RolloutStatus_HOLDING, Reason: "holding at 6.25% (1 of 16 on v2): promote to go on",
		DefinitionID: "v2", ProgressAt: at(7.5),
		Stage: &models.RolloutStage{TargetPercent: 6.25, SafeRate: fivePerSix, Seed: "s", WatchingSince: at(0)},
	}
	promoteLine := "promoted from 6.25% to 12.5% at 5% per 6h0m0s"
	// 1. promoted at 10:00
	promoted := models.StageRecord{
		State: models.RolloutStatus_PROGRESSING, Reason: "staged rollout to v2 " + promoteLine,
		DefinitionID: "v2", ProgressAt: at(10),
		Stage: &models.RolloutStage{PriorPercent: 6.25, TargetPercent: 12.5, SafeRate: fivePerSix, Seed: "s",
			PhaseStartedAt: at(10), WatchingSince: at(10)},
	}
	// 2. paused by alice at 11:00
	paused := promoted
	paused.Stage = &models.RolloutStage{PriorPercent: 6.25, TargetPercent: 12.5, SafeRate: fivePerSix, Seed: "s",
		PhaseStartedAt: at(10), WatchingSince: at(10), Paused: true, PausedAt: at(11), PauseReason: "paused by alice"}
	// 3. resumed at 13:00
	resumed := promoted
	resumed.ProgressAt = at(12)
	resumed.Stage = &models.RolloutStage{PriorPercent: 6.25, TargetPercent: 12.5, SafeRate: fivePerSix, Seed: "s",
		PhaseStartedAt: at(10), WatchingSince: at(13), PausedNanos: int64(2 * time.Hour)}
	// 4. a member crashed at 14:00
	crash := "paused: v2 instance 3 crashed"
	crashPaused := resumed
	crashPaused.Reason = crash
	crashPaused.Stage = &models.RolloutStage{PriorPercent: 6.25, TargetPercent: 12.5, SafeRate: fivePerSix, Seed: "s",
		PhaseStartedAt: at(10), WatchingSince: at(13), PausedNanos: int64(2 * time.Hour), Paused: true, PausedAt: at(14), PauseReason: crash}

	promote := func(to float64, rate *models.SafeRate) models.StageCommand {
		return models.StageCommand{Kind: models.StagePromote, ToPercent: to, Rate: rate}
	}
	pause := func(by string) models.StageCommand { return models.StageCommand{Kind: models.StagePause, By: by} }
	resume := models.StageCommand{Kind: models.StageResume}
	crashPause := models.StageCommand{Kind: models.StageCrashPause, Reason: crash}

	DescribeTable("the record after and the operation's line (the worked example)",
		func(before models.StageRecord, cmd models.StageCommand, now int64, want models.StageRecord, line string) {
			kept := proto.Clone(before.Stage)
			got, gotLine, err := models.DecideStage("web", "v2", before, cmd, now)
			Expect(err).NotTo(HaveOccurred())
			Expect(gotLine).To(Equal(line))
			Expect(proto.Equal(got.Stage, want.Stage)).To(BeTrue(), "stage %v, want %v", got.Stage, want.Stage)
			got.Stage, want.Stage = nil, nil
			Expect(got).To(Equal(want))
			Expect(proto.Equal(before.Stage, kept)).To(BeTrue(), "the stage before is not changed in place")
		},
		Entry("1. promote from HOLDING: a new phase from the share that stands", holding, promote(12.5, fivePerSix), at(10), promoted, promoteLine),
		Entry("2. pause: the stage only, by whom", promoted, pause("alice"), at(11), paused, "paused by alice"),
		Entry("3. resume: the paused time out of the share and the deadline", paused, resume, at(13), resumed, "resumed after 2h0m0s"),
		Entry("4. crash pause: the record says why", resumed, crashPause, at(14), crashPaused, crash),
		Entry("4. resume after the crash pause: the record no longer says paused", crashPaused, resume, at(15),
			func() models.StageRecord {
				r := resumed
				r.ProgressAt = at(13)
				r.Reason = "staged rollout to v2 resumed after 1h0m0s"
				r.Stage = proto.Clone(resumed.Stage).(*models.RolloutStage)
				r.Stage.PausedNanos, r.Stage.WatchingSince = int64(3*time.Hour), at(15)
				return r
			}(), "resumed after 1h0m0s"),
		Entry("promote at once, while paused: not paused any more",
			paused, promote(50, nil), at(12),
			models.StageRecord{
				State: models.RolloutStatus_PROGRESSING, Reason: "staged rollout to v2 promoted from 7.0834% to 50% at once",
				DefinitionID: "v2", ProgressAt: at(12),
				Stage: &models.RolloutStage{PriorPercent: 6.25 + 5.0/6, TargetPercent: 50, Seed: "s", PhaseStartedAt: at(12), WatchingSince: at(12)},
			},
			"promoted from 7.0834% to 50% at once"),
		Entry("pause by nobody known", promoted, pause(""), at(11),
			func() models.StageRecord {
				r := paused
				r.Stage = proto.Clone(paused.Stage).(*models.RolloutStage)
				r.Stage.PauseReason = "paused"
				return r
			}(), "paused"),
		Entry("resume on a clock that stepped back: no pause", paused, resume, at(10.5),
			func() models.StageRecord {
				r := promoted
				r.Stage = proto.Clone(promoted.Stage).(*models.RolloutStage)
				r.Stage.WatchingSince = at(10.5)
				return r
			}(), "resumed after 0s"),
	)

	DescribeTable("refusals: nothing changes",
		func(before models.StageRecord, cmd models.StageCommand, errType models.Error_Type, message string) {
			got, line, err := models.DecideStage("web", "v2", before, cmd, at(12))
			Expect(models.IsErrorType(err, errType)).To(BeTrue(), "error %v", err)
			Expect(err).To(MatchError(ContainSubstring(message)))
			Expect(got).To(Equal(models.StageRecord{}))
			Expect(line).To(BeEmpty())
		},
		Entry("1. a promote below the share that stands", holding, promote(5, nil),
			models.Error_InvalidRequest, "to_percent: must not be below the share that stands, 6.25 (got 5)"),
		Entry("2. a second pause", paused, pause("bob"),
			models.Error_InvalidStateTransition, `desired_lrp "web": its staged rollout is paused already (paused by alice)`),
		Entry("a crash pause of a paused phase", paused, crashPause,
			models.Error_InvalidStateTransition, "paused already"),
		Entry("a resume of a running phase", promoted, resume,
			models.Error_InvalidStateTransition, `desired_lrp "web": its staged rollout is not paused`),
		Entry("no record", models.StageRecord{}, pause(""),
			models.Error_InvalidStateTransition, `desired_lrp "web" has no staged rollout under way: it has no rollout`),
		Entry("not staged", models.StageRecord{State: models.RolloutStatus_PROGRESSING, DefinitionID: "v2"}, resume,
			models.Error_InvalidStateTransition, "its rollout to v2 is not staged (an update with staged starts one)"),
		Entry("staged to a definition no longer active", func() models.StageRecord { r := promoted; r.DefinitionID = "v1"; return r }(), pause(""),
			models.Error_InvalidStateTransition, "its staged rollout is to v1, but the active definition is v2"),
		Entry("ended", func() models.StageRecord { r := promoted; r.State = models.RolloutStatus_FAILED; return r }(), promote(100, nil),
			models.Error_InvalidStateTransition, "its staged rollout to v2 is FAILED, not PROGRESSING or HOLDING"),
	)

	DescribeTable("StageUnderWay",
		func(rec models.StageRecord, under bool) {
			Expect(models.StageUnderWay(rec, "v2")).To(Equal(under))
		},
		Entry("HOLDING", holding, true),
		Entry("PROGRESSING and paused", paused, true),
		Entry("COMPLETE", func() models.StageRecord { r := promoted; r.State = models.RolloutStatus_COMPLETE; return r }(), false),
		Entry("not staged", models.StageRecord{State: models.RolloutStatus_PROGRESSING, DefinitionID: "v2"}, false),
		Entry("to another definition", func() models.StageRecord { r := holding; r.DefinitionID = "v3"; return r }(), false),
	)

	It("writes shares and rates for people", func() {
		Expect(models.FormatPercent(12.5)).To(Equal("12.5"))
		Expect(models.FormatPercent(100.0/3)).To(Equal("33.3334"), "rounded up")
		Expect(models.DescribeRate(fivePerSix)).To(Equal("at 5% per 6h0m0s"))
		Expect(models.DescribeRate(nil)).To(Equal("at once"))
	})
})

var _ = Describe("DecideStage resuming a HELD rollout (resumeHeld's worked example)", func() {
	at := func(hh, mm int) int64 { return time.Date(2026, 11, 29, hh, mm, 0, 0, time.UTC).UnixNano() }
	verdict := &models.AnalysisVerdict{Outcome: models.AnalysisOutcome_FAIL, At: at(12, 5), DefinitionId: "v2"}
	held := models.StageRecord{
		State: models.RolloutStatus_HELD, Reason: "held: FAIL at 12:05:00 (rolling, v2 against v1): errors …",
		DefinitionID: "v2", ProgressAt: at(12, 0),
		Judgement: &models.RolloutJudgement{OnFailure: "hold", HeldAt: at(12, 5), VerdictsFrom: at(12, 0), Verdicts: []*models.AnalysisVerdict{verdict}},
	}

	It("goes on PROGRESSING, its deadline from now, the verdicts before now no longer acting", func() {
		kept := proto.Clone(held.Judgement)
		after, line, err := models.DecideStage("web", "v2", held, models.StageCommand{Kind: models.StageResume}, at(12, 30))
		Expect(err).NotTo(HaveOccurred())
		Expect(line).To(Equal("resumed the rollout held since 12:05:00; judged again from now"))
		Expect(after.State).To(Equal(models.RolloutStatus_PROGRESSING))
		Expect(after.ProgressAt).To(Equal(at(12, 30)))
		Expect(after.Reason).To(Equal("resumed: rolling to v2"))
		Expect(after.Judgement.GetHeldAt()).To(BeZero())
		Expect(after.Judgement.GetVerdictsFrom()).To(Equal(at(12, 30)))
		Expect(after.Judgement.ActingVerdict("v2")).To(BeNil(), "the verdict that held it does not act again")
		Expect(after.Judgement.GetVerdicts()).To(HaveLen(1), "the verdicts are kept")
		Expect(proto.Equal(held.Judgement, kept)).To(BeTrue(), "the judgement before is not changed in place")
	})

	It("is refused for a HELD rollout of a definition that is no longer active", func() {
		_, _, err := models.DecideStage("web", "v3", held, models.StageCommand{Kind: models.StageResume}, at(12, 30))
		Expect(models.ConvertError(err).GetType()).To(Equal(models.Error_InvalidStateTransition))
	})
})
