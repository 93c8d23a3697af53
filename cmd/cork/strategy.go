package main

import (
	"strings"
	"time"

	"github.com/corkboard/corkboard/models"
)

// effectiveStrategy shows an update strategy as the board applies it to an
// LRP of the given instances: every field, defaults filled in, e.g.
// "max_surge=25%(3),max_unavailable=0,min_ready=0s,progress_deadline=10m,auto_revert=no,history_limit=10".
// It resolves with the planner's own function, so that what cork shows
// cannot drift from what the board does. One cell with no spaces, so that
// it stays one field of a table row.
func effectiveStrategy(instances int32, s *models.UpdateStrategy) string {
	return strings.Join(effectiveStrategyFields(instances, s), ",")
}

// effectiveStrategyFields are the fields of effectiveStrategy, each
// "name=value", for a page that shows them apart (cork describe).
func effectiveStrategyFields(instances int32, s *models.UpdateStrategy) []string {
	resolved := models.StoredRolloutStrategy(instances, s)
	if s.Validate() != nil {
		// Resolved as the board runs it: every default (see
		// models.StoredRolloutStrategy), so none of s is shown.
		s = nil
	}
	return []string{
		"max_surge=" + resolvedCount(s.GetMaxSurge(), resolved.MaxSurge),
		"max_unavailable=" + resolvedCount(s.GetMaxUnavailable(), resolved.MaxUnavailable),
		"min_ready=" + shortDuration(resolved.MinReady),
		"progress_deadline=" + shortDuration(resolved.ProgressDeadline),
		"auto_revert=" + yesNo(resolved.AutoRevert),
		"history_limit=" + itoa(resolved.HistoryLimit),
	}
}

// resolvedCount is the count the board uses, after what was stored when
// the two differ: a percent ("25%(3)"), a count over the instances
// ("5(3)"), or a 0 surge that 0/0 turns into 1 ("0(1)").
func resolvedCount(stored string, resolved int32) string {
	if stored == "" || stored == itoa(resolved) {
		return itoa(resolved)
	}
	return stored + "(" + itoa(resolved) + ")"
}

// shortDuration is d without the zero units time.Duration.String ends
// with: 10m rather than 10m0s, 1h rather than 1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// budgetGroupLine shows the budget group an LRP names: "group checkout
// (max_unavailable 2 across its LRPs)", "group checkout (undefined)" when
// no group of that name is set (only the LRP's own budget holds it), or
// "-" when it names none.
func budgetGroupLine(lrp *models.DesiredLRP, g *models.BudgetGroup) string {
	name := lrp.GetDisruptionBudget().GetGroup()
	switch {
	case name == "":
		return "-"
	case g == nil:
		return "group " + name + " (undefined)"
	}
	return "group " + name + " (max_unavailable " + g.GetMaxUnavailable() + " across its LRPs)"
}

// effectiveBudget shows an LRP's disruption budget as the board applies
// it, resolved with the board's own function: "25%(2)", "1", or
// "0 (the strategy's max_unavailable)" when none is set.
func effectiveBudget(lrp *models.DesiredLRP) string {
	instances := lrp.GetInstances()
	resolved := models.ResolveDisruptionBudget(instances, lrp.GetDisruptionBudget(),
		models.StoredRolloutStrategy(instances, lrp.GetUpdateStrategy()))
	stored := lrp.GetDisruptionBudget().GetMaxUnavailable()
	if stored == "" || lrp.GetDisruptionBudget().Validate() != nil {
		return itoa(resolved) + " (the strategy's max_unavailable)"
	}
	return resolvedCount(stored, resolved)
}
