package models_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("DecideRolloutEdit", func() {
	// The worked example in rollout_edit.go: minutes after noon.
	noon := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC).UnixNano()
	at := func(minutes float64) int64 { return noon + int64(minutes*float64(time.Minute)) }
	tenPerMinute := &models.SafeRate{Percent: 10, PerMs: time.Minute.Milliseconds()}
	twentyPerMinute := &models.SafeRate{Percent: 20, PerMs: time.Minute.Milliseconds()}

	strategy := &models.UpdateStrategy{MaxSurge: "1", MinReadyMs: 10_000, AutoRevert: true}
	progressing := models.StageRecord{
		State: models.RolloutStatus_PROGRESSING, Reason: "rolling from v1 to v2", DefinitionID: "v2", ProgressAt: at(0),
		Stage: &models.RolloutStage{TargetPercent: 50, SafeRate: tenPerMinute, Seed: "s", PhaseStartedAt: at(0), WatchingSince: at(0)},
	}
	// 2. the rate edited at 12:04
	rateEdited := progressing
	rateEdited.Stage = &models.RolloutStage{PriorPercent: 40, TargetPercent: 50, SafeRate: twentyPerMinute, Seed: "s",
		PhaseStartedAt: at(4), WatchingSince: at(0)}
	// 3. holding at 50% since 12:04:30
	holding := rateEdited
	holding.State, holding.Reason, holding.ProgressAt = models.RolloutStatus_HOLDING, "holding at 50% (3 of 6 on v2): promote to go on", at(4.5)
	targetEdited := holding
	targetEdited.State, targetEdited.ProgressAt = models.RolloutStatus_PROGRESSING, at(6)
	targetEdited.Reason = "staged rollout to v2 edited: growing from 50% to 100% at 20% per 1m0s"
	targetEdited.Stage = &models.RolloutStage{PriorPercent: 50, TargetPercent: 100, SafeRate: twentyPerMinute, Seed: "s",
		PhaseStartedAt: at(6), WatchingSince: at(0)}
	unstaged := models.StageRecord{State: models.RolloutStatus_PROGRESSING, Reason: "rolling from v1 to v2", DefinitionID: "v2", ProgressAt: at(0)}
	reverting := models.StageRecord{State: models.RolloutStatus_REVERTED, DefinitionID: "v1", ProgressAt: at(0)}

	withStrategy := func(edit func(*models.UpdateStrategy)) *models.UpdateStrategy {
		s := proto.Clone(strategy).(*models.UpdateStrategy)
		edit(s)
		return s
	}

	DescribeTable("the strategy and record after, and the operation's line",
		func(active string, before models.StageRecord, req *models.EditRolloutRequest, now int64,
			wantStrategy *models.UpdateStrategy, want models.StageRecord, line string,
		) {
			Expect(req.Validate()).To(Succeed())
			keptStrategy, keptStage := proto.Clone(strategy), proto.Clone(before.Stage)
			got, err := models.DecideRolloutEdit("web", active, strategy, before, req, now)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Line).To(Equal(line))
			Expect(proto.Equal(got.Strategy, wantStrategy)).To(BeTrue(), "strategy %v, want %v", got.Strategy, wantStrategy)
			Expect(proto.Equal(got.Record.Stage, want.Stage)).To(BeTrue(), "stage %v, want %v", got.Record.Stage, want.Stage)
			got.Record.Stage, want.Stage = nil, nil
			Expect(got.Record).To(Equal(want))
			Expect(proto.Equal(strategy, keptStrategy)).To(BeTrue(), "the strategy before is not changed in place")
			Expect(proto.Equal(before.Stage, keptStage)).To(BeTrue(), "the stage before is not changed in place")
		},
		Entry("1. surge and min_ready: the strategy only, the phase untouched", "v2", progressing,
			&models.EditRolloutRequest{ProcessGuid: "web", MaxSurge: proto.String("3"), MinReadyMs: proto.Int64(0)}, at(3),
			withStrategy(func(s *models.UpdateStrategy) { s.MaxSurge, s.MinReadyMs = "3", 0 }), progressing,
			"max_surge 1 → 3; min_ready 10s → 0s"),
		Entry("2. a new rate goes on from the share that stands", "v2", progressing,
			&models.EditRolloutRequest{ProcessGuid: "web", SafeRate: twentyPerMinute}, at(4),
			strategy, rateEdited,
			"safe_rate at 10% per 1m0s → at 20% per 1m0s; from the share that stands, 40%"),
		Entry("3. a target above a HOLDING share grows again, the deadline from now", "v2", holding,
			&models.EditRolloutRequest{ProcessGuid: "web", TargetPercent: proto.Float64(100)}, at(6),
			strategy, targetEdited,
			"target 50% → 100%; from the share that stands, 50%"),
		Entry("a target equal to a HOLDING share: still HOLDING", "v2", holding,
			&models.EditRolloutRequest{ProcessGuid: "web", TargetPercent: proto.Float64(50)}, at(6),
			strategy, func() models.StageRecord {
				r := holding
				r.Stage = &models.RolloutStage{PriorPercent: 50, TargetPercent: 50, SafeRate: twentyPerMinute, Seed: "s",
					PhaseStartedAt: at(6), WatchingSince: at(0)}
				return r
			}(),
			"target 50% → 50%; from the share that stands, 50%"),
		Entry("a paused phase stays paused, from now, at the share it stood at", "v2",
			func() models.StageRecord {
				r := progressing
				r.Stage = proto.Clone(progressing.Stage).(*models.RolloutStage)
				r.Stage.Paused, r.Stage.PausedAt, r.Stage.PauseReason, r.Stage.PausedNanos = true, at(2), "paused by alice", int64(time.Minute)
				return r
			}(),
			&models.EditRolloutRequest{ProcessGuid: "web", TargetPercent: proto.Float64(80), SafeRate: twentyPerMinute}, at(5),
			strategy, func() models.StageRecord {
				r := progressing
				// Paused at 12:02 after a minute paused before: 10% a
				// minute for one minute.
				r.Stage = &models.RolloutStage{PriorPercent: 10, TargetPercent: 80, SafeRate: twentyPerMinute, Seed: "s",
					PhaseStartedAt: at(5), WatchingSince: at(0), Paused: true, PausedAt: at(5), PauseReason: "paused by alice"}
				return r
			}(),
			"target 50% → 80%; safe_rate at 10% per 1m0s → at 20% per 1m0s; from the share that stands, 10%"),
		Entry("an unstaged rollout: every strategy field, defaults named", "v2", unstaged,
			&models.EditRolloutRequest{ProcessGuid: "web", MaxSurge: proto.String("100%"), MaxUnavailable: proto.String("1"),
				MinReadyMs: proto.Int64(500), ProgressDeadlineMs: proto.Int64(60_000)}, at(1),
			withStrategy(func(s *models.UpdateStrategy) {
				s.MaxSurge, s.MaxUnavailable, s.MinReadyMs, s.ProgressDeadlineMs = "100%", "1", 500, 60_000
			}), unstaged,
			"max_surge 1 → 100%; max_unavailable default → 1; min_ready 10s → 500ms; progress_deadline default (10m0s) → 1m0s"),
		Entry("a revert still moving takes strategy edits", "v1", reverting,
			&models.EditRolloutRequest{ProcessGuid: "web", MaxSurge: proto.String("")}, at(1),
			withStrategy(func(s *models.UpdateStrategy) { s.MaxSurge = "" }), reverting,
			"max_surge 1 → default"),
	)

	DescribeTable("refusals: nothing changes",
		func(before models.StageRecord, req *models.EditRolloutRequest, errType models.Error_Type, message string) {
			Expect(req.Validate()).To(Succeed())
			got, err := models.DecideRolloutEdit("web", "v2", strategy, before, req, at(6))
			Expect(models.IsErrorType(err, errType)).To(BeTrue(), "error %v", err)
			Expect(models.ConvertError(err).GetMessage()).To(Equal(message))
			Expect(got).To(Equal(models.RolloutEdit{}))
		},
		Entry("4. a target below the share that stands", holding,
			&models.EditRolloutRequest{ProcessGuid: "web", MaxSurge: proto.String("2"), TargetPercent: proto.Float64(40)},
			models.Error_InvalidRequest, "target_percent: must not be below the share that stands, 50 (got 40)"),
		Entry("5. a COMPLETE rollout", func() models.StageRecord {
			r := unstaged
			r.State, r.FinishedAt = models.RolloutStatus_COMPLETE, at(5)
			return r
		}(), &models.EditRolloutRequest{ProcessGuid: "web", MaxSurge: proto.String("2")},
			models.Error_InvalidStateTransition,
			`desired_lrp "web": its rollout is COMPLETE; only a rollout PROGRESSING, HOLDING or REVERTED and still moving can be edited`),
		Entry("a FAILED rollout", func() models.StageRecord {
			r := unstaged
			r.State, r.FinishedAt = models.RolloutStatus_FAILED, at(5)
			return r
		}(), &models.EditRolloutRequest{ProcessGuid: "web", ProgressDeadlineMs: proto.Int64(3_600_000)},
			models.Error_InvalidStateTransition,
			`desired_lrp "web": its rollout is FAILED; only a rollout PROGRESSING, HOLDING or REVERTED and still moving can be edited`),
		Entry("a revert that is back", func() models.StageRecord {
			r := reverting
			r.FinishedAt = at(5)
			return r
		}(), &models.EditRolloutRequest{ProcessGuid: "web", MaxSurge: proto.String("2")},
			models.Error_InvalidStateTransition,
			`desired_lrp "web": its rollout is REVERTED and back on its healthy definition; only a rollout PROGRESSING, HOLDING or REVERTED and still moving can be edited`),
		Entry("no rollout", models.StageRecord{}, &models.EditRolloutRequest{ProcessGuid: "web", MaxSurge: proto.String("2")},
			models.Error_InvalidStateTransition, `desired_lrp "web" has no rollout to edit`),
		Entry("a target on an unstaged rollout", unstaged,
			&models.EditRolloutRequest{ProcessGuid: "web", TargetPercent: proto.Float64(50)},
			models.Error_InvalidStateTransition,
			`target_percent: desired_lrp "web" has no staged rollout under way: its rollout to v2 is not staged (an update with staged starts one)`),
		Entry("a rate on a revert", reverting,
			&models.EditRolloutRequest{ProcessGuid: "web", MaxSurge: proto.String("2"), SafeRate: tenPerMinute},
			models.Error_InvalidStateTransition,
			`safe_rate: desired_lrp "web" has no staged rollout under way: its rollout to v1 is not staged (an update with staged starts one)`),
	)
})

