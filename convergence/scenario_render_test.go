package convergence_test

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// renderPlan writes a plan as the expected part of a scenario file: one
// line per write in the order ApplyConvergence performs them, each with
// its reason after "#", then the counts and the next wake-up.
func renderPlan(p *convergence.Plan, now time.Time) string {
	var b strings.Builder
	w, why := &p.Writes, &p.Reasons
	for i, a := range w.Autoscale {
		fmt.Fprintf(&b, "autoscale %s  # %s\n", renderAutoscaleWrite(a, now), why.Autoscale[i])
	}
	for i, v := range w.Delete {
		fmt.Fprintf(&b, "delete %s  # %s\n", renderVersion(v), why.Delete[i])
	}
	for i, v := range w.Promote {
		fmt.Fprintf(&b, "promote %s  # %s\n", renderVersion(v), why.Promote[i])
	}
	for i, v := range w.MarkSuspect {
		fmt.Fprintf(&b, "suspect %s  # %s\n", renderVersion(v), why.MarkSuspect[i])
	}
	for i, r := range w.Retire {
		fmt.Fprintf(&b, "retire %s stop=%t  # %s\n", renderVersion(r.Row), r.Stop, why.Retire[i])
	}
	for i, v := range w.RequestStop {
		fmt.Fprintf(&b, "request-stop %s  # %s\n", renderVersion(v), why.RequestStop[i])
	}
	for i, c := range w.Create {
		fmt.Fprintf(&b, "create %s/%d domain=%s definition=%s%s  # %s\n", c.ProcessGuid, c.Index,
			c.Domain, c.DefinitionID, renderOutcome(c.CellID, c.PlacementError), why.Create[i])
	}
	for i, v := range w.Restart {
		fmt.Fprintf(&b, "restart %s  # %s\n", renderVersion(v), why.Restart[i])
	}
	for i, r := range w.Redefine {
		fmt.Fprintf(&b, "redefine %s definition=%s  # %s\n", renderVersion(r.Row), r.DefinitionID, why.Redefine[i])
	}
	for i, v := range w.Unassign {
		fmt.Fprintf(&b, "unassign %s  # %s\n", renderVersion(v), why.Unassign[i])
	}
	for i, pl := range w.Place {
		fmt.Fprintf(&b, "place %s%s  # %s\n", renderVersion(pl.Row), renderOutcome(pl.CellID, ""), why.Place[i])
	}
	for i, f := range w.PlacementFailed {
		fmt.Fprintf(&b, "place-failed %s%s  # %s\n", renderVersion(f.Row), renderOutcome("", f.Reason),
			why.PlacementFailed[i])
	}
	for i, r := range w.Rollouts {
		fmt.Fprintf(&b, "rollout %s  # %s\n", renderRolloutWrite(r, now), why.Rollouts[i])
	}
	for i, d := range w.DeleteDefinitions {
		fmt.Fprintf(&b, "delete-definition %s/%s  # %s\n", d.ProcessGuid, d.DefinitionID, why.DeleteDefinitions[i])
	}
	for i, o := range w.Operations {
		fmt.Fprintf(&b, "operation %s  # %s\n", renderOperationWrite(o, now), why.Operations[i])
	}
	for _, spike := range p.CrashSpikes {
		fmt.Fprintf(&b, "crash-spike %s crashes=%d median=%d\n", spike.CellID, spike.Crashes, spike.Median)
	}
	for _, q := range p.Quarantine {
		fmt.Fprintf(&b, "quarantine %s cleared_at=%d  # %s\n", q.CellID, q.ClearedAt, q.Reason)
	}
	c := p.Counts
	fmt.Fprintf(&b, "counts desired=%d running=%d claimed=%d unclaimed=%d crashed=%d missing=%d extra=%d "+
		"suspect=%d gave_up=%d unplaced=%d present_cells=%d suspect_cells=%d "+
		"rollouts_under_way=%d rollouts_failed=%d rollouts_held=%d\n",
		c.Desired, c.Running, c.Claimed, c.Unclaimed, c.Crashed, c.Missing, c.Extra,
		c.Suspect, c.GaveUp, c.Unplaced, c.PresentCells, c.SuspectCells,
		c.RolloutsUnderWay, c.RolloutsFailed, c.RolloutsHeld)
	if len(c.RolloutsBlocked) > 0 {
		reasons := slices.Sorted(maps.Keys(c.RolloutsBlocked))
		for i, reason := range reasons {
			reasons[i] = fmt.Sprintf("%s:%d", reason, c.RolloutsBlocked[reason])
		}
		fmt.Fprintf(&b, "blocked rollouts=%s too_long=%d\n", strings.Join(reasons, ","), c.RolloutsBlockedTooLong)
	}
	if len(c.OperationsBlocked) > 0 {
		reasons := slices.Sorted(maps.Keys(c.OperationsBlocked))
		for i, reason := range reasons {
			reasons[i] = fmt.Sprintf("%s:%d", reason, c.OperationsBlocked[reason])
		}
		fmt.Fprintf(&b, "blocked operations=%s\n", strings.Join(reasons, ","))
	}
	if p.NextWake.IsZero() {
		b.WriteString("next-wake none\n")
	} else {
		fmt.Fprintf(&b, "next-wake +%s\n", p.NextWake.Sub(now))
	}
	return b.String()
}

