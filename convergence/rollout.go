package convergence

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

const retiring = models.ActualLRP_RETIRING

// rolloutLRP is what the planner knows of one desired LRP's rolling update
// while it reconciles the LRP: its rollout record, its stored definitions,
// its resolved strategy, and the decisions of this pass.
type rolloutLRP struct {
	d        *DesiredSchedule
	record   *RolloutRow
	defs     []DefinitionRow
	strategy models.RolloutStrategy
	// step is PlanRolloutStep's decision, by index: the replacement that
	// starts at each index this pass (started), and the RETIRING rows told
	// to stop (stopping).
	started  map[int32]Replacement
	stopping map[int32]bool
	step     RolloutStep
	// budgetHeld: the step started nothing only because the disruption
	// budget had no stop left (another disruption spent it).
	budgetHeld bool
	// budget is the LRP's disruption budget tallied before this pass's
	// writes (budget.go): the stops it has left bound the step, with those
	// its budget group has left (group, nil for none; GroupStops).
	budget DisruptionBudget
	group  *GroupBudget
	// promoted are the indices whose RETIRING instance runs the active
	// definition again and becomes their ORDINARY one (see promoteBack).
	promoted map[int32]bool
	// outcome is what this pass does to the operation that started the
	// rollout record (operations.go).
	outcome opOutcome
	// phase is the staged phase the rollout is in, nil when it is not
	// staged (rollout_stage.go).
	phase *stagedPhase
	// covered are the indices an occupied instance above the count stands
	// for (autoscale_plan.go): they count as serving, roll nothing, and do
	// not keep the rollout from completing; the stand-in's own successor
	// starts on the active definition once it is idle.
	covered coveredIndices
	// frozen: an active freeze window holds the rollout this pass
	// (rollout_freeze.go): it starts nothing new and its deadline does not
	// run.
	frozen bool
	// reverting: this pass fails the rollout and re-activates the healthy
	// definition; it starts and stops nothing, so that nothing of the
	// failed definition starts and nothing of the healthy one stops.
	reverting bool
	// verdict is the verdict of the rollout's analysis this pass acts on
	// (models.RolloutJudgement.ActingVerdict), nil for none, and action
	// what it does (models.VerdictAction; Continue without one).
	verdict *models.AnalysisVerdict
	action  models.RolloutAction
	// turn is the rollout governor's decision for the LRP's rollout
	// (GovernRollouts); the zero turn when its record is not of the active
	// definition or neither holds nor wants a slot.
	turn RolloutTurn
	// Counted over the wanted indices.
	updated  int32
	outdated int32
	// retiringKept counts RETIRING rows that stay after this pass and
	// were not told to stop (before or in this pass).
	retiringKept int32
	// crashed counts the instances on the active definition that are
	// CRASHED now, crashes the crash counts of all its instances, and
	// crashReasons holds the first few distinct reasons of their last
	// crashes (index order), for the reason of a failed rollout.
	crashed      int32
	crashes      int32
	crashReasons []string
	// bakeUntil is when the bake ends, when this pass found the rollout
	// baking (bakes); 0 otherwise.
	bakeUntil int64
}

// underway reports whether the LRP's instances are being replaced or moved
// after this pass, so that its next step (a successor ready, a
// predecessor gone) is worth a pass soon. A FAILED rollout waits for an
// operator, and the full pass keeps an eye on it.
func (ro *rolloutLRP) underway() bool {
	if rec := ro.record; rec != nil && rec.State == models.RolloutStatus_FAILED && rec.DefinitionID == ro.d.ActiveDefinitionID {
		return false
	}
	return ro.retiringKept > 0 || ro.step.InFlight > 0 || len(ro.stopping) > 0 || len(ro.promoted) > 0
}

// maxCrashReasons bounds the crash reasons a failed rollout's reason
// quotes, and maxCrashReasonBytes each one.
const (
	maxCrashReasons     = 3
	maxCrashReasonBytes = 200
)

// noteCrash keeps the crash reason of an instance on the active
// definition, unless it is known already or enough are.
func (ro *rolloutLRP) noteCrash(reason string) {
	if reason == "" || len(ro.crashReasons) == maxCrashReasons || slices.Contains(ro.crashReasons, reason) {
		return
	}
	ro.crashReasons = append(ro.crashReasons, reason)
}

