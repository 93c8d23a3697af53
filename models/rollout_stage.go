package models

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"
)

// Staged phases (DESIGN §5, "Staged rollout"). A phase moves a share of an
// LRP's instances onto its active definition; the others stay on the
// healthy one. The share grows linearly from the share the phase started
// at (prior) to its target, at the safe rate, the paused time left out:
//
//	share(t) = min(target, prior + rate% × (t − phase_started_at − paused) / per)
//
// where paused is paused_nanos plus, while paused, t − paused_at (the
// share stands still from paused_at on). Without a rate the share is the
// target at once. The instances the share allows are
//
//	allowed = min(instances, ceil(instances × share / 100))
//
// computed so that a share that is an exact multiple of one instance does
// not round up to the next (6.25% of 16 is 1, not 2), and 0 only while the
// share is 0. Which indices they are is fixed by StageCohort.
//
// Worked example: Storj's schedule, 5% every 6 hours, humans stepping in at
// each doubling, on 16 instances.
//
//  1. Update with staged {target 6.25, safe_rate 5%/6h}, at 00:00. prior 0.
//     At 00:00 the share is 0: allowed 0. At 03:00 it is 2.5%:
//     ceil(16 × 2.5 / 100) = ceil(0.4) = 1. At 07:30 it is 6.25% (the
//     target: 6.25 / 5 × 6h = 7h30m): allowed 1. The phase holds (HOLDING)
//     once that instance runs the new definition.
//  2. Promote --to 12.5 --rate 5%/6h at 10:00: prior 6.25 (the share that
//     stands), phase start 10:00. Right after 10:00 the share passes 6.25%
//     and ceil(16 × 6.26 / 100) = ceil(1.0016) = 2: the second instance
//     moves at once. The share reaches 12.5% at 10:00 + 6.25 / 5 × 6h =
//     17:30, still 2 instances (16 × 12.5% = 2 exactly).
//  3. Promote --to 25 at 18:00, then paused at 19:00 (share 12.5 + 5/6 =
//     13.33%), resumed at 21:00: paused_nanos 2h, so at 22:00 the share is
//     12.5 + 5 × (4h − 2h) / 6h = 14.17%; 25% is reached at
//     18:00 + 2h + 15h = 11:00 the next day.
//  4. Promote --to 50, then --to 100: at 100% the rollout completes as an
//     unstaged one does, and the healthy definition moves.

// StageShare is the share (percent) the phase allows at now, Unix
// nanoseconds.
func StageShare(s *RolloutStage, now int64) float64 {
	if s == nil {
		return 100
	}
	target := s.GetTargetPercent()
	if !growsAtRate(s) {
		return target
	}
	rate := s.GetSafeRate()
	grown := rate.GetPercent() * float64(stageElapsed(s, now)) / float64(Millis(rate.GetPerMs()))
	return math.Min(target, s.GetPriorPercent()+grown)
}

// stageElapsed is how long the phase has run at now, paused time left
// out (nanoseconds, never negative).
func stageElapsed(s *RolloutStage, now int64) int64 {
	end := now
	if s.GetPaused() && s.GetPausedAt() < end {
		end = s.GetPausedAt()
	}
	return max(0, end-s.GetPhaseStartedAt()-s.GetPausedNanos())
}

// shareEpsilon absorbs floating-point error in share × instances: 6.25% of
// 16 computes as 1.0000000000000002 and must allow 1 instance, not 2.
const shareEpsilon = 1e-9

// StageAllowed is how many of instances the share allows:
// min(instances, ceil(instances × share / 100)), 0 only while the share is
// 0.
func StageAllowed(share float64, instances int32) int32 {
	if instances <= 0 || share <= 0 {
		return 0
	}
	n := int32(math.Ceil(float64(instances)*share/100 - shareEpsilon))
	return min(instances, max(n, 1))
}

