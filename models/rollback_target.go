package models

import "fmt"

// RollbackTarget decides where a rollback of the LRP processGuid goes.
// kept is the LRP's kept definitions, each with its marks (Active,
// Healthy) and its history (BecameHealthy, FailedValidation), in any
// order; requested is the definition the caller named (empty: the board
// chooses). It returns the target and, for a named target not known to
// run, a warning; or an error, and then nothing is to change.
//
// A rollback is the operator's safety net, so by default it goes only to
// a definition that ran: one that became healthy (the LRP's first
// definition, or one whose rollout completed) and never failed validation
// (a definition refused by validation never ran as the LRP; going back to
// it would crash-loop until the progress deadline). Among those, other
// than the active one:
//
//   - the healthy definition, when it is one of them: a rollout under way
//     or failed goes back to what ran before it;
//   - otherwise the newest (created_at, then definition id, as
//     Definitions lists them).
//
// None is InvalidStateTransition, saying why. A named definition may be
// any kept one but the active one (another is ResourceNotFound, the
// active one InvalidStateTransition); when it failed validation or never
// became healthy the rollback goes ahead with a warning saying so.
//
// Worked example: hello desired at v1; v2 rolled out and completed; v3
// asked with validate failed validation (VALIDATE ended in ERROR, v2 kept
// running); v4 rolled out and completed. Kept, newest first: v4 (active,
// healthy, became healthy), v3 (failed validation), v2 (became healthy),
// v1 (became healthy).
//
//  1. Plain rollback: the healthy definition is v4, the active one, so
//     the newest other that became healthy and did not fail validation:
//     v2 (v3, newer, failed validation; before this rule it was chosen).
//  2. Rollback to v3 (named): allowed, with a warning that starts "v3
//     failed validation".
//  3. Had v4's rollout been under way (v4 active, v2 still healthy), a
//     plain rollback goes to v2, the healthy definition.
//  4. Had v1 been the only other kept definition, and failed validation
//     too, a plain rollback is InvalidStateTransition.
func RollbackTarget(processGuid string, kept []*DefinitionSummary, requested string) (target, warning string, err error) {
	var active, healthy *DefinitionSummary
	for _, d := range kept {
		if d.Active {
			active = d
		}
		if d.Healthy {
			healthy = d
		}
	}
	activeID := active.GetDefinitionId()
	if requested != "" {
		return namedRollbackTarget(processGuid, kept, requested, activeID)
	}
	ran := func(d *DefinitionSummary) bool {
		return d != nil && !d.Active && d.BecameHealthy && !d.FailedValidation
	}
	if ran(healthy) {
		return healthy.DefinitionId, "", nil
	}
	var best *DefinitionSummary
	for _, d := range kept {
		if ran(d) && (best == nil || newerDefinition(d, best)) {
			best = d
		}
	}
	if best == nil {
		return "", "", NewError(Error_InvalidStateTransition,
			"desired_lrp %q has no kept definition other than its active definition %q that became healthy and did not fail validation: "+
				"nothing known to run to roll back to; name a definition_id to roll back to one anyway", processGuid, activeID)
	}
	return best.DefinitionId, "", nil
}

// namedRollbackTarget is RollbackTarget for a definition the caller named.
func namedRollbackTarget(processGuid string, kept []*DefinitionSummary, requested, activeID string) (string, string, error) {
	var named *DefinitionSummary
	for _, d := range kept {
		if d.DefinitionId == requested {
			named = d
		}
	}
	switch {
	case named == nil:
		return "", "", NewError(Error_ResourceNotFound,
			"definition_id %q: desired_lrp %q has no such definition (it was never stored, or cleaned up)", requested, processGuid)
	case requested == activeID:
		return "", "", NewError(Error_InvalidStateTransition,
			"definition_id %q is already the active definition of desired_lrp %q: nothing to roll back", requested, processGuid)
	case named.FailedValidation:
		return requested, fmt.Sprintf("%s failed validation: it never ran as the LRP, and its instances may crash until the rollout's progress deadline", requested), nil
	case !named.BecameHealthy:
		return requested, fmt.Sprintf("%s never became healthy: no rollout to it completed, so it is not known to run", requested), nil
	}
	return requested, "", nil
}

// newerDefinition orders definitions as Definitions lists them: created_at,
// then definition id.
func newerDefinition(a, b *DefinitionSummary) bool {
	if a.CreatedAt != b.CreatedAt {
		return a.CreatedAt > b.CreatedAt
	}
	return a.DefinitionId > b.DefinitionId
}

// Abortable reports whether the rollout of an LRP whose active and healthy
// definitions are activeID and healthyID can be aborted: it has a healthy
// definition other than its active one to go back to. An abort, the abort
// that canceling a change of definition starts, and the planner's
// auto-revert each go back only then.
func Abortable(activeID, healthyID string) bool {
	return healthyID != "" && healthyID != activeID
}

// AbortTarget decides where an abort of the LRP's rollout goes: its
// healthy definition, which kept (the LRP's kept definitions, as
// RollbackTarget takes them) must hold. Not Abortable is
// InvalidStateTransition, saying why; a healthy definition that is not
// kept (cleanup never deletes it, so only a damaged store lacks it) is
// ResourceNotFound, as a named rollback to it would be.
//
// Worked example: hello desired at v1 (healthy); v2 rolled out and
// completed (healthy v2); v3 is rolling out.
//
//  1. Abort: v2, the healthy definition.
//  2. Had v3 completed (active and healthy v3): InvalidStateTransition,
//     "runs its healthy_definition_id "v3" already".
//  3. Had no rollout of hello ever completed (a legacy row with no healthy
//     definition): InvalidStateTransition, roll back to a definition_id
//     instead.
func AbortTarget(lrp *DesiredLRP, kept []*DefinitionSummary) (string, error) {
	healthy := lrp.GetHealthyDefinitionId()
	if !Abortable(lrp.GetActiveDefinitionId(), healthy) {
		if healthy == "" {
			return "", NewError(Error_InvalidStateTransition,
				"desired_lrp %q has no healthy_definition_id to go back to: no rollout of it has completed yet; roll back to a definition_id instead",
				lrp.GetProcessGuid())
		}
		return "", NewError(Error_InvalidStateTransition,
			"desired_lrp %q runs its healthy_definition_id %q already: there is no rollout to abort", lrp.GetProcessGuid(), healthy)
	}
	for _, d := range kept {
		if d.DefinitionId == healthy {
			return healthy, nil
		}
	}
	return "", NewError(Error_ResourceNotFound,
		"definition_id %q: desired_lrp %q has no such definition (it was never stored, or cleaned up)", healthy, lrp.GetProcessGuid())
}
