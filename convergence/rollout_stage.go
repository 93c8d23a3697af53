package convergence

import (
	"fmt"
	"strconv"

	"github.com/corkboard/corkboard/models"
)

// Staged phases (DESIGN §5, "Staged rollout"; the arithmetic of the share
// and the cohort order is in models/rollout_stage.go). While a staged
// rollout to the active definition is under way (models.StageUnderWay:
// PROGRESSING or HOLDING), the phase
// decides which indices take part in it this pass — its members — and the
// rolling update runs on those alone, start before stop under max_surge
// and max_unavailable as usual. Every other index keeps the healthy
// definition: its instance is not replaced, and one that is missing is
// created on the healthy definition.
//
// Members: every index that already runs the active definition (its
// replacement under way or done), then more, in cohort order, until there
// are as many as the share allows:
//
//	allowed = ceil(instances × share / 100)
//
// Counting the indices already moved first keeps two promises whatever
// happens to the instance count: an index on the active definition is
// never moved back (only a rollback does that), and no more indices run
// the active definition than the share allows (unless a scale-down left
// more; they stay).
//
// Worked example: 20 instances, staged to 50% at 10% every 5 s, seed s.
//
//  1. At the start the share is 0: no member, nothing moves.
//  2. 1 s in: share 2%, allowed ceil(0.4) = 1: the first index of the
//     cohort order becomes a member and its replacement starts.
//  3. 10 s in: share 20%, allowed 4. Say the first member runs v2 and one
//     more is in flight: members are those 2 and the next 2 in the order.
//  4. 25 s in: share 50% (the target), allowed 10. Once the 10 members run
//     v2, ready, with nothing in flight, the phase HOLDs: the other 10 stay
//     on v1 until a promote.
//  5. Scale to 30 mid-phase: allowed ceil(30 × 50%) = 15; the 10 members
//     stay, and 5 more join in the cohort order of 30 indices; the 10 new
//     indices outside it start on v1.
//
// Health gate: an instance of a member index on the active definition that
// is CRASHED since the phase was watching (its start, or its last resume)
// pauses the phase, with the crash in its reason (models.DecideStage's
// crash pause, the state machine the operator's commands go through). A paused phase starts no
// replacement (those under way go on), its share stands still, and its
// progress deadline does not run; a resume continues it.

// stagedPhase is a staged phase as one pass sees it.
type stagedPhase struct {
	stage   *models.RolloutStage
	share   float64
	allowed int32
	// members are the indices that run, or may move to, the active
	// definition this pass.
	members map[int32]bool
	// stable is the schedule of the healthy definition, for the indices
	// outside the phase that have no instance to keep.
	stable *DesiredSchedule
	// pause is the reason this pass pauses the phase for (the health
	// gate), "" when it does not.
	pause string
}

// newStagedPhase is the LRP's staged phase, or nil when its rollout is not
// staged or not under way toward the active definition.
func (p *planner) newStagedPhase(ro *rolloutLRP, instances int32) *stagedPhase {
	rec, d := ro.record, ro.d
	if rec == nil || !models.StageUnderWay(stageRecord(rec), d.ActiveDefinitionID) {
		return nil
	}
	share := models.StageShare(rec.Stage, p.now)
	phase := &stagedPhase{
		stage:   rec.Stage,
		share:   share,
		allowed: models.StageAllowed(share, instances),
		members: map[int32]bool{},
		stable:  d,
	}
	if healthy := d.HealthyDefinitionID; healthy != "" && healthy != d.ActiveDefinitionID {
		stable := *d
		stable.ActiveDefinitionID = healthy
		for _, def := range ro.defs {
			if def.DefinitionID == healthy {
				stable.MemoryMB, stable.DiskMB = def.MemoryMB, def.DiskMB
			}
		}
		phase.stable = &stable
	}
	return phase
}

// seed is the phase's cohort seed.
func (ph *stagedPhase) seed(d *DesiredSchedule) string {
	if s := ph.stage.GetSeed(); s != "" {
		return s
	}
	return models.DefaultStageSeed(d.ProcessGuid, d.ActiveDefinitionID)
}

// admit decides the phase's members among indices (their Current as the
// rows stand; hasInstance says which have an ORDINARY row) and turns the
// others into indices the step leaves alone.
func (ph *stagedPhase) admit(d *DesiredSchedule, indices []RolloutIndex, hasInstance map[int32]bool) {
	for _, x := range indices {
		// An index moving to the active definition has its new instance
		// as its ORDINARY one already. A RETIRING row alone says nothing:
		// a move (moves.go) retires an instance for one on its own
		// definition.
		if x.Current && hasInstance[x.Index] {
			ph.members[x.Index] = true
		}
	}
	budget := int(ph.allowed) - len(ph.members)
	if budget > 0 {
		for _, index := range models.StageCohort(ph.seed(d), d.ProcessGuid, int32(len(indices))) {
			if budget == 0 {
				break
			}
			if !ph.members[index] {
				ph.members[index] = true
				budget--
			}
		}
	}
	for i := range indices {
		if !ph.members[indices[i].Index] {
			// Not this phase's to move: as far as the step knows, it is
			// where it should be.
			indices[i].Current = true
		}
	}
}

