package models

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// MaxReadyAfterMs bounds a rollout plan's ready_after_ms: a day. An
// instance slower than that to start is not a rollout to plan.
const MaxReadyAfterMs = 24 * 60 * 60 * 1000

// Validate checks the update as an update's request does (a bad field is
// named as it would be there: "update.…") and ready_after_ms.
func (r *RolloutPlanRequest) Validate() error {
	update := &UpdateDesiredLRPRequest{ProcessGuid: r.GetProcessGuid(), Update: r.GetUpdate()}
	if err := update.Validate(); err != nil {
		return err
	}
	if ms := r.GetReadyAfterMs(); ms < 0 || ms > MaxReadyAfterMs {
		return ErrInvalidField("ready_after_ms", fmt.Sprintf("must be from 0 to %d (a day), not %d", MaxReadyAfterMs, ms))
	}
	return nil
}

// WriteRolloutPlan writes a plan for people: a header line, a line a pass,
// and the outcome, e.g.
//
//	web: v1 → v2, 4 instances, max_surge 1, max_unavailable 0, min_ready 0s, ready after 10s
//	+0s    start 0(cell-a/z1)  available 4/4  surged 1  updated 0/4
//	+10s   start 1(cell-b/z2)  stop 0  available 4/4  surged 1  updated 1/4
//	…
//	projected: 40s
//
// With reasons, each pass's reasons follow it, indented.
func WriteRolloutPlan(w io.Writer, plan *RolloutPlan, reasons bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s → %s, %d instances, max_surge %d, max_unavailable %d, min_ready %s, ready after %s\n",
		plan.GetProcessGuid(), plan.GetFromDefinitionId(), plan.GetToDefinitionId(), plan.GetInstances(),
		plan.GetMaxSurge(), plan.GetMaxUnavailable(), millis(plan.GetMinReadyMs()), millis(plan.GetReadyAfterMs()))
	for _, pass := range plan.GetPasses() {
		parts := []string{fmt.Sprintf("%-6s", "+"+millis(pass.GetAtMs()).String())}
		if starts := pass.GetStarts(); len(starts) > 0 {
			words := make([]string, len(starts))
			for i, s := range starts {
				words[i] = fmt.Sprintf("%d(%s/%s)", s.GetIndex(), s.GetCellId(), s.GetZone())
			}
			parts = append(parts, "start "+strings.Join(words, " "))
		}
		if stops := pass.GetStops(); len(stops) > 0 {
			words := make([]string, len(stops))
			for i, index := range stops {
				words[i] = fmt.Sprint(index)
			}
			parts = append(parts, "stop "+strings.Join(words, " "))
		}
		parts = append(parts,
			fmt.Sprintf("available %d/%d", pass.GetAvailable(), plan.GetInstances()),
			fmt.Sprintf("surged %d", pass.GetSurged()),
			fmt.Sprintf("updated %d/%d", pass.GetUpdated(), plan.GetInstances()))
		b.WriteString(strings.Join(parts, "  ") + "\n")
		if reasons {
			for _, reason := range pass.GetReasons() {
				b.WriteString("       " + reason + "\n")
			}
		}
	}
	if plan.GetCompletes() {
		fmt.Fprintf(&b, "projected: %s\n", millis(plan.GetProjectedMs()))
	} else {
		fmt.Fprintf(&b, "stops at +%s: %s\n", millis(plan.GetProjectedMs()), plan.GetStoppedReason())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func millis(ms int64) time.Duration {
	return Millis(ms)
}