// describeCrashes says how the active definition's instances crashed,
// e.g. ` (1 crashed, 2 crashes in all; last crash: "exited with code 3")`,
// or "" when none did.
func (ro *rolloutLRP) describeCrashes() string {
	if ro.crashes == 0 {
		return ""
	}
	text := fmt.Sprintf(" (%d crashed, %d crashes in all", ro.crashed, ro.crashes)
	if len(ro.crashReasons) > 0 {
		quoted := make([]string, len(ro.crashReasons))
		for i, reason := range ro.crashReasons {
			if len(reason) > maxCrashReasonBytes {
				reason = strings.ToValidUTF8(reason[:maxCrashReasonBytes], "") + "…"
			}
			quoted[i] = strconv.Quote(reason)
		}
		label := "last crash"
		if len(quoted) > 1 {
			label = "last crashes"
		}
		text += "; " + label + ": " + strings.Join(quoted, ", ")
	}
	return text + ")"
}

// needsRollout reports whether an LRP takes part in rolling updates this
// pass: it has a rollout record that is not settled, a RETIRING row, or an
// ORDINARY row on a definition other than the active one. Every other LRP
// — nearly all of them in a steady board — costs only this scan.
func needsRollout(d *DesiredSchedule, record *RolloutRow, rows []row) bool {
	if record != nil {
		return true
	}
	for i := range rows {
		r := &rows[i]
		if r.Presence == retiring || (r.Presence == ordinary && r.DefinitionID != d.ActiveDefinitionID) {
			return true
		}
	}
	return false
}

// planRollout decides the rollout step of one desired LRP, before its
// indices are reconciled: which RETIRING rows go (deleted, or told to
// stop) and which outdated indices start a replacement. byIndex holds the
// wanted indices' ORDINARY, SUSPECT and RETIRING rows.
func (p *planner) planRollout(ro *rolloutLRP, slots []indexRows) {
	d, s := ro.d, ro.strategy
	ro.started = map[int32]Replacement{}
	ro.stopping = map[int32]bool{}
	ro.promoted = map[int32]bool{}
	indices := make([]RolloutIndex, 0, len(slots))
	hasInstance := make(map[int32]bool, len(slots))
	for i := range slots {
		slot := &slots[i]
		if slot.ret != nil && p.retiringGone(slot.ret, slot.ord) {
			slot.ret = nil
		}
		p.promoteBack(ro, slot)
		x := RolloutIndex{Index: slot.index, Current: true}
		if ro.covered[slot.index] {
			x.Serving = true
			indices = append(indices, x)
			continue
		}
		if o := slot.ord; o != nil {
			hasInstance[slot.index] = true
			x.Current = o.DefinitionID == d.ActiveDefinitionID
			x.Serving = o.State == running && o.Routable && p.cells.isPresent(o.cell)
			x.ServingSince = time.Unix(0, o.Since)
			x.Occupied = o.Occupied
			x.DefinitionCreatedAt = ro.createdAt(o.DefinitionID)
			if x.Current && x.Serving && p.now-o.Since >= int64(s.MinReady) {
				ro.updated++
			}
			if x.Current && o.State == crashed {
				ro.crashed++
			}
			if x.Current && o.CrashCount > 0 {
				ro.crashes += o.CrashCount
				ro.noteCrash(o.CrashReason)
			}
		}
		if slot.sus != nil {
			// A lost cell's instance and its replacement are convergence's
			// business first; the index rolls once that is settled.
			x.Current = true
		}
		if e := slot.evac; e != nil && e.State == running && e.Routable && p.cells.isPresent(e.cell) {
			// So is a drain's hand-over: its EVACUATING instance serves
			// until the ORDINARY one runs, on the definition it had. Were
			// the index rolled now, its ORDINARY row would look like an
			// outdated instance that serves nothing, be moved onto the
			// active definition at once, outside the surge and the
			// budget, and the evacuating instance would wait on a
			// definition that has not proven itself.
			x.Current = true
		}
		if r := slot.ret; r != nil {
			x.Retiring = true
			x.RetiringStopping = r.StopRequested
			x.RetiringServing = r.State == running && r.Routable && !r.StopRequested
		}
		indices = append(indices, x)
	}
	if ph := ro.phase; ph != nil {
		ph.admit(d, indices, hasInstance)
		for i := range slots {
			if o := slots[i].ord; o != nil && ph.pause == "" {
				ph.pause = ph.watch(d, o)
			}
		}
	}
	for _, x := range indices {
		if !x.Current {
			ro.outdated++
		}
	}
	if ro.record != nil && ro.record.State == models.RolloutStatus_FAILED && ro.record.DefinitionID == d.ActiveDefinitionID {
		// A failed rollout starts nothing new until an operator acts; the
		// replacements already ready still retire their predecessors.
		s.MaxSurge, s.MaxUnavailable, s.Fast = 0, 0, false
	}
	if ro.phase.paused() {
		// A paused phase starts nothing new either; what is under way
		// goes on.
		s.MaxSurge, s.MaxUnavailable, s.Fast = 0, 0, false
	}
	if ro.turn.Position > 0 {
		// A queued rollout starts nothing until the governor admits it;
		// nothing of it is under way yet.
		s.MaxSurge, s.MaxUnavailable, s.Fast = 0, 0, false
	}
	ro.verdict, ro.action = verdictAction(ro)
	if rec := ro.record; rec != nil && rec.State == models.RolloutStatus_HELD && rec.DefinitionID == d.ActiveDefinitionID ||
		ro.action == models.Hold || ro.action == models.Fail {
		// A rollout its failure policy held or failed (this pass or
		// before) starts nothing new until an operator acts; the
		// replacements already ready still retire their predecessors, and
		// the mix of definitions keeps serving.
		s.MaxSurge, s.MaxUnavailable, s.Fast = 0, 0, false
	}
	if ro.frozen = p.frozen(ro); ro.frozen {
		// A frozen rollout starts nothing new either; what is under way
		// goes on (rollout_freeze.go).
		s.MaxSurge, s.MaxUnavailable, s.Fast = 0, 0, false
	}
	if ro.reverting = p.revertsNow(ro, int32(len(slots))); ro.reverting {
		return
	}
	stops := GroupStops(ro.budget, ro.group)
	ro.step = PlanRolloutStep(indices, s, stops, time.Unix(0, p.now))
	if len(ro.step.Start) == 0 && stops == 0 {
		// What the budget held: the step with no budget would start
		// something (blocked.go reports it as budget_exhausted).
		ro.budgetHeld = len(PlanRolloutStep(indices, s, ro.budget.MaxUnavailable+ro.budget.Instances, time.Unix(0, p.now)).Start) > 0
	}
	serving := make(map[int32]bool, len(indices))
	for _, x := range indices {
		serving[x.Index] = x.Serving
	}
	for _, start := range ro.step.Start {
		ro.started[start.Index] = start
		if start.StopOld && serving[start.Index] {
			// A serving index taken down: drawn from the group at once,
			// so that the LRPs decided after this one see what is left.
			ro.group.Draw(d.ProcessGuid, 1)
		}
	}
	for _, x := range indices {
		// Superseded: a replacement on an older definition that does not
		// run yet is moved onto the active one at once. Its index is in
		// flight already (it has a RETIRING row).
		if x.Retiring && !x.Current && !x.Serving {
			ro.started[x.Index] = Replacement{Index: x.Index}
		}
	}
	for _, index := range ro.step.Stop {
		ro.stopping[index] = true
	}
	for i := range slots {
		if r := slots[i].ret; r != nil && !r.StopRequested && !ro.stopping[slots[i].index] {
			ro.retiringKept++
		}
	}
	if !ro.step.Wake.IsZero() {
		p.wakeAt(ro.step.Wake.UnixNano())
	}
}

