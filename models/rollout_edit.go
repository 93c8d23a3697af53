package models

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
)

// Edits in flight: an operator changes the limits of a rollout under way
// (EditRolloutRequest, cork rollout edit) without restarting it. The edit
// changes two stored things and no instance: the LRP's update_strategy
// (max_surge, max_unavailable, min_ready_ms, progress_deadline_ms), which
// every pass resolves afresh (ResolveRolloutStrategy), and, for a staged
// rollout, its phase (target_percent, safe_rate). Instances already on the
// new definition stay; the next pass plans with the new limits.
//
// The rules, decided by DecideRolloutEdit:
//
//  1. Only a rollout under way may be edited (RolloutUnderWay: PROGRESSING,
//     HOLDING, or REVERTED while its instances still go back); otherwise
//     InvalidStateTransition naming the state.
//  2. target_percent and safe_rate need a staged phase under way
//     (StageUnderWay); otherwise InvalidStateTransition, its message
//     starting with the field. A revert is never staged.
//  3. A new target below the share that stands is refused (InvalidRequest
//     on target_percent), as a promote's is: instances on the new
//     definition are never moved back (DESIGN §10, invariant 9), and a
//     target below what already runs could only mean that.
//  4. A phase edit goes on from the share that stands: the phase's prior
//     becomes the share now (StageShare), its start now, its paused time
//     0 (a paused phase stays paused, from now). So the share does not
//     jump, whether the rate grew or the target rose above a share that
//     had stopped at the old one. The seed and the crash watch stay.
//  5. A HOLDING phase whose target rises above its share goes on growing:
//     PROGRESSING, its progress deadline counted from now, as after a
//     promote. Any other state stays as it is.
//  6. The progress deadline counts from the rollout's last progress, as
//     always: a deadline shortened below the time since then fails the
//     rollout on the next pass.
//
// Worked example: hello, 6 instances, v1 → v2 with max_surge "1",
// min_ready 10s, staged to 50% at 10% per minute since 12:00.
//
//  1. At 12:03 the share is 30% (allowed 2). Edit {max_surge "3",
//     min_ready_ms 0}: the strategy becomes max_surge "3", min_ready 0s,
//     the phase is untouched; the line is `max_surge 1 → 3; min_ready
//     10s → 0s`. The next pass may run 3 replacements at once.
//  2. At 12:04 (share 40%), edit {safe_rate {20, 60000}}: the phase starts
//     over from prior 40 at 12:04, to 50 at 20% per minute: at 12:04:15
//     the share is 45%. Kept from 12:00 at the new rate it would have been
//     min(50, 20 × 4) = 50% at 12:04 at once: a jump from 40%.
//  3. From 12:04:30 the phase HOLDs at 50% (3 of 6). Edit {target_percent
//     100} at 12:06: prior 50, start 12:06, PROGRESSING again, the
//     deadline counted from 12:06.
//  4. Edit {target_percent 40} is refused: below the 50% that stands.
//  5. After the rollout COMPLETEs, any edit is refused: "its rollout is
//     COMPLETE".

// editFields names the fields an edit may set, for the error of one that
// sets none.
const editFields = "max_surge, max_unavailable, min_ready_ms, progress_deadline_ms, target_percent, safe_rate"

// changesStrategy reports whether r sets a field of the update strategy.
func (r *EditRolloutRequest) changesStrategy() bool {
	return r.MaxSurge != nil || r.MaxUnavailable != nil || r.MinReadyMs != nil || r.ProgressDeadlineMs != nil
}

// changesStage reports whether r sets a field of the staged phase.
func (r *EditRolloutRequest) changesStage() bool {
	return r.TargetPercent != nil || r.SafeRate != nil
}

// strategyFields is r's strategy fields as an UpdateStrategy (unset ones
// zero, which validate), so that they are checked by the strategy's own
// rules under their own names.
func (r *EditRolloutRequest) strategyFields() *UpdateStrategy {
	return &UpdateStrategy{
		MaxSurge: r.GetMaxSurge(), MaxUnavailable: r.GetMaxUnavailable(),
		MinReadyMs: r.GetMinReadyMs(), ProgressDeadlineMs: r.GetProgressDeadlineMs(),
	}
}

// RolloutEdit is what an edit decides: the LRP's update strategy and the
// rollout record afterwards, and the line its EDIT operation records.
type RolloutEdit struct {
	// Strategy is the LRP's strategy after the edit: before's with the
	// edit's fields set. A new message; before's is not changed.
	Strategy *UpdateStrategy
	// Record is the rollout record after the edit.
	Record StageRecord
	// Line says what changed, from and to: "max_surge 1 → 3; target 50% →
	// 100%".
	Line string
}

