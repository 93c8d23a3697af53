package models

import "google.golang.org/protobuf/reflect/protoreflect"

// UpdateChange is what a DesiredLRPUpdate does to the LRP it applies to,
// beyond replacing the fields it sets (routes, annotation,
// update_strategy, autoscaling settings), which take the update's values
// as sent.
type UpdateChange struct {
	// Instances is the instance count the update writes; nil leaves it
	// (AutoscaledUpdate).
	Instances *int32
	// Autoscaler is what becomes of the autoscaler's state.
	Autoscaler AutoscalerChange
	// DefinitionID is the id the update's definition is stored under
	// (EffectiveDefinitionID), "" when it sends none.
	DefinitionID string
	// ActiveDefinitionID is the active definition afterwards: the update's
	// definition when it sends one, else before's.
	ActiveDefinitionID string
	// Activated: a definition other than before's active one becomes
	// active, and a rollout to it starts.
	Activated bool
	// Stage is the staged phase that rollout starts in (update.staged);
	// nil when it is not staged or nothing is activated.
	Stage *RolloutStage
	// Judgement is that rollout's analysis and policy (NewRolloutJudgement);
	// nil when the update asks for none or nothing is activated.
	Judgement *RolloutJudgement
	// FreezeExemption is that rollout's RolloutStatus.freeze_exemption:
	// FreezeExemptOverride when the update overrides the freeze, "" when it
	// does not or nothing is activated.
	FreezeExemption string
	// ScaleFrom and ScaleTo are the instance count before and after. A
	// scale up adds the indices [ScaleFrom, ScaleTo) as UNCLAIMED ORDINARY
	// instances of ActiveDefinitionID; a scale down deletes the UNCLAIMED
	// ORDINARY instances at indices ≥ ScaleTo and leaves claimed and
	// running ones for convergence to delete.
	ScaleFrom, ScaleTo int32
}

// ApplyUpdate decides what update does to before at now. Both the store
// (UpdateDesiredLRP, and convergence starting a queued update) and the
// rollout dry run apply an update through it. It checks nothing: the
// callers refuse a malformed update first.
//
// Worked example: before has 4 instances on v1, autoscaling off; the
// update sends definition v2 (update_identifier "v2"), instances 6 and
// staged {percent 25}, at now = 1000:
//
//  1. Instances: autoscaling is not set and not enabled, so the update's
//     6 (AutoscaledUpdate); the autoscaler's state is left alone.
//  2. DefinitionID and ActiveDefinitionID: "v2" (the update identifier).
//  3. Activated: v2 is not v1, so a rollout from v1 to v2 starts.
//  4. Stage: NewRolloutStage({percent 25}, guid, "v2", 1000); Judgement
//     nil (no analysis, on_failure, on_marginal or bake_ms).
//  5. ScaleFrom 4, ScaleTo 6: indices 4 and 5 are added UNCLAIMED on v2.
//
// The same update sent again finds v2 active: not Activated, no Stage,
// and instances stay 6 (ScaleFrom = ScaleTo = 6).
func ApplyUpdate(before *DesiredLRP, update *DesiredLRPUpdate, now int64) UpdateChange {
	change := UpdateChange{ActiveDefinitionID: before.GetActiveDefinitionId()}
	change.Instances, change.Autoscaler = AutoscaledUpdate(before, update, now)
	change.ScaleFrom, change.ScaleTo = before.GetInstances(), before.GetInstances()
	if change.Instances != nil {
		change.ScaleTo = *change.Instances
	}
	if def := update.GetDefinition(); def != nil {
		change.DefinitionID = EffectiveDefinitionID(def, update.GetUpdateIdentifier())
		change.ActiveDefinitionID = change.DefinitionID
		change.Activated = change.DefinitionID != before.GetActiveDefinitionId()
		if change.Activated && update.GetStaged() != nil {
			change.Stage = NewRolloutStage(update.GetStaged(), before.GetProcessGuid(), change.DefinitionID, now)
		}
		if change.Activated {
			change.Judgement = NewRolloutJudgement(update, now)
			if update.GetOverrideFreeze() {
				change.FreezeExemption = FreezeExemptOverride
			}
		}
	}
	return change
}

// UpdateConverges reports whether convergence may have anything to do
// after update was applied, so that the board asks for a pass over the
// LRP. It has not when every field the update sets is one convergence
// never reads:
//
//  1. annotation: a note for the client;
//  2. routes: the update writes them to the definitions and instances
//     that serve them in its own transaction;
//  3. modification_tag: a condition on the write, not a change.
//
// Any other field set — instances, definition, update_strategy,
// autoscaling, staged, queue, validate, update_identifier, and any field
// added later — asks for a pass. An empty update asks for none.
//
// Worked example: {annotation "v2 notes"} asks for no pass; {annotation
// "v2 notes", instances 3} asks for one (instances: the pass places or
// deletes instances).
func UpdateConverges(update *DesiredLRPUpdate) bool {
	converges := false
	update.ProtoReflect().Range(func(field protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		switch field.Name() {
		case "annotation", "routes", "modification_tag":
			return true
		}
		converges = true
		return false
	})
	return converges
}