// promoteBack keeps a RETIRING instance that still serves and was not
// told to stop, promoting it back to its index's ORDINARY row and deleting
// the ORDINARY row that was to replace it (its rep stops that instance,
// if any), in two cases:
//
//   - Going back: a rollback, an abort or an auto-revert re-activated the
//     definition the RETIRING instance runs, and the ORDINARY one runs
//     another. So going back restarts only what runs the abandoned
//     definition.
//   - A stalled move (moves.go): the replacement, on the same definition,
//     found no cell or was not claimed within stale_unclaimed. Placing it
//     again elsewhere could put it back beside the instance it was to
//     replace, restarting that for nothing; the move is dropped instead,
//     and a later pass may try another.
//
// A RETIRING instance that is draining stays on its way out, and its
// index goes on the usual way.
func (p *planner) promoteBack(ro *rolloutLRP, slot *indexRows) {
	r, o, active := slot.ret, slot.ord, ro.d.ActiveDefinitionID
	if r == nil || o == nil || slot.sus != nil || r.DefinitionID != active ||
		r.State != running || !r.Routable || r.StopRequested {
		return
	}
	var dropped, kept string
	switch {
	case o.DefinitionID != active:
		dropped = fmt.Sprintf("%s is active again and the index's retiring instance runs it: that one is kept instead", active)
		kept = fmt.Sprintf("runs %s, which is active again: the index's instance once more", active)
	case p.moveStalled(o):
		dropped = "the replacement of a move " + p.stallReason(o) + ": the move is dropped"
		kept = "its move stalled: the index's instance once more"
	default:
		return
	}
	p.delete(o, dropped)
	p.promote(r, kept)
	slot.ord, slot.ret = r, nil
	ro.promoted[slot.index] = true
}