var _ = DescribeTable("EditRolloutRequest validation: the strategy's and the phase's own rules, the field named",
	func(req *models.EditRolloutRequest, want string) {
		expectValidation(req, want)
	},
	Entry("a surge", &models.EditRolloutRequest{ProcessGuid: "g", MaxSurge: proto.String("3")}, ""),
	Entry("a target and a rate", &models.EditRolloutRequest{ProcessGuid: "g", TargetPercent: proto.Float64(100),
		SafeRate: &models.SafeRate{Percent: 5, PerMs: 1000}}, ""),
	Entry("without a guid", &models.EditRolloutRequest{MaxSurge: proto.String("3")}, "process_guid: required"),
	Entry("nothing to change", &models.EditRolloutRequest{ProcessGuid: "g"},
		"max_surge, max_unavailable, min_ready_ms, progress_deadline_ms, target_percent, safe_rate: at least one is required"),
	Entry("a surge that is no count", &models.EditRolloutRequest{ProcessGuid: "g", MaxSurge: proto.String("1.5")},
		`max_surge: must be a count like "2" or a percent like "25%" (0-100%), got "1.5"`),
	Entry("an unavailability over 100%", &models.EditRolloutRequest{ProcessGuid: "g", MaxUnavailable: proto.String("150%")},
		`max_unavailable: must be a count like "2" or a percent like "25%" (0-100%), got "150%"`),
	Entry("a negative min_ready", &models.EditRolloutRequest{ProcessGuid: "g", MinReadyMs: proto.Int64(-1)},
		"min_ready_ms: must not be negative, got -1"),
	Entry("a deadline over a day", &models.EditRolloutRequest{ProcessGuid: "g", ProgressDeadlineMs: proto.Int64(86_400_001)},
		"progress_deadline_ms: must be at most 86400000 (24h0m0s), got 86400001"),
	Entry("a target of 0", &models.EditRolloutRequest{ProcessGuid: "g", TargetPercent: proto.Float64(0)},
		"target_percent: must be above 0 and at most 100, got 0"),
	Entry("a rate of no period", &models.EditRolloutRequest{ProcessGuid: "g", SafeRate: &models.SafeRate{Percent: 5}},
		"safe_rate.per_ms: must be above 0, got 0"),
)