// StageNextGrowth is when (Unix nanoseconds) the allowed count next grows
// above its count at now, or 0 when it will not without an operator: the
// phase is paused, has no rate, or is at its target.
func StageNextGrowth(s *RolloutStage, instances int32, now int64) int64 {
	if s.GetPaused() || !growsAtRate(s) || instances <= 0 {
		return 0
	}
	share := StageShare(s, now)
	allowed := StageAllowed(share, instances)
	if share >= s.GetTargetPercent() || allowed >= instances {
		return 0
	}
	next := shareAbove(allowed, instances)
	if next > s.GetTargetPercent() {
		return 0
	}
	at := stageReaches(s, next)
	return max(at, now+1)
}

// StageAllowedSince is when (Unix nanoseconds, at most now) the allowed
// count of instances reached the value it has at now: the phase's start
// when it had it from the start (or the phase has no rate).
func StageAllowedSince(s *RolloutStage, instances int32, now int64) int64 {
	start := s.GetPhaseStartedAt()
	allowed := StageAllowed(StageShare(s, now), instances)
	if !growsAtRate(s) || allowed == 0 {
		return min(now, start)
	}
	needed := shareAbove(allowed-1, instances)
	if needed <= s.GetPriorPercent() {
		return min(now, start)
	}
	at := stageReaches(s, needed)
	return min(now, at)
}

// StageTargetAt is when (Unix nanoseconds) the share reaches the phase's
// target, or 0 when it has or while paused.
func StageTargetAt(s *RolloutStage, now int64) int64 {
	if s.GetPaused() || !growsAtRate(s) || StageShare(s, now) >= s.GetTargetPercent() {
		return 0
	}
	return stageReaches(s, s.GetTargetPercent())
}

// growsAtRate reports whether the phase's share grows over time (it has a
// rate) rather than standing at its target from the start.
func growsAtRate(s *RolloutStage) bool {
	return s.GetSafeRate().GetPercent() > 0 && s.GetSafeRate().GetPerMs() > 0
}

// shareAbove is the share (percent) just past the one that allows count of
// instances, by more than StageAllowed forgives: the share at which
// count + 1 are allowed.
func shareAbove(count, instances int32) float64 {
	return (float64(count) + 2*shareEpsilon) * 100 / float64(instances)
}

// stageReaches is when (Unix nanoseconds) the share of s, growing at its
// rate (which it must have) and not paused from now on, reaches share.
func stageReaches(s *RolloutStage, share float64) int64 {
	rate := s.GetSafeRate()
	per := float64(Millis(rate.GetPerMs()))
	// Saturated: a tiny percent per period puts the share's arrival
	// beyond what int64 nanoseconds hold.
	return s.GetPhaseStartedAt() + s.GetPausedNanos() + saturatingNanos(math.Ceil((share-s.GetPriorPercent())/rate.GetPercent()*per))
}

// DefaultStageSeed is the seed of a phase that names none: the LRP and the
// definition it rolls out, so that each rollout of an LRP draws its own
// order and the same rollout always the same one.
func DefaultStageSeed(processGuid, definitionID string) string {
	return processGuid + "/" + definitionID
}

// StageCohort orders an LRP's indices 0 … instances−1 by
// HMAC-SHA256(seed, process_guid + "/" + index), smallest first: the order
// in which a staged phase moves them. The first allowed of it are the
// cohort. The order depends on nothing else, so it is the same on every
// pass, board and restart, and a larger share (or more instances) only
// adds indices to a cohort.
func StageCohort(seed, processGuid string, instances int32) []int32 {
	type keyed struct {
		index int32
		key   [sha256.Size]byte
	}
	keys := make([]keyed, max(instances, 0))
	mac := hmac.New(sha256.New, []byte(seed))
	for i := range keys {
		mac.Reset()
		mac.Write([]byte(processGuid + "/" + strconv.Itoa(i)))
		keys[i].index = int32(i)
		mac.Sum(keys[i].key[:0])
	}
	slices.SortFunc(keys, func(a, b keyed) int {
		if c := slices.Compare(a.key[:], b.key[:]); c != 0 {
			return c
		}
		return int(a.index - b.index)
	})
	order := make([]int32, len(keys))
	for i, k := range keys {
		order[i] = k.index
	}
	return order
}