// moveStalled reports whether o, the ORDINARY replacement of a move, will
// not start where it was placed: it fits no cell, or its cell did not
// claim it within stale_unclaimed.
func (p *planner) moveStalled(o *row) bool {
	if o.State != unclaimed {
		return false
	}
	if o.CellID == "" {
		return o.PlacementError != ""
	}
	return p.now-o.Since >= int64(p.cfg.StaleUnclaimed)
}

func (p *planner) stallReason(o *row) string {
	if o.CellID == "" {
		return "fits no cell (" + o.PlacementError + ")"
	}
	return fmt.Sprintf("was not claimed by cell %s within %s", o.CellID, p.cfg.StaleUnclaimed)
}

// revertsNow reports whether this pass fails the LRP's rollout and
// re-activates the healthy definition (finishRollout writes it): a
// verdict whose action is Revert, or the progress deadline passed with
// models.FailureAction saying Revert. It is decided before the step so
// that the pass starts nothing of the definition that failed.
func (p *planner) revertsNow(ro *rolloutLRP, instances int32) bool {
	if ro.action == models.Revert {
		return true
	}
	rec, d := ro.record, ro.d
	switch {
	case rec == nil || rec.State != models.RolloutStatus_PROGRESSING || rec.DefinitionID != d.ActiveDefinitionID:
		return false
	case ro.outdated == 0 && ro.updated == instances, ro.updated > rec.UpdatedInstances:
		return false // done, or progress
	}
	if from, runs := ro.deadlineFrom(rec, instances, p.now); !runs || p.now-from < int64(ro.strategy.ProgressDeadline) {
		return false
	}
	return ro.failureAction() == models.Revert
}

// failureAction is what the rollout failing does (models.FailureAction):
// its update's on_failure, the strategy's auto_revert, and whether there
// is a healthy definition to go back to.
func (ro *rolloutLRP) failureAction() models.RolloutAction {
	d := ro.d
	return models.FailureAction(ro.record.Judgement.GetOnFailure(), ro.strategy.AutoRevert,
		models.Abortable(d.ActiveDefinitionID, d.HealthyDefinitionID))
}

// verdictAction is the verdict of the LRP's rollout this pass acts on and
// what it does: the latest verdict of a judged rollout to the active
// definition, made since its verdicts count (ActingVerdict); none, and
// Continue, otherwise.
func verdictAction(ro *rolloutLRP) (*models.AnalysisVerdict, models.RolloutAction) {
	rec, d := ro.record, ro.d
	if rec == nil || rec.DefinitionID != d.ActiveDefinitionID || !models.Judged(rec.State, rec.Judgement) {
		return nil, models.Continue
	}
	v := rec.Judgement.ActingVerdict(d.ActiveDefinitionID)
	if v == nil {
		return nil, models.Continue
	}
	return v, models.VerdictAction(v.GetOutcome(), rec.Judgement, ro.strategy.AutoRevert,
		models.Abortable(d.ActiveDefinitionID, d.HealthyDefinitionID))
}

// retiringGone deletes the RETIRING row r of a wanted index, and reports
// true, when nothing should keep it: its cell is not present (nobody is
// left to stop it), it no longer runs, or it was told to stop longer than
// the evacuation grace ago (its rep should have removed it by then).
// Otherwise the row keeps its room on its cell.
func (p *planner) retiringGone(r, successor *row) bool {
	switch {
	case !p.cells.isPresent(r.cell):
		p.delete(r, "retiring, but "+p.cellGone(r))
	case r.State != running && r.State != claimed:
		p.delete(r, "retiring, and "+r.State.String()+": it serves nothing")
	case r.StopRequested && p.now-r.Since >= int64(p.cfg.EvacuationGrace):
		p.delete(r, fmt.Sprintf("told to stop %s ago, over the evacuation grace of %s; the rep should have removed it",
			time.Duration(p.now-r.Since).Round(time.Second), p.cfg.EvacuationGrace))
	default:
		// The row keeps its room on its cell (every row does), but not
		// its place in the LRP's spread: it is leaving, and its successor
		// is placed as if it were gone already. Counted, it would push
		// successors into other zones, rollout after rollout.
		if r.StopRequested {
			p.wakeAt(r.Since + int64(p.cfg.EvacuationGrace))
		}
		return false
	}
	return true
}