func renderAutoscaleWrite(w convergence.AutoscaleWrite, now time.Time) string {
	recs := make([]string, len(w.Status.GetRecommendations()))
	for i, r := range w.Status.GetRecommendations() {
		recs[i] = fmt.Sprintf("%s:%d", renderAt(r.GetAt(), now), r.GetWanted())
	}
	return fmt.Sprintf("%s expect_mod=%d instances=%d->%d recommended=%s", w.ProcessGuid,
		w.ExpectModificationIndex, w.PreviousInstances, w.Instances, strings.Join(recs, ","))
}

func renderVersion(v convergence.RowVersion) string {
	return fmt.Sprintf("%s %s mod=%d", renderKey(v.Key), v.State, v.ModificationIndex)
}

// renderKey writes ORDINARY keys as guid/index and others with their
// presence: guid/index:suspect.
func renderKey(k models.ActualLRPKey) string {
	key := fmt.Sprintf("%s/%d", k.ProcessGuid, k.Index)
	if k.Presence != models.ActualLRP_ORDINARY {
		key += ":" + strings.ToLower(k.Presence.String())
	}
	return key
}

func renderOutcome(cellID, placementError string) string {
	switch {
	case cellID != "":
		return " cell=" + cellID
	case placementError != "":
		return " error=" + strconv.Quote(placementError)
	}
	return ""
}

