package models

import "fmt"

// maxBudgetGroupNameBytes bounds a budget group's name (the key column is
// 255 bytes wide on MySQL; 128 leaves room, as for freeze windows).
const maxBudgetGroupNameBytes = 128

// ValidateBudgetGroup checks g as the set call does, naming fields from
// path; the store uses it too.
func ValidateBudgetGroup(path string, g *BudgetGroup) error {
	return g.validate(path)
}

// validate checks a group: a name (validateBudgetGroupName) and a
// max_unavailable that is a count ("2") or a percent ("10%"); it may not
// be empty, since a group exists only to set one. created_at, updated_at
// and requested_by are the board's to set.
func (g *BudgetGroup) validate(path string) error {
	if g == nil {
		return ErrInvalidField(path, "required")
	}
	if err := validateBudgetGroupName(child(path, "name"), g.GetName()); err != nil {
		return err
	}
	if g.GetMaxUnavailable() == "" {
		return ErrInvalidField(child(path, "max_unavailable"), `required: a count like "2" or a percent like "10%"`)
	}
	return validateCountOrPercent(child(path, "max_unavailable"), g.GetMaxUnavailable())
}

// validateBudgetGroupName checks a budget group's name: required, a name
// (validateName), at most maxBudgetGroupNameBytes.
func validateBudgetGroupName(path, name string) error {
	if name == "" {
		return ErrInvalidField(path, "required")
	}
	if err := validateName(path, name); err != nil {
		return err
	}
	if len(name) > maxBudgetGroupNameBytes {
		return ErrInvalidField(path, fmt.Sprintf("must be at most %d bytes, got %d", maxBudgetGroupNameBytes, len(name)))
	}
	return nil
}

// Validate requires a valid group.
func (r *SetBudgetGroupRequest) Validate() error {
	return r.GetGroup().validate("group")
}

// Validate requires a valid name.
func (r *RemoveBudgetGroupRequest) Validate() error {
	return validateBudgetGroupName("name", r.GetName())
}

// Validate accepts every (empty) request.
func (r *BudgetGroupsRequest) Validate() error {
	return nil
}

// ResolveGroupBudget turns a budget group's max_unavailable into a count
// of indices, for a group whose member LRPs have total instances together:
//
//  1. A percent rounds down, as an LRP's budget does: 10% of 12 is 1.
//  2. A count larger than the total counts as the total.
//  3. A group that is not defined (g nil: an LRP names a group nobody set)
//     or whose stored value does not validate has no budget of its own:
//     ok is false, and only each LRP's own budget holds its disruptions.
//
// Worked example, group "checkout" with 12 LRPs of 2 instances (24):
//
//  1. max_unavailable "2": 2 indices of the 24 may be down at once.
//  2. "10%": floor(2.4) = 2. "25%": 6. "0": none — no voluntary
//     disruption in the group starts, except one drain hand-over at a
//     time (convergence.GroupBudget.Handovers).
//  3. "40": 24.
func ResolveGroupBudget(total int32, g *BudgetGroup) (budget int32, ok bool) {
	v := g.GetMaxUnavailable()
	if g == nil || v == "" || validateCountOrPercent("", v) != nil {
		return 0, false
	}
	return scaleCountOrPercent(v, max(total, 0), false), true
}

// BudgetGroupChanged is the event of a group set (before nil when new) or
// removed (after nil) at the request of requestedBy, keyed by the group's
// name.
func BudgetGroupChanged(before, after *BudgetGroup, requestedBy string) Event {
	name := after.GetName()
	if after == nil {
		name = before.GetName()
	}
	return Event{Type: EventBudgetGroupChanged, Key: "budget_group/" + name,
		Payload: &BudgetGroupChangedEvent{Before: before, After: after, RequestedBy: requestedBy}}
}