// startReplacement starts the replacement decided for an outdated index
// whose ORDINARY row is ord, and reports whether it did (the index needs
// nothing else this pass). A serving instance turns RETIRING and a new
// instance is created on the active definition; one that serves nothing is
// moved onto the active definition in place and placed again.
func (p *planner) startReplacement(ro *rolloutLRP, ord, ret *row) bool {
	start, ok := ro.started[ord.Index]
	if !ok {
		return false
	}
	d := ro.d
	move := fmt.Sprintf("rolling from %s to %s", ord.DefinitionID, d.ActiveDefinitionID)
	if ord.State == running && ord.Routable && p.cells.isPresent(ord.cell) {
		p.retireOutdated(ord, start.StopOld, move)
		p.create(d, ord.Index, "replaces a retiring instance: "+move)
		return true
	}
	p.redefine(ord, d, move)
	p.placer.add(request{
		row:     ord.ActualRow,
		create:  -1,
		need:    need{memory: d.MemoryMB, disk: d.DiskMB},
		avoid:   noCell,
		shun:    p.avoided[CrashPair{d.ProcessGuid, d.ActiveDefinitionID}],
		why:     whyRedefined,
		chained: true,
	})
	return true
}

func (p *planner) retireOutdated(r *row, stop bool, why string) {
	if stop {
		why += ", stopped at once (max_unavailable)"
	} else {
		why += ", kept serving until its replacement is ready"
	}
	p.plan.Writes.Retire = append(p.plan.Writes.Retire, Retirement{Row: version(r.ActualRow), Stop: stop})
	p.plan.Reasons.Retire = append(p.plan.Reasons.Retire, why)
}

func (p *planner) redefine(r *row, d *DesiredSchedule, move string) {
	p.leaves(r)
	p.plan.Writes.Redefine = append(p.plan.Writes.Redefine, Redefinition{Row: version(r.ActualRow), DefinitionID: d.ActiveDefinitionID})
	p.plan.Reasons.Redefine = append(p.plan.Reasons.Redefine, move+"; it serves nothing ("+r.State.String()+"), so it is replaced in place")
}

func (p *planner) requestStop(r *row, why string) {
	p.plan.Writes.RequestStop = append(p.plan.Writes.RequestStop, version(r.ActualRow))
	p.plan.Reasons.RequestStop = append(p.plan.Reasons.RequestStop, why)
}

// createdAt is when the LRP's definition id was stored; 0 (the oldest)
// when it is not known.
func (ro *rolloutLRP) createdAt(id string) int64 {
	for i := range ro.defs {
		if ro.defs[i].DefinitionID == id {
			return ro.defs[i].CreatedAt
		}
	}
	return 0
}

// indexRows are the rows of one wanted index that a rollout looks at.
type indexRows struct {
	index               int32
	ord, sus, ret, evac *row
}

