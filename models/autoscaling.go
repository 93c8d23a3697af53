package models

import (
	"fmt"
	"math"
	"time"
)

// Autoscaling (DESIGN §7): the settings, their validation and defaults. The
// decision itself is convergence's (convergence/autoscale.go).

// RoomOccupancyPolicy is the one autoscaling policy: keep a share of the
// instances ready (idle) for new work.
const RoomOccupancyPolicy = "roomOccupancy"

// Bounds of the settings.
const (
	MinReadyTarget = 0.1
	MaxReadyTarget = 0.9
	// MaxScaleDownStabilization bounds the window: a day of history is
	// already more than anyone means.
	MaxScaleDownStabilization = 24 * time.Hour
	// DefaultScaleDownStabilization is the board's default window, as
	// Kubernetes' horizontal pod autoscaler.
	DefaultScaleDownStabilization = 2 * time.Minute
)

// IsEnabled reports whether a is set and enabled.
func (a *Autoscaling) IsEnabled() bool {
	return a != nil && a.GetEnabled()
}

// ReadyTarget is the room occupancy policy's ready target.
func (a *Autoscaling) ReadyTarget() float64 {
	return a.GetPolicy().GetParameters().GetRoomOccupancy().GetReadyTarget()
}

// ClampInstances puts n within [min, max] (max −1: no limit).
func (a *Autoscaling) ClampInstances(n int32) int32 {
	if most := a.GetMax(); most >= 0 && n > most {
		n = most
	}
	return max(n, a.GetMin())
}

// ScaleDownStabilization is the LRP's window, or fallback when it sets
// none.
func (a *Autoscaling) ScaleDownStabilization(fallback time.Duration) time.Duration {
	if ms := a.GetScaleDownStabilizationMs(); ms > 0 {
		return Millis(ms)
	}
	return fallback
}

// Validate checks autoscaling settings as a client sends them. Disabled
// settings are kept as they are and not checked, so that turning
// autoscaling off needs nothing but enabled = false.
func (a *Autoscaling) Validate() error {
	return a.validate("autoscaling")
}

// ValidateIn checks settings sent as the autoscaling field of parent
// ("desired_lrp", "update"), naming fields as the request's validation
// does: a store called without the API refuses with the same errors.
func (a *Autoscaling) ValidateIn(parent string) error {
	return a.validate(child(parent, "autoscaling"))
}

func (a *Autoscaling) validate(path string) error {
	if !a.GetEnabled() {
		// The window is a duration, bounded wherever it is written, so
		// that a stored one never surprises when autoscaling is turned
		// on again.
		return a.validateWindow(path)
	}
	switch least := a.GetMin(); {
	case least == 0:
		return ErrInvalidField(child(path, "min"), "must be greater than 0; to run no instances, disable autoscaling and set instances to 0")
	case least < 0:
		return ErrInvalidField(child(path, "min"), fmt.Sprintf("must be greater than 0, got %d", least))
	case least > MaxInstances:
		return ErrInvalidField(child(path, "min"), fmt.Sprintf("must be at most %d, got %d", MaxInstances, least))
	}
	if most := a.GetMax(); most != -1 && (most <= a.GetMin() || most > MaxInstances) {
		return ErrInvalidField(child(path, "max"), fmt.Sprintf("must be greater than min (%d) and at most %d, or -1 for no limit, got %d", a.GetMin(), MaxInstances, most))
	}
	policy := child(path, "policy")
	if kind := a.GetPolicy().GetType(); kind != RoomOccupancyPolicy {
		return ErrInvalidField(child(policy, "type"), fmt.Sprintf("must be %q, got %s", RoomOccupancyPolicy, quoteShort(kind)))
	}
	target := a.ReadyTarget()
	if math.IsNaN(target) || target < MinReadyTarget || target > MaxReadyTarget {
		return ErrInvalidField(child(policy, "parameters.room_occupancy.ready_target"),
			fmt.Sprintf("must be between %g and %g, got %g", MinReadyTarget, MaxReadyTarget, target))
	}
	return a.validateWindow(path)
}