// NewRolloutStage is the phase an update with staged starts for the
// rollout of processGuid to definitionID at now (Unix nanoseconds): from
// 0% to the target, at the rate asked (nil: at once), with the seed asked
// or DefaultStageSeed, watched for crashes from the start. The store
// writes it with the update; a rollout plan simulates the same phase.
func NewRolloutStage(staged *StagedRollout, processGuid, definitionID string, now int64) *RolloutStage {
	seed := staged.GetSeed()
	if seed == "" {
		seed = DefaultStageSeed(processGuid, definitionID)
	}
	stage := &RolloutStage{
		PriorPercent:   0,
		TargetPercent:  staged.GetTargetPercent(),
		Seed:           seed,
		PhaseStartedAt: now,
		WatchingSince:  now,
	}
	if rate := staged.GetSafeRate(); rate != nil {
		stage.SafeRate = proto.Clone(rate).(*SafeRate)
	}
	return stage
}

// Stage commands: what may happen to a staged phase once it runs. An
// operator promotes, pauses or resumes it; the planner pauses it when a
// member crashes (the health gate). DecideStage is the one state machine
// for all four; the store and the planner only write what it decides.
//
//	command      from                 to
//	promote      advancing (any)      PROGRESSING, a new phase from the share that stands
//	pause        not paused           paused at now, "paused by <who>"
//	resume       paused               running, the paused time left out of share and deadline
//	crash pause  not paused           paused at now, the crash as the record's reason
//	resume       HELD (staged or not) PROGRESSING, judged again from now (resumeHeld)
//
// Every command but the resume of a HELD rollout needs a staged rollout
// under way to the active definition (StageUnderWay); otherwise, and from
// the wrong "from", it is refused with
// InvalidStateTransition saying what there is instead (a promote below the
// share that stands is InvalidRequest on to_percent).
//
// Worked example, continuing the one above (16 instances, v1 → v2, the
// first phase to 6.25% at 5%/6h since 00:00, HOLDING since 07:30):
//
//  1. Promote to 12.5 at 5%/6h at 10:00: the share stands at 6.25, so the
//     new phase grows from prior 6.25 to 12.5, starts and watches for
//     crashes from 10:00, keeps the seed; the record turns PROGRESSING,
//     progress_at 10:00, reason "staged rollout to v2 promoted from 6.25%
//     to 12.5% at 5% per 6h0m0s". A promote to 5 is refused: 5 is below
//     the 6.25 that stands.
//  2. alice pauses at 11:00: paused at 11:00, pause reason "paused by
//     alice"; the record's state and reason stay. A second pause is
//     refused ("paused already (paused by alice)").
//  3. Resume at 13:00: paused_nanos 2h, progress_at 10:00 → 12:00 (the
//     deadline did not run while paused), watching from 13:00; the line
//     is "resumed after 2h0m0s".
//  4. A member crashes at 14:00: the planner's crash pause, paused at
//     14:00 with "paused: v2 instance 3 crashed" as both the pause reason
//     and the record's reason. A resume at 15:00 continues it as in 3,
//     and the record's reason, the crash's, becomes "staged rollout to
//     v2 resumed after 1h0m0s".

// StageRecord is a rollout record as the stage commands read and write it.
type StageRecord struct {
	State RolloutStatus_State
	// Reason is the record's reason (RolloutStatus.reason).
	Reason string
	// DefinitionID is the definition the rollout moves to.
	DefinitionID string
	// ProgressAt (the progress deadline counts from it) and FinishedAt,
	// Unix nanoseconds.
	ProgressAt int64
	FinishedAt int64
	// Stage is the phase's stored fields, nil when not staged. It is never
	// changed in place: a decision makes a new message.
	Stage *RolloutStage
	// Judgement is the rollout's analysis and verdicts, nil when not
	// judged; never changed in place either.
	Judgement *RolloutJudgement
}

// StageCommandKind is what a StageCommand does.
type StageCommandKind int