// finishRollout writes the LRP's rollout record when this pass changes
// what it records, and deletes the definitions cleanup no longer keeps. rows
// are all the LRP's rows (any index, presence, state).
func (p *planner) finishRollout(ro *rolloutLRP, instances int32, rows []row) {
	d, rec := ro.d, ro.record
	next := RolloutRow{ProcessGuid: d.ProcessGuid}
	if rec != nil {
		next = *rec
		p.noteTurn(ro, &next)
	}
	write := RolloutWrite{ProcessGuid: d.ProcessGuid, ExpectActiveDefinitionID: d.ActiveDefinitionID}
	if rec != nil {
		write.ExpectModificationIndex = rec.ModificationIndex
	}
	deadline := ro.strategy.ProgressDeadline
	done := ro.outdated == 0 && ro.updated+int32(len(ro.covered)) == instances && ro.retiringKept == 0

	switch {
	case rec == nil || rec.DefinitionID != d.ActiveDefinitionID || rec.State == models.RolloutStatus_NONE:
		// No record of this definition's rollout (the update that made it
		// active writes one; this catches anything else).
		if rec == nil && ro.outdated == 0 {
			// Only RETIRING rows left over: nothing to roll.
			break
		}
		if done {
			if rec != nil && rec.State != models.RolloutStatus_NONE && rec.DefinitionID != d.ActiveDefinitionID {
				// A record of another definition's rollout (the active
				// one moved without a record of its own): every index
				// runs the active definition, so that is what completed.
				// Left as it was, a PROGRESSING record would never settle.
				next.State = models.RolloutStatus_COMPLETE
				next.DefinitionID = d.ActiveDefinitionID
				next.FailedDefinitionID = ""
				next.Reason = fmt.Sprintf("every index runs %s", d.ActiveDefinitionID)
				next.FinishedAt = p.now
				write.SetHealthyDefinitionID = d.ActiveDefinitionID
			}
			break
		}
		// Its instances started rolling in this pass already: the
		// rollout is admitted as it is recorded, and counts from then on.
		next = RolloutRow{
			ProcessGuid: d.ProcessGuid, State: models.RolloutStatus_PROGRESSING,
			Reason:       "rolling to " + d.ActiveDefinitionID,
			DefinitionID: d.ActiveDefinitionID, StartedAt: p.now, ProgressAt: p.now, AdmittedAt: p.now,
		}
	case models.RolloutUnderWay(rec.State, rec.FinishedAt):
		deadlineFrom, deadlineRuns := ro.deadlineFrom(rec, instances, p.now)
		switch {
		case ro.action != models.Continue:
			p.failRollout(ro, &next, &write, "verdict "+models.VerdictLine(ro.verdict), ro.action)
		case done && rec.State != models.RolloutStatus_REVERTED && p.bakes(ro, &next):
			// Every index runs the definition; the bake goes on.
		case done:
			next.FinishedAt = p.now
			if rec.State != models.RolloutStatus_REVERTED {
				next.State = models.RolloutStatus_COMPLETE
				next.Reason = fmt.Sprintf("every index runs %s", d.ActiveDefinitionID)
				write.SetHealthyDefinitionID = d.ActiveDefinitionID
				ro.outcome.end(models.Operation_FINISHED, next.Reason)
			} else {
				next.Reason = fmt.Sprintf("%s failed; every index is back on %s", rec.FailedDefinitionID, d.ActiveDefinitionID)
				ro.outcome.end(models.Operation_ERROR, next.Reason)
			}
		case ro.phase != nil && ro.phase.pause != "":
			ro.phase.crashPause(&next, d.ActiveDefinitionID, p.now)
			ro.outcome.note(ro.phase.pause)
		case ro.updated > rec.UpdatedInstances:
			next.ProgressAt = p.now
			ro.outcome.note(fmt.Sprintf("%d of %d instances on %s", ro.updated, instances, d.ActiveDefinitionID))
		case rec.State == models.RolloutStatus_HOLDING:
			// Waits for a promote.
		case deadlineRuns && p.now-deadlineFrom >= int64(deadline):
			failure := fmt.Sprintf("no index completed within %s: %d of %d run %s", deadline, ro.updated, instances, d.ActiveDefinitionID)
			failure += ro.describeCrashes()
			action := models.Fail
			switch {
			case ro.reverting:
				action = models.Revert
			case rec.State == models.RolloutStatus_PROGRESSING && ro.failureAction() == models.Hold:
				action = models.Hold
			}
			p.failRollout(ro, &next, &write, failure, action)
		}
		if models.Judged(next.State, next.Judgement) {
			// The next verdict is due an interval after the last. One
			// due already is being made (the runner judges after reading
			// the snapshot) and triggers a pass when stored: the wake is
			// a backstop an interval away, never a pass at once.
			interval := int64(next.Judgement.GetAnalysis().Interval())
			due := p.now + interval
			if last := next.Judgement.LastVerdict(); last != nil && last.GetAt()+interval > p.now {
				due = last.GetAt() + interval
			}
			p.wakeAt(due)
		}
	case rec.State == models.RolloutStatus_FAILED && done && !failedVerdict(rec):
		// The new instances came up after all.
		next.State = models.RolloutStatus_COMPLETE
		next.Reason = fmt.Sprintf("every index runs %s (after the deadline had passed)", d.ActiveDefinitionID)
		next.FinishedAt = p.now
		write.SetHealthyDefinitionID = d.ActiveDefinitionID
	}
	if ph := ro.phase; ph != nil && next.State == models.RolloutStatus_PROGRESSING && !ph.paused() && ph.holds(ro) {
		next.State = models.RolloutStatus_HOLDING
		next.Reason = fmt.Sprintf("holding at %s: promote to go on", ph.describe(ro.updated, instances, d.ActiveDefinitionID))
		ro.outcome.note(next.Reason)
	}
	p.freezeRecord(ro, &next)
	if next.State != models.RolloutStatus_NONE || rec != nil {
		next.UpdatedInstances = ro.updated
		next.InFlight = ro.step.InFlight
	}
	if models.RolloutDeadlineRuns(next.State, next.FinishedAt, next.Stage) {
		// The deadline counts from the progress this pass recorded (or
		// the start of a new or reverted rollout), not only from the last
		// one stored; a staged phase's from when its share last grew, and
		// not while it waits for its share to grow (deadlineFrom).
		if from, runs := ro.deadlineFrom(&next, instances, p.now); runs {
			p.wakeAt(from + int64(deadline))
		}
	}
	if ph := ro.phase; ph != nil && next.State == models.RolloutStatus_PROGRESSING && !ph.paused() {
		if at := models.StageNextGrowth(ph.stage, instances, p.now); at > 0 {
			p.wakeAt(at)
		}
		// A phase below 100% HOLDs once its share stands at its target
		// (holds), and only a pass writes that. The allowed count need not
		// grow then: 4 instances staged to 40% allow 2 from 25% on, so
		// without this wake the record stays PROGRESSING at its target
		// until some other pass comes.
		if ph.stage.GetTargetPercent() < 100 {
			if at := models.StageTargetAt(ph.stage, p.now); at > 0 {
				p.wakeAt(at)
			}
		}
	}

	p.countRollout(next)

	cleaned := p.cleanDefinitions(ro, rows)
	// A rollout not over is never settled, though every index runs the
	// definition it is leaving (a revert during a bake) or the one it
	// brings (held in its bake).
	write.Settled = done && cleaned && !models.RolloutOpen(next.State, next.FinishedAt)
	if rec == nil && next.State == models.RolloutStatus_NONE {
		return
	}
	// The write waits for placement, whose failures say what blocks the
	// rollout: finishBlocked decides it, in this place among the writes.
	p.blocked = append(p.blocked, pendingRollout{ro: ro, instances: instances, rows: rows, next: next, write: write, at: len(p.plan.Writes.Rollouts)})
	p.rolloutWrite(write, next.Reason)
}

