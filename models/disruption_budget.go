package models

// Validate checks a disruption budget, as validate does.
func (b *DisruptionBudget) Validate() error {
	return b.validate("")
}

// validate checks a disruption budget: max_unavailable is empty (the
// update strategy's), a count such as "1", or a percent of the instances
// such as "25%" (0-100); group is empty (none) or a budget group's name
// (validateBudgetGroupName; the group need not exist). A nil budget is
// valid: the default.
func (b *DisruptionBudget) validate(path string) error {
	if b == nil {
		return nil
	}
	if err := validateCountOrPercent(child(path, "max_unavailable"), b.GetMaxUnavailable()); err != nil {
		return err
	}
	if g := b.GetGroup(); g != "" {
		return validateBudgetGroupName(child(path, "group"), g)
	}
	return nil
}

// ResolveDisruptionBudget turns a DesiredLRP's disruption budget into the
// count of its indices that may be down at once, for a DesiredLRP of the
// given instances whose update strategy resolved to strategy:
//
//  1. Unset (nil, or an empty max_unavailable): the strategy's
//     MaxUnavailable, so an LRP that never set a budget keeps exactly the
//     availability its rollouts promised before budgets existed.
//  2. A percent rounds down, as max_unavailable does: 25% of 6 is 1.
//  3. A count larger than the instances counts as the instances.
//
// Worked example, 8 instances, strategy max_unavailable "25%":
//
//  1. No budget: U = floor(8 × 25 / 100) = 2, so the budget is 2.
//  2. Budget "10%": floor(0.8) = 0 — no index may go down voluntarily.
//  3. Budget "3": 3; budget "20": 8.
//
// A budget that does not validate (only a stored row can hold one: the
// API checks it on the way in) counts as unset. The group plays no part
// here: ResolveGroupBudget resolves the group's own budget.
func ResolveDisruptionBudget(instances int32, b *DisruptionBudget, strategy RolloutStrategy) int32 {
	v := b.GetMaxUnavailable()
	if v == "" || validateCountOrPercent("", v) != nil {
		return strategy.MaxUnavailable
	}
	return scaleCountOrPercent(v, max(instances, 0), false)
}