func (a *Autoscaling) validateWindow(path string) error {
	ms := a.GetScaleDownStabilizationMs()
	if ms < 0 || ms > MaxScaleDownStabilization.Milliseconds() {
		return ErrInvalidField(child(path, "scale_down_stabilization_ms"),
			fmt.Sprintf("must be between 0 (the board's default) and %d, got %d", MaxScaleDownStabilization.Milliseconds(), ms))
	}
	return nil
}

// Describe gives enabled settings in words, for an operation's history:
// "min 2, max 10, ready_target 0.5".
func (a *Autoscaling) Describe() string {
	return fmt.Sprintf("min %d, max %s, ready_target %g", a.GetMin(), describeMax(a.GetMax()), a.ReadyTarget())
}

// describeMax is a max in words: the number, or "no limit" for −1.
func describeMax(most int32) string {
	if most < 0 {
		return "no limit"
	}
	return fmt.Sprint(most)
}

// SeedAutoscaler is the autoscaler's state when autoscaling is enabled
// with instances: that count wanted from now (Unix nanoseconds), so that
// it stands for one stabilization window before the autoscaler scales
// down.
func SeedAutoscaler(instances int32, now int64) *AutoscalerStatus {
	return &AutoscalerStatus{
		Recommendations: []*AutoscalerRecommendation{{At: now, Wanted: instances}},
	}
}

// AutoscalerChange is what an update does to the autoscaler's state: Seed
// stores a fresh one, Clear removes it, neither keeps it.
type AutoscalerChange struct {
	Seed  *AutoscalerStatus
	Clear bool
}

// AutoscaledUpdate decides the instance count update leaves before with
// (nil: unchanged) and what becomes of the autoscaler's state:
//
//   - autoscaling set, enabled, before's not: instances clamped into the
//     new bounds (0 becomes min), and the state seeded with that count
//     (SeedAutoscaler);
//   - set, enabled, before's too: instances clamped into the new bounds,
//     the state kept;
//   - set, disabled: instances as the update sets them (else kept), the
//     state cleared;
//   - not set: instances as the update sets them, unless autoscaling is
//     enabled, when the autoscaler owns them and they are kept. The API
//     refuses such an update; a queued one that starts after autoscaling
//     was enabled meanwhile applies without them.
func AutoscaledUpdate(before *DesiredLRP, update *DesiredLRPUpdate, now int64) (*int32, AutoscalerChange) {
	a := update.GetAutoscaling()
	switch {
	case a == nil && before.GetAutoscaling().IsEnabled():
		return nil, AutoscalerChange{}
	case a == nil:
		return update.Instances, AutoscalerChange{}
	case !a.IsEnabled():
		return update.Instances, AutoscalerChange{Clear: true}
	}
	instances := a.ClampInstances(before.GetInstances())
	if before.GetAutoscaling().IsEnabled() {
		return &instances, AutoscalerChange{}
	}
	return &instances, AutoscalerChange{Seed: SeedAutoscaler(instances, now)}
}

// AutoscalingAfter is before's autoscaling once update applies.
func AutoscalingAfter(before *DesiredLRP, update *DesiredLRPUpdate) *Autoscaling {
	if a := update.GetAutoscaling(); a != nil {
		return a
	}
	return before.GetAutoscaling()
}

// Describe gives a decision's arithmetic in words, as an AUTOSCALE
// operation's history and `cork get` show it, e.g. "occupied 4,
// ready_target 0.5: ceil(4 / (1 − 0.5)) = 8, within [2, 10]: wanted 8;
// instances 2 → 8".
func (d *AutoscalerDecision) Describe() string {
	if d == nil {
		return ""
	}
	most := describeMax(d.GetMax())
	clamp := "within"
	if d.GetWanted() != d.GetComputed() {
		clamp = "clamped to"
	}
	text := fmt.Sprintf("occupied %d, ready_target %g: ceil(%d / (1 − %g)) = %d, %s [%d, %s]: wanted %d; instances %d → %d",
		d.GetOccupied(), d.GetReadyTarget(), d.GetOccupied(), d.GetReadyTarget(), d.GetComputed(),
		clamp, d.GetMin(), most, d.GetWanted(), d.GetPreviousInstances(), d.GetInstances())
	if d.GetReason() != "" {
		text += " (" + d.GetReason() + ")"
	}
	return text
}