// countRollout counts the record next, as this pass leaves it, in the
// plan's Counts.
func (p *planner) countRollout(next RolloutRow) {
	switch {
	case models.RolloutUnderWay(next.State, next.FinishedAt):
		p.plan.Counts.RolloutsUnderWay++
	case next.State == models.RolloutStatus_FAILED:
		p.plan.Counts.RolloutsFailed++
	case next.State == models.RolloutStatus_HELD:
		p.plan.Counts.RolloutsHeld++
	}
}

// noteTurn writes the governor's decision into next, the LRP's record:
// admitted now (its operation's history says after how long a wait), or
// queued at a position, with the reason that says so.
func (p *planner) noteTurn(ro *rolloutLRP, next *RolloutRow) {
	t, rec := ro.turn, ro.record
	if t.Admit {
		next.AdmittedAt = p.now
		if rec.Queued() {
			ro.outcome.note(fmt.Sprintf("admitted by the rollout governor after %s in its queue",
				time.Duration(p.now-rec.StartedAt).Round(time.Second)))
		}
	}
	next.QueuePosition, next.QueueReason = t.Position, ""
	if t.Position > 0 {
		next.QueueReason = QueueReason(t, p.cfg.MaxRolloutsInFlight)
		if !rec.Queued() {
			ro.outcome.note(next.QueueReason)
		}
	}
}

// failRollout writes into next what the rollout failing does, for failure
// (why, in words), as action says (models.FailureAction or
// models.VerdictAction):
//   - Revert: the healthy definition is active again (REVERTED), a fast
//     rollout, never judged; the record keeps its judgement, so the
//     verdicts stay visible.
//   - Hold: HELD, held at now; nothing more starts until a resume, a
//     rollback or an abort (planRollout).
//   - Fail: FAILED, the operation that started it ended in ERROR.
func (p *planner) failRollout(ro *rolloutLRP, next *RolloutRow, write *RolloutWrite, failure string, action models.RolloutAction) {
	d, rec := ro.d, ro.record
	switch action {
	case models.Revert:
		healthy := d.HealthyDefinitionID
		*next = RolloutRow{
			ProcessGuid: d.ProcessGuid, State: models.RolloutStatus_REVERTED,
			Reason:       fmt.Sprintf("%s failed, %s; reverting to %s", d.ActiveDefinitionID, failure, healthy),
			DefinitionID: healthy, FailedDefinitionID: d.ActiveDefinitionID,
			StartedAt: p.now, ProgressAt: p.now, OperationID: rec.OperationID,
			// An automatic revert is a fast rollout
			// (models.RolloutStrategy.FastRollout).
			Fast:      true,
			Judgement: rec.Judgement,
			// A revert jumps the governor's queue (QueueJumper) and
			// keeps the failed rollout's slot.
			AdmittedAt: p.now,
		}
		write.SetActiveDefinitionID = healthy
		ro.step.InFlight = 0
		ro.updated = 0
		ro.outcome.note("auto-revert: " + next.Reason)
	case models.Hold:
		j := proto.Clone(rec.Judgement).(*models.RolloutJudgement)
		if j == nil {
			j = &models.RolloutJudgement{}
		}
		j.HeldAt = p.now
		next.Judgement = j
		next.State = models.RolloutStatus_HELD
		next.Reason = "held: " + failure + "; resume, roll back or abort"
		ro.outcome.note(next.Reason)
	default:
		next.State = models.RolloutStatus_FAILED
		next.Reason = failure
		next.FinishedAt = p.now
		ro.outcome.end(models.Operation_ERROR, failure)
	}
}