const (
	// StagePromote starts the next phase (ToPercent, Rate).
	StagePromote StageCommandKind = iota + 1
	// StagePause freezes the phase's clock at an operator's request (By).
	StagePause
	// StageResume starts the phase's clock again.
	StageResume
	// StageCrashPause is the health gate's pause (Reason): a member on the
	// active definition crashed.
	StageCrashPause
)

// StageCommand is one command to a staged phase.
type StageCommand struct {
	Kind StageCommandKind
	// ToPercent and Rate (nil: at once): the next phase of a promote.
	ToPercent float64
	Rate      *SafeRate
	// By is who asked for a pause (requested_by), "" when unknown.
	By string
	// Reason is why the planner pauses (StageCrashPause).
	Reason string
}

// StageUnderWay reports whether rec is a staged rollout under way to the
// LRP's active definition activeID: staged, to activeID, and advancing
// (RolloutAdvancing). Only then does the planner follow its phase, and only
// then may a command change it.
func StageUnderWay(rec StageRecord, activeID string) bool {
	return rec.Stage != nil && rec.DefinitionID == activeID && RolloutAdvancing(rec.State)
}

// DecideStage decides cmd on the LRP processGuid's record before, whose
// active definition is activeID, at now (Unix nanoseconds): the record
// after and the line the command's operation records, or a refusal (a
// models.Error) and nothing changes. See the table and the worked example
// above.
func DecideStage(processGuid, activeID string, before StageRecord, cmd StageCommand, now int64) (StageRecord, string, error) {
	if cmd.Kind == StageResume && before.State == RolloutStatus_HELD && before.DefinitionID == activeID {
		return resumeHeld(before, now)
	}
	if err := stageRefusal(processGuid, activeID, before); err != nil {
		return StageRecord{}, "", err
	}
	current := before.Stage
	after := before
	switch cmd.Kind {
	case StagePromote:
		share := StageShare(current, now)
		if cmd.ToPercent < share {
			return StageRecord{}, "", ErrInvalidField("to_percent", "must not be below the share that stands, "+
				FormatPercent(share)+" (got "+strconv.FormatFloat(cmd.ToPercent, 'f', -1, 64)+")")
		}
		// A new phase: it grows from the share that stands, is not
		// paused, and its crash watch starts over. The seed stays, so the
		// cohort only grows.
		stage := &RolloutStage{
			PriorPercent:   share,
			TargetPercent:  cmd.ToPercent,
			Seed:           current.GetSeed(),
			PhaseStartedAt: now,
			WatchingSince:  now,
		}
		if cmd.Rate != nil {
			stage.SafeRate = proto.Clone(cmd.Rate).(*SafeRate)
		}
		line := "promoted from " + FormatPercent(share) + "% to " + FormatPercent(cmd.ToPercent) + "% " + DescribeRate(cmd.Rate)
		after.Stage = stage
		after.State = RolloutStatus_PROGRESSING
		after.Reason = "staged rollout to " + activeID + " " + line
		after.ProgressAt = now
		after.FinishedAt = 0
		return after, line, nil
	case StagePause, StageCrashPause:
		if current.GetPaused() {
			return StageRecord{}, "", NewError(Error_InvalidStateTransition,
				"desired_lrp %q: its staged rollout is paused already (%s)", processGuid, current.GetPauseReason())
		}
		reason := cmd.Reason
		if cmd.Kind == StagePause {
			reason = "paused"
			if cmd.By != "" {
				reason = "paused by " + cmd.By
			}
		} else {
			// The crash is why the rollout stands still: the record says so.
			after.Reason = reason
		}
		stage := proto.Clone(current).(*RolloutStage)
		stage.Paused, stage.PausedAt, stage.PauseReason = true, now, reason
		after.Stage = stage
		return after, reason, nil
	case StageResume:
		if !current.GetPaused() {
			return StageRecord{}, "", NewError(Error_InvalidStateTransition,
				"desired_lrp %q: its staged rollout is not paused", processGuid)
		}
		// A clock that stepped back since the pause counts as no pause.
		paused := max(0, now-current.GetPausedAt())
		stage := proto.Clone(current).(*RolloutStage)
		stage.PausedNanos += paused
		stage.Paused, stage.PausedAt, stage.PauseReason = false, 0, ""
		stage.WatchingSince = now
		after.Stage = stage
		after.ProgressAt += paused
		line := "resumed after " + time.Duration(paused).Round(time.Millisecond).String()
		if before.Reason == current.GetPauseReason() {
			// The record said why it stood still (a crash pause): it
			// does not any more.
			after.Reason = "staged rollout to " + activeID + " " + line
		}
		return after, line, nil
	}
	return StageRecord{}, "", NewError(Error_InvalidRequest, "unknown stage command %d", cmd.Kind)
}

