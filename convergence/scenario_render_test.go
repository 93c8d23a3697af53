package convergence_test

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// renderPlan writes a plan as the expected part of a scenario file: one
// line per write in the order ApplyConvergence performs them, each with
// its reason after "#", then the counts and the next wake-up.
func renderPlan(p *convergence.Plan, now time.Time) string {
	var b strings.Builder
	w, why := &p.Writes, &p.Reasons
	for i, v := range w.Delete {
		fmt.Fprintf(&b, "delete %s  # %s\n", renderVersion(v), why.Delete[i])
	}
	for i, v := range w.PromoteSuspect {
		fmt.Fprintf(&b, "promote %s  # %s\n", renderVersion(v), why.PromoteSuspect[i])
	}
	for i, v := range w.MarkSuspect {
		fmt.Fprintf(&b, "suspect %s  # %s\n", renderVersion(v), why.MarkSuspect[i])
	}
	for i, c := range w.Create {
		fmt.Fprintf(&b, "create %s/%d domain=%s definition=%s%s  # %s\n", c.ProcessGuid, c.Index,
			c.Domain, c.DefinitionID, renderOutcome(c.CellID, c.PlacementError), why.Create[i])
	}
	for i, v := range w.Restart {
		fmt.Fprintf(&b, "restart %s  # %s\n", renderVersion(v), why.Restart[i])
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
	c := p.Counts
	fmt.Fprintf(&b, "counts desired=%d running=%d claimed=%d unclaimed=%d crashed=%d missing=%d extra=%d "+
		"suspect=%d gave_up=%d unplaced=%d present_cells=%d suspect_cells=%d\n",
		c.Desired, c.Running, c.Claimed, c.Unclaimed, c.Crashed, c.Missing, c.Extra,
		c.Suspect, c.GaveUp, c.Unplaced, c.PresentCells, c.SuspectCells)
	if p.NextWake.IsZero() {
		b.WriteString("next-wake none\n")
	} else {
		fmt.Fprintf(&b, "next-wake +%s\n", p.NextWake.Sub(now))
	}
	return b.String()
}

func renderVersion(v db.RowVersion) string {
	return fmt.Sprintf("%s %s mod=%d", renderKey(v.Key), v.State, v.ModificationIndex)
}

// renderKey writes ORDINARY keys as guid/index and others with their
// presence: guid/index:suspect.
func renderKey(k db.ActualLRPKey) string {
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
