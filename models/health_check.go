package models

import "time"

// Health-check timing: what a definition's zeros mean, and the bounds
// validation holds them to (see HealthCheck in definition.proto for why).
const (
	// DefaultHealthCheckIntervalMs is the pause between checks of a
	// healthy instance when interval_ms is 0.
	DefaultHealthCheckIntervalMs = 2000
	// DefaultHealthCheckTimeoutMs is how long one check may take when
	// timeout_ms is 0: long enough that a loaded machine does not fail a
	// check on one slow answer.
	DefaultHealthCheckTimeoutMs = 2000
	// DefaultHealthCheckFailureThreshold is how many checks in a row must
	// fail, when failure_threshold is 0, before a healthy instance is
	// taken out.
	DefaultHealthCheckFailureThreshold = 3

	// MinHealthCheckMs is the smallest interval and timeout: below it a
	// check would hammer the instance or fail on scheduling noise.
	MinHealthCheckMs = 100
	// MaxHealthCheckIntervalMs is 10 minutes.
	MaxHealthCheckIntervalMs = 600000
	// MaxHealthCheckTimeoutMs is one minute.
	MaxHealthCheckTimeoutMs = 60000
	// MaxHealthCheckFailureThreshold bounds failure_threshold.
	MaxHealthCheckFailureThreshold = 100
)

// Interval is the pause between checks of a healthy instance, with the
// default applied.
func (h *HealthCheck) Interval() time.Duration {
	return millisOr(h.GetIntervalMs(), DefaultHealthCheckIntervalMs)
}

// Timeout is how long one check may take, with the default applied.
func (h *HealthCheck) Timeout() time.Duration {
	return millisOr(h.GetTimeoutMs(), DefaultHealthCheckTimeoutMs)
}

// Threshold is failure_threshold with the default applied: how many checks
// in a row must fail before a healthy instance is taken out.
func (h *HealthCheck) Threshold() int {
	if n := h.GetFailureThreshold(); n > 0 {
		return int(n)
	}
	return DefaultHealthCheckFailureThreshold
}

func millisOr(ms, defaultMs int64) time.Duration {
	if ms > 0 {
		return Millis(ms)
	}
	return Millis(defaultMs)
}