// createsStable reports whether a missing instance of index is created on
// the healthy definition: the index is outside the phase.
func (ph *stagedPhase) createsStable(index int32) bool {
	return ph != nil && !ph.members[index]
}

// watch is the health gate: it returns the pause reason for the first
// member instance on the active definition that crashed since the phase
// was watching, or "".
func (ph *stagedPhase) watch(d *DesiredSchedule, o *row) string {
	if ph.stage.GetPaused() || !ph.members[o.Index] || o.DefinitionID != d.ActiveDefinitionID ||
		o.State != crashed || o.Since < ph.stage.GetWatchingSince() {
		return ""
	}
	reason := fmt.Sprintf("paused: %s instance %d crashed", d.ActiveDefinitionID, o.Index)
	if o.CrashReason != "" {
		reason += ": " + o.CrashReason
	}
	return reason
}

// paused reports whether the phase is paused, before or by this pass.
func (ph *stagedPhase) paused() bool {
	return ph != nil && (ph.stage.GetPaused() || ph.pause != "")
}

// reachedTarget reports whether the share stands at the phase's target.
func (ph *stagedPhase) reachedTarget() bool {
	return ph.share >= ph.stage.GetTargetPercent()
}

// crashPause pauses the phase in next, the record this pass writes (the
// record read, unchanged so far), for the health gate's reason, as
// models.DecideStage decides a crash pause.
func (ph *stagedPhase) crashPause(next *RolloutRow, activeID string, now int64) {
	after, _, err := models.DecideStage(next.ProcessGuid, activeID, stageRecord(next),
		models.StageCommand{Kind: models.StageCrashPause, Reason: ph.pause}, now)
	if err != nil {
		// Cannot happen: a phase exists only while its rollout is a staged
		// one under way (newStagedPhase), and watch does not pause a phase
		// that is paused already.
		return
	}
	next.State, next.Reason, next.DefinitionID = after.State, after.Reason, after.DefinitionID
	next.ProgressAt, next.FinishedAt, next.Stage = after.ProgressAt, after.FinishedAt, after.Stage
}

// stageRecord is rec as models.DecideStage reads it.
func stageRecord(rec *RolloutRow) models.StageRecord {
	return models.StageRecord{
		State: rec.State, Reason: rec.Reason, DefinitionID: rec.DefinitionID,
		ProgressAt: rec.ProgressAt, FinishedAt: rec.FinishedAt, Stage: rec.Stage, Judgement: rec.Judgement,
	}
}

// describe is "50% (10 of 20 on v2)", for reasons and history.
func (ph *stagedPhase) describe(updated, instances int32, active string) string {
	return strconv.FormatFloat(ph.share, 'f', -1, 64) + "% (" + strconv.Itoa(int(updated)) + " of " +
		strconv.Itoa(int(instances)) + " on " + active + ")"
}

// holds reports whether the phase has nothing left to do at its target
// below 100%: every member runs the active definition, ready, and nothing
// is in flight.
func (ph *stagedPhase) holds(ro *rolloutLRP) bool {
	return ph.reachedTarget() && ph.stage.GetTargetPercent() < 100 && ph.idle(ro) && ro.step.InFlight == 0 && ro.retiringKept == 0
}

// idle reports whether every member runs the active definition, ready:
// the phase waits for its share to grow (or for a promote).
func (ph *stagedPhase) idle(ro *rolloutLRP) bool {
	return ro.outdated == 0 && int(ro.updated) >= len(ph.members)
}

// deadlineFrom is when the rollout's progress deadline counts from, and
// whether it runs this pass at all: not while a freeze holds it, nor while
// the governor queues the rollout (from its admission once admitted), nor
// while a staged phase is paused or idle (nothing to move until its share
// grows), and for a staged phase from when its share last grew if that is
// later than the last progress.
func (ro *rolloutLRP) deadlineFrom(rec *RolloutRow, instances int32, now int64) (int64, bool) {
	if ro.frozen {
		// Nor while a freeze window holds the rollout (rollout_freeze.go).
		return 0, false
	}
	if ro.turn.Position > 0 {
		// Queued: nothing of the rollout has started.
		return 0, false
	}
	from := rec.DeadlineFrom()
	if ro.turn.Admit {
		// Admitted by this pass: the wait in the queue does not count.
		from = now
	}
	ph := ro.phase
	if ph == nil {
		return from, true
	}
	if ph.paused() || ph.idle(ro) {
		return 0, false
	}
	// A phase that waited for its share to grow counts from when it last
	// grew, not from the last index it completed before.
	return max(from, models.StageAllowedSince(ph.stage, instances, now)), true
}