// bakes reports whether a rollout whose indices all run its definition
// still bakes at now, writing into next what the bake changes: its update
// asked for bake_ms, and bake_ms has not passed since the first pass that
// found every index on the definition (judgement.bake_started_at, which
// that pass sets). The rollout stays PROGRESSING meanwhile, judged as
// before; a failing verdict acts as during the rollout. Worked example,
// bake 10m: every index runs v2 at 12:00; the pass at 12:00 starts the
// bake ("baking: every index runs v2; complete at 12:10:00 unless a
// verdict fails") and wakes at 12:10, when the rollout completes; an index
// that crashes at 12:05 makes the rollout not done, and the bake goes on
// from 12:00 once it runs again.
func (p *planner) bakes(ro *rolloutLRP, next *RolloutRow) bool {
	j := next.Judgement
	if j.GetBakeMs() <= 0 {
		return false
	}
	started := j.GetBakeStartedAt()
	if started == 0 {
		started = p.now
		baking := proto.Clone(j).(*models.RolloutJudgement)
		baking.BakeStartedAt = started
		next.Judgement = baking
	}
	until := started + int64(models.Millis(j.GetBakeMs()))
	if p.now >= until {
		return false
	}
	next.Reason = fmt.Sprintf("baking: every index runs %s; complete at %s unless a verdict fails",
		ro.d.ActiveDefinitionID, time.Unix(0, until).UTC().Format("15:04:05"))
	if j.GetBakeStartedAt() == 0 {
		ro.outcome.note(next.Reason)
	}
	p.wakeAt(until)
	ro.bakeUntil = until
	return true
}

// failedVerdict reports whether rec failed on its analysis: its acting
// verdict did not pass. Such a FAILED rollout does not turn COMPLETE when
// its instances come up, as one failed by the deadline does.
func failedVerdict(rec *RolloutRow) bool {
	v := rec.Judgement.ActingVerdict(rec.DefinitionID)
	return v != nil && v.GetOutcome() != models.AnalysisOutcome_PASS
}

// cleanDefinitions deletes the LRP's definitions that cleanup does not
// keep, and reports whether none is left beyond those it keeps for good
// (active, healthy, the newest history_limit): nothing waits any more for
// a row to let go of one.
func (p *planner) cleanDefinitions(ro *rolloutLRP, rows []row) bool {
	d := ro.d
	referenced := referencedDefinitions(rows)
	cleaned := true
	for i, def := range ro.defs {
		id := def.DefinitionID
		if id == d.ActiveDefinitionID || id == d.HealthyDefinitionID || int32(i) < ro.strategy.HistoryLimit {
			continue
		}
		if referenced[id] {
			cleaned = false
			continue
		}
		p.deleteDefinition(d.ProcessGuid, id, fmt.Sprintf("older than the newest %d definitions, neither active nor healthy, and no instance runs it", ro.strategy.HistoryLimit))
	}
	return cleaned
}

// cleanGoneLRP deletes the definitions of an LRP that is no longer desired
// once no row references them, and then its rollout record.
func (p *planner) cleanGoneLRP(record *RolloutRow, defs []DefinitionRow, rows []row) {
	if len(defs) == 0 {
		p.rolloutWrite(RolloutWrite{
			ProcessGuid: record.ProcessGuid, ExpectModificationIndex: record.ModificationIndex, Delete: true,
		}, "its DesiredLRP is gone and so are its definitions")
		return
	}
	referenced := referencedDefinitions(rows)
	for _, def := range defs {
		if !referenced[def.DefinitionID] {
			p.deleteDefinition(def.ProcessGuid, def.DefinitionID, "its DesiredLRP is gone and no instance runs it")
		}
	}
}

// cleanForgottenLRPs cleans up after the removed LRPs that have a rollout
// record but no row left: reconcileAll never meets them.
func (p *planner) cleanForgottenLRPs() {
	var forgotten []string
	for guid := range p.rollouts {
		if !p.reconciled[guid] {
			forgotten = append(forgotten, guid)
		}
	}
	slices.Sort(forgotten)
	for _, guid := range forgotten {
		p.cleanGoneLRP(p.rollouts[guid], p.definitions[guid], nil)
	}
}

func referencedDefinitions(rows []row) map[string]bool {
	referenced := make(map[string]bool, 2)
	for i := range rows {
		referenced[rows[i].DefinitionID] = true
	}
	return referenced
}

func (p *planner) deleteDefinition(guid, id, why string) {
	p.plan.Writes.DeleteDefinitions = append(p.plan.Writes.DeleteDefinitions, DefinitionRef{ProcessGuid: guid, DefinitionID: id})
	p.plan.Reasons.DeleteDefinitions = append(p.plan.Reasons.DeleteDefinitions, why)
}

func (p *planner) rolloutWrite(w RolloutWrite, why string) {
	p.plan.Writes.Rollouts = append(p.plan.Writes.Rollouts, w)
	p.plan.Reasons.Rollouts = append(p.plan.Reasons.Rollouts, why)
}