func renderRolloutWrite(w convergence.RolloutWrite, now time.Time) string {
	out := fmt.Sprintf("%s expect_mod=%d expect_active=%s", w.ProcessGuid, w.ExpectModificationIndex, w.ExpectActiveDefinitionID)
	if w.Delete {
		return out + " delete"
	}
	r := w.Record
	out += fmt.Sprintf(" state=%s definition=%s", r.State, r.DefinitionID)
	if r.FailedDefinitionID != "" {
		out += " failed=" + r.FailedDefinitionID
	}
	at := func(name string, t int64) {
		if t != 0 {
			out += fmt.Sprintf(" %s=%s", name, renderAt(t, now))
		}
	}
	at("started", r.StartedAt)
	at("progress", r.ProgressAt)
	at("finished", r.FinishedAt)
	at("admitted", r.AdmittedAt)
	if r.QueuePosition != 0 {
		out += fmt.Sprintf(" queue_position=%d", r.QueuePosition)
	}
	out += fmt.Sprintf(" updated=%d inflight=%d", r.UpdatedInstances, r.InFlight)
	if r.Fast {
		out += " fast"
	}
	if r.FreezeExemption != "" {
		out += " exempt=" + r.FreezeExemption
	}
	if st := r.Stage; st != nil {
		out += fmt.Sprintf(" stage=%v-%v", st.PriorPercent, st.TargetPercent)
		if rate := st.SafeRate; rate != nil {
			out += fmt.Sprintf(" rate=%v%%/%s", rate.Percent, time.Duration(rate.PerMs)*time.Millisecond)
		}
		at("phase", st.PhaseStartedAt)
		at("watching", st.WatchingSince)
		if st.Paused {
			at("paused", st.PausedAt)
			out += " pause_reason=" + strconv.Quote(st.PauseReason)
		}
		if st.PausedNanos != 0 {
			out += " paused_for=" + time.Duration(st.PausedNanos).String()
		}
	}
	if j := r.Judgement; j != nil {
		if j.GetAnalysis() != nil {
			out += " analysis=" + j.GetAnalysis().Interval().String()
		}
		if j.OnFailure != "" {
			out += " on_failure=" + j.OnFailure
		}
		if j.OnMarginal != "" {
			out += " on_marginal=" + j.OnMarginal
		}
		if j.BakeMs != 0 {
			out += " bake=" + models.Millis(j.BakeMs).String()
		}
		if j.Baseline {
			out += " baseline"
		}
		at("bake_started", j.BakeStartedAt)
		at("held", j.HeldAt)
		at("verdicts_from", j.VerdictsFrom)
		if v := j.LastVerdict(); v != nil {
			out += " verdict=" + v.Outcome.String()
			at("verdict_at", v.At)
		}
	}
	if w.Settled {
		out += " settled"
	}
	if w.SetHealthyDefinitionID != "" {
		out += " set_healthy=" + w.SetHealthyDefinitionID
	}
	if w.SetActiveDefinitionID != "" {
		out += " set_active=" + w.SetActiveDefinitionID
	}
	out += " reason=" + strconv.Quote(r.Reason)
	if r.QueueReason != "" {
		out += " queue_reason=" + strconv.Quote(r.QueueReason)
	}
	if r.BlockedBy != nil {
		out += renderBlockedBy(r.BlockedBy, now)
	}
	return out
}

// renderAt writes a time relative to now, as the state part does.
func renderAt(t int64, now time.Time) string {
	d := time.Unix(0, t).Sub(now)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

func renderOperationWrite(w convergence.OperationWrite, now time.Time) string {
	out := fmt.Sprintf("%s lrp=%s expect_mod=%d", w.ID, w.ProcessGuid, w.ExpectModificationIndex)
	if w.Start {
		out += " start"
	}
	if w.Status != models.Operation_STATUS_UNKNOWN {
		out += fmt.Sprintf(" status=%s reason=%s", w.Status, strconv.Quote(w.Reason))
	}
	if w.FailedValidation {
		out += " failed_validation"
	}
	for _, line := range w.History {
		out += " history=" + strconv.Quote(line)
	}
	if w.LeaseOwner != "" {
		out += fmt.Sprintf(" lease=%s until=%s", w.LeaseOwner, renderAt(w.LeaseExpiresAt, now))
	}
	if w.SetBlockedBy {
		out += renderBlockedBy(w.BlockedBy, now)
	}
	return out
}

// renderBlockedBy writes a blocked_by as the state part gives it, " blocked=none"
// for nil.
func renderBlockedBy(b *models.BlockedBy, now time.Time) string {
	if b == nil {
		return " blocked=none"
	}
	out := " blocked=" + b.Reason + " blocked_since=" + renderAt(b.Since, now)
	if b.Estimate != 0 {
		out += " blocked_estimate=" + renderAt(b.Estimate, now)
	}
	return out + " blocked_detail=" + strconv.Quote(b.Detail)
}