// resumeHeld resumes a rollout its failure policy held (state HELD): it
// goes on PROGRESSING (the planner makes a staged one at its target
// HOLDING again), its progress deadline counts from now, and the verdicts
// made before now no longer act (RolloutJudgement.VerdictsFrom), so the
// verdict that held it does not hold it again; the next one judges it.
// Worked example: v2 HELD at 12:05 on "FAIL at 12:05:00 (rolling, v2
// against v1): errors …", resumed at 12:30: PROGRESSING, progress_at
// 12:30, verdicts from 12:30, held_at 0; the line is "resumed the rollout
// held since 12:05:00; judged again from now".
func resumeHeld(before StageRecord, now int64) (StageRecord, string, error) {
	after := before
	after.State = RolloutStatus_PROGRESSING
	after.ProgressAt = now
	after.FinishedAt = 0
	j := proto.Clone(before.Judgement).(*RolloutJudgement)
	if j == nil {
		j = &RolloutJudgement{}
	}
	line := "resumed the rollout held since " + time.Unix(0, j.GetHeldAt()).UTC().Format("15:04:05") + "; judged again from now"
	j.HeldAt, j.VerdictsFrom = 0, now
	after.Judgement = j
	after.Reason = "resumed: rolling to " + before.DefinitionID
	return after, line, nil
}

// stageRefusal is nil when a command may change rec (StageUnderWay), else
// InvalidStateTransition saying what there is instead.
func stageRefusal(processGuid, activeID string, rec StageRecord) error {
	if StageUnderWay(rec, activeID) {
		return nil
	}
	none := fmt.Sprintf("desired_lrp %q has no staged rollout under way", processGuid)
	switch {
	case rec.State == RolloutStatus_NONE:
		return NewError(Error_InvalidStateTransition, "%s: it has no rollout", none)
	case rec.Stage == nil:
		return NewError(Error_InvalidStateTransition,
			"%s: its rollout to %s is not staged (an update with staged starts one)", none, rec.DefinitionID)
	case rec.DefinitionID != activeID:
		// Cannot happen while every change of the active definition
		// writes the record in its transaction; refuse rather than move a
		// phase of a definition that is no longer rolling out.
		return NewError(Error_InvalidStateTransition,
			"%s: its staged rollout is to %s, but the active definition is %s", none, rec.DefinitionID, activeID)
	}
	return NewError(Error_InvalidStateTransition,
		"%s: its staged rollout to %s is %s, not PROGRESSING or HOLDING", none, rec.DefinitionID, rec.State)
}

// FormatPercent writes a share for people: at most four decimals, rounded
// up, so that a share quoted back in a request (to_percent) is never below
// the share it was quoted from. The small slack keeps an exact share such
// as 12.5 from rounding up on floating-point noise.
func FormatPercent(p float64) string {
	return strconv.FormatFloat(math.Ceil(p*1e4-1e-6)/1e4, 'f', -1, 64)
}

// DescribeRate writes a rate for people: "at 5% per 6h0m0s", or "at once".
func DescribeRate(rate *SafeRate) string {
	if rate == nil {
		return "at once"
	}
	return "at " + FormatPercent(rate.GetPercent()) + "% per " + Millis(rate.GetPerMs()).String()
}