// DecideRolloutEdit decides the edit req (validated: Validate) on the LRP
// processGuid, whose active definition is activeID and update strategy
// strategy (nil: every default), with the rollout record rec, at now (Unix
// nanoseconds). See the rules and the worked example above. A refusal is a
// models.Error, and nothing changes.
func DecideRolloutEdit(processGuid, activeID string, strategy *UpdateStrategy, rec StageRecord, req *EditRolloutRequest, now int64) (RolloutEdit, error) {
	if !RolloutUnderWay(rec.State, rec.FinishedAt) {
		return RolloutEdit{}, editRefusal(processGuid, rec)
	}
	var lines []string
	after := &UpdateStrategy{}
	if strategy != nil {
		after = proto.Clone(strategy).(*UpdateStrategy)
	}
	if req.MaxSurge != nil {
		lines = append(lines, "max_surge "+describeCount(after.GetMaxSurge())+" → "+describeCount(req.GetMaxSurge()))
		after.MaxSurge = req.GetMaxSurge()
	}
	if req.MaxUnavailable != nil {
		lines = append(lines, "max_unavailable "+describeCount(after.GetMaxUnavailable())+" → "+describeCount(req.GetMaxUnavailable()))
		after.MaxUnavailable = req.GetMaxUnavailable()
	}
	if req.MinReadyMs != nil {
		lines = append(lines, "min_ready "+Millis(after.GetMinReadyMs()).String()+" → "+Millis(req.GetMinReadyMs()).String())
		after.MinReadyMs = req.GetMinReadyMs()
	}
	if req.ProgressDeadlineMs != nil {
		lines = append(lines, "progress_deadline "+describeDeadline(after.GetProgressDeadlineMs())+" → "+describeDeadline(req.GetProgressDeadlineMs()))
		after.ProgressDeadlineMs = req.GetProgressDeadlineMs()
	}
	record := rec
	if req.changesStage() {
		stageLines, next, err := editStage(processGuid, activeID, rec, req, now)
		if err != nil {
			return RolloutEdit{}, err
		}
		lines = append(lines, stageLines...)
		record = next
	}
	return RolloutEdit{Strategy: after, Record: record, Line: strings.Join(lines, "; ")}, nil
}

// editStage is rules 2–5: the record after req's target_percent and
// safe_rate, and the lines saying what changed.
func editStage(processGuid, activeID string, rec StageRecord, req *EditRolloutRequest, now int64) ([]string, StageRecord, error) {
	field := "safe_rate"
	if req.TargetPercent != nil {
		field = "target_percent"
	}
	if err := stageRefusal(processGuid, activeID, rec); err != nil {
		return nil, StageRecord{}, NewError(Error_InvalidStateTransition, "%s: %s", field, ConvertError(err).GetMessage())
	}
	current := rec.Stage
	share := StageShare(current, now)
	var lines []string
	stage := proto.Clone(current).(*RolloutStage)
	if req.TargetPercent != nil {
		if req.GetTargetPercent() < share {
			return nil, StageRecord{}, ErrInvalidField("target_percent", "must not be below the share that stands, "+
				FormatPercent(share)+" (got "+strconv.FormatFloat(req.GetTargetPercent(), 'f', -1, 64)+")")
		}
		lines = append(lines, "target "+FormatPercent(current.GetTargetPercent())+"% → "+FormatPercent(req.GetTargetPercent())+"%")
		stage.TargetPercent = req.GetTargetPercent()
	}
	if req.SafeRate != nil {
		lines = append(lines, "safe_rate "+DescribeRate(current.GetSafeRate())+" → "+DescribeRate(req.GetSafeRate()))
		stage.SafeRate = proto.Clone(req.GetSafeRate()).(*SafeRate)
	}
	// Rule 4: the phase goes on from the share that stands.
	stage.PriorPercent = share
	stage.PhaseStartedAt = now
	stage.PausedNanos = 0
	if stage.GetPaused() {
		stage.PausedAt = now
	}
	lines = append(lines, "from the share that stands, "+FormatPercent(share)+"%")
	after := rec
	after.Stage = stage
	if rec.State == RolloutStatus_HOLDING && stage.GetTargetPercent() > share {
		// Rule 5.
		after.State = RolloutStatus_PROGRESSING
		after.ProgressAt = now
		after.FinishedAt = 0
		after.Reason = "staged rollout to " + activeID + " edited: growing from " + FormatPercent(share) + "% to " +
			FormatPercent(stage.GetTargetPercent()) + "% " + DescribeRate(stage.GetSafeRate())
	}
	return lines, after, nil
}

// editRefusal is rule 1's refusal of an edit of rec, naming its state.
func editRefusal(processGuid string, rec StageRecord) error {
	if rec.State == RolloutStatus_NONE {
		return NewError(Error_InvalidStateTransition, "desired_lrp %q has no rollout to edit", processGuid)
	}
	state := rec.State.String()
	if rec.State == RolloutStatus_REVERTED {
		state = "REVERTED and back on its healthy definition"
	}
	return NewError(Error_InvalidStateTransition,
		"desired_lrp %q: its rollout is %s; only a rollout PROGRESSING, HOLDING or REVERTED and still moving can be edited", processGuid, state)
}

// describeCount writes a stored max_surge or max_unavailable for an edit's
// line: the value, or "default" when empty.
func describeCount(value string) string {
	if value == "" {
		return "default"
	}
	return value
}

// describeDeadline writes a stored progress_deadline_ms for an edit's
// line; 0 is the default.
func describeDeadline(ms int64) string {
	if ms == 0 {
		return fmt.Sprintf("default (%s)", DefaultProgressDeadline)
	}
	return Millis(ms).String()
}
