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
		return time.Duration(ms) * time.Millisecond
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
		return nil
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
	ms := a.GetScaleDownStabilizationMs()
	if ms < 0 || ms > MaxScaleDownStabilization.Milliseconds() {
		return ErrInvalidField(child(path, "scale_down_stabilization_ms"),
			fmt.Sprintf("must be between 0 (the board's default) and %d, got %d", MaxScaleDownStabilization.Milliseconds(), ms))
	}
	return nil
}

// Describe gives a decision's arithmetic in words, as an AUTOSCALE
// operation's history and `cork get` show it, e.g. "occupied 4,
// ready_target 0.5: ceil(4 / (1 − 0.5)) = 8, within [2, 10]: wanted 8;
// instances 2 → 8".
func (d *AutoscalerDecision) Describe() string {
	if d == nil {
		return ""
	}
	most := "no limit"
	if d.GetMax() >= 0 {
		most = fmt.Sprint(d.GetMax())
	}
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
