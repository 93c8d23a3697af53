package models

import (
	"fmt"
	"math"
	"time"
)

// Durations. Every duration a client sends is a whole number of
// milliseconds in an int64 field whose name ends in "_ms", bounded by
// validation to what a user would ask for:
//
//	update_strategy.min_ready_ms                 0 to 1h (MaxMinReadyMs)
//	update_strategy.progress_deadline_ms         0 to 24h (MaxProgressDeadlineMs)
//	edit's min_ready_ms, progress_deadline_ms    as the two above
//	definition.start_timeout_ms                  0 to 1h (MaxStartTimeoutMs)
//	definition.setup_timeout_ms                  0 to 1h (MaxSetupTimeoutMs)
//	definition.health_check.interval_ms          0, or 100ms to 10m (MaxHealthCheckIntervalMs)
//	definition.health_check.timeout_ms           0, or 100ms to 1m (MaxHealthCheckTimeoutMs)
//	autoscaling.scale_down_stabilization_ms      0 to 24h (MaxScaleDownStabilization)
//	staged.safe_rate.per_ms, safe_rate.per_ms    1ms to 7 days (MaxSafeRatePerMs)
//	rollout plan ready_after_ms                  0 to 24h (MaxReadyAfterMs)
//	bake_ms                                      0 to 24h (MaxBake)
//	analysis.interval_ms                         0, or 1s to 1h (MaxAnalysisInterval)
//	analysis.checks[].timeout_ms                 0 to 1m (MaxAnalysisTimeout)
//	freeze window's duration_ms                  1ms to 7 days (MaxFreezeDuration)
//
// (0 means the default wherever a default exists.) One duration is in
// seconds: a domain's ttl_seconds, 0 to ten years (MaxDomainTTLSeconds).
// DurationLimit names the bound of each, and a test walks the validated
// messages' descriptors so that a new "_ms" or "_seconds" field without a
// bound fails it.
//
// A duration is turned into a time.Duration only through Millis, which
// saturates: a value stored before these bounds existed (or built in Go
// without validation) cannot overflow the multiplication, nor a deadline
// computed from it as now plus the duration.
const (
	// MaxMinReadyMs is an hour: an instance that must prove itself
	// longer than that before the rollout moves on is a soak test, not a
	// rolling update.
	MaxMinReadyMs = 3_600_000
	// MaxProgressDeadlineMs is a day.
	MaxProgressDeadlineMs = 86_400_000
	// MaxStartTimeoutMs is an hour: the start covers downloads, setup
	// (itself at most an hour) and the first health check.
	MaxStartTimeoutMs = 3_600_000
	// MaxSafeRatePerMs is a week: a staged phase may grow by a share a
	// week (a day is the more usual period).
	MaxSafeRatePerMs = 7 * 86_400_000
	// MaxMillis is the largest duration Millis returns: ten years. It is
	// far above every bound above and far enough below time.Duration's
	// limit (292 years) that a Unix time in nanoseconds plus it does not
	// overflow either.
	MaxMillis = 10 * 365 * 86_400_000
)

// DurationLimit is the largest value validation accepts for a duration
// field, in the field's unit, by the field's full protobuf name (such as
// "corkboard.models.UpdateStrategy.min_ready_ms"), and whether the field is
// one that a client sends and validation bounds.
func DurationLimit(field string) (int64, bool) {
	limit, ok := durationLimits[field]
	return limit, ok
}

var durationLimits = map[string]int64{
	"corkboard.models.UpdateStrategy.min_ready_ms":             MaxMinReadyMs,
	"corkboard.models.UpdateStrategy.progress_deadline_ms":     MaxProgressDeadlineMs,
	"corkboard.models.EditRolloutRequest.min_ready_ms":         MaxMinReadyMs,
	"corkboard.models.EditRolloutRequest.progress_deadline_ms": MaxProgressDeadlineMs,
	"corkboard.models.LRPDefinition.start_timeout_ms":          MaxStartTimeoutMs,
	"corkboard.models.LRPDefinition.setup_timeout_ms":          MaxSetupTimeoutMs,
	"corkboard.models.HealthCheck.interval_ms":                 MaxHealthCheckIntervalMs,
	"corkboard.models.HealthCheck.timeout_ms":                  MaxHealthCheckTimeoutMs,
	"corkboard.models.Autoscaling.scale_down_stabilization_ms": int64(MaxScaleDownStabilization / time.Millisecond),
	"corkboard.models.SafeRate.per_ms":                         MaxSafeRatePerMs,
	"corkboard.models.RolloutPlanRequest.ready_after_ms":       MaxReadyAfterMs,
	"corkboard.models.UpsertDomainRequest.ttl_seconds":         MaxDomainTTLSeconds,
	"corkboard.models.DesiredLRPUpdate.bake_ms":                MaxBake.Milliseconds(),
	"corkboard.models.DrainCellRequest.deadline_ms":            MaxDrainDeadline.Milliseconds(),
	"corkboard.models.RolloutAnalysis.interval_ms":             MaxAnalysisInterval.Milliseconds(),
	"corkboard.models.AnalysisCheck.timeout_ms":                MaxAnalysisTimeout.Milliseconds(),
	"corkboard.models.FreezeWindow.duration_ms":                MaxFreezeDuration.Milliseconds(),
}

// Millis is ms milliseconds as a time.Duration, clamped to 0 to MaxMillis.
// Every duration field becomes a time.Duration through it.
func Millis(ms int64) time.Duration {
	return time.Duration(min(max(ms, 0), MaxMillis)) * time.Millisecond
}

// validateMillis checks a duration field that may be 0 (unset, or the
// default) or up to limit.
func validateMillis(path string, ms, limit int64) error {
	if err := validateNotNegative(path, ms); err != nil {
		return err
	}
	return validateMillisAtMost(path, ms, limit)
}

// validateMillisAtMost refuses a duration above limit.
func validateMillisAtMost(path string, ms, limit int64) error {
	if ms > limit {
		return ErrInvalidField(path, fmt.Sprintf("must be at most %d (%s), got %d", limit, Millis(limit), ms))
	}
	return nil
}

// saturatingNanos converts a float count of nanoseconds to int64, clamped
// to ±MaxMillis in nanoseconds: a float beyond int64's range has no
// defined conversion.
func saturatingNanos(ns float64) int64 {
	limit := float64(Millis(MaxMillis))
	switch {
	case math.IsNaN(ns):
		return 0
	case ns > limit:
		return int64(Millis(MaxMillis))
	case ns < -limit:
		return -int64(Millis(MaxMillis))
	}
	return int64(ns)
}
