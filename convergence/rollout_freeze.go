package convergence

import (
	"time"

	"github.com/corkboard/corkboard/models"
)

// Freeze windows (docs/rollouts.md "Freeze windows"). While a window of the
// snapshot is active (models.FreezeActive at the pass's time), a rollout
// that models.FreezeHolds starts nothing new: its max_surge and
// max_unavailable are 0 for the pass, as for a paused staged phase, and
// the replacements already under way go on (a ready successor still
// retires its predecessor). Its progress deadline does not run, and its
// record says why: the reason ends "; frozen by NAME until TIME", and
// progress_at moves to the end of the freeze, so that once it thaws the
// deadline counts from then, not from before the freeze. The pass after
// the window ends (the planner wakes for it) takes the freeze's part off
// the reason and the rollout goes on.

// freezeAt records the window active at now among windows, for
// frozen.
func (p *planner) freezeAt(windows []*models.FreezeWindow, now time.Time) {
	p.freeze, p.freezeUntil = models.FreezeActive(windows, now)
}

// frozen reports whether an active window holds the LRP's rollout this
// pass: the record is of the active definition and FreezeHolds it.
func (p *planner) frozen(ro *rolloutLRP) bool {
	rec := ro.record
	return p.freeze != nil && rec != nil && rec.DefinitionID == ro.d.ActiveDefinitionID &&
		models.FreezeHolds(rec.State, rec.FreezeExemption)
}

// freezeRecord writes into next, the record this pass writes, what the
// freeze does to it: frozen, the reason and progress_at as the file's
// comment says, a history line for the operation when the reason changes,
// and a wake at the freeze's end; not frozen (any more), the reason
// without the freeze's part.
func (p *planner) freezeRecord(ro *rolloutLRP, next *RolloutRow) {
	if !ro.frozen || next.State != models.RolloutStatus_PROGRESSING {
		next.Reason = models.ThawedReason(next.Reason)
		return
	}
	until := p.freezeUntil.UnixNano()
	next.Reason = models.FrozenReason(next.Reason, p.freeze.GetName(), p.freezeUntil)
	next.ProgressAt = max(next.ProgressAt, until)
	if rec := ro.record; rec == nil || rec.Reason != next.Reason {
		ro.outcome.note(next.Reason)
	}
	p.wakeAt(until)
}
