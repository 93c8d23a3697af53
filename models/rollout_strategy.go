package models

import "time"

// Defaults of an UpdateStrategy field left empty or zero (DESIGN §5).
const (
	DefaultProgressDeadline       = 10 * time.Minute
	DefaultHistoryLimit     int32 = 10
)

// RolloutStrategy is a DesiredLRP's UpdateStrategy resolved against its
// instance count: every percent turned into a count, every default filled
// in. The planner's PlanRolloutStep works on it; the store takes the progress
// deadline of a rollout status from it.
type RolloutStrategy struct {
	// Instances is the instance count the strategy was resolved for
	// (negative counts as 0).
	Instances int32
	// MaxSurge (S) is how many replacements may run beside the instance
	// they replace at once: at most Instances + MaxSurge instances.
	MaxSurge int32
	// MaxUnavailable (U) is how many indices may be without a RUNNING,
	// routable instance because of the rollout: at least
	// Instances - MaxUnavailable serving.
	MaxUnavailable int32
	// MinReady is how long a new instance must have been RUNNING and
	// routable before its index counts as replaced.
	MinReady time.Duration
	// ProgressDeadline is how long the rollout may go without an index
	// completing before it fails.
	ProgressDeadline time.Duration
	// AutoRevert re-activates the healthy definition when the rollout
	// fails.
	AutoRevert bool
	// HistoryLimit is how many of the newest definitions are kept.
	HistoryLimit int32
}

// MaxInstances is the most instances (old and new, counting a RETIRING
// predecessor that has not been told to stop) the rollout may run at once:
// Instances + MaxSurge.
func (s RolloutStrategy) MaxInstances() int32 {
	return s.Instances + s.MaxSurge
}

// MinAvailable is the fewest indices that must keep a RUNNING, routable
// instance (old or new): Instances - MaxUnavailable.
func (s RolloutStrategy) MinAvailable() int32 {
	return s.Instances - s.MaxUnavailable
}

// ResolveRolloutStrategy turns an UpdateStrategy (nil means every default)
// into counts and durations for a DesiredLRP of the given instances.
//
// max_surge and max_unavailable are each a count ("3") or a percent of the
// instances ("25%"); empty means the default. The rules, as in
// Kubernetes' deployment controller (ResolveFenceposts), except that 0/0
// makes the surge 1 rather than the unavailability, so that the default
// never takes an index down:
//
//  1. A surge percent rounds up: a surge of 1% still lets a replacement
//     start.
//  2. An unavailable percent rounds down: 1% of fewer than 100 instances
//     takes none down.
//  3. A count larger than the instances counts as the instances: neither
//     can exceed what there is to replace.
//  4. If both come to 0 (0/0, or percents that round to 0), the surge is
//     1: a rollout always moves, one index at a time, never below count.
//  5. Defaults: max_surge 1, max_unavailable 0 — strictly serial,
//     start-before-stop. min_ready 0, progress_deadline 10 min (0 means
//     the default), auto_revert off, history_limit 10 (0 means the
//     default).
//
// Worked example, 10 instances, max_surge "25%", max_unavailable "25%":
//
//  1. S = ceil(10 × 25 / 100) = ceil(2.5) = 3.
//  2. U = floor(10 × 25 / 100) = floor(2.5) = 2.
//  3. So at most 10 + 3 = 13 instances run at once (MaxInstances), and
//     at least 10 - 2 = 8 indices keep a RUNNING routable instance
//     (MinAvailable).
//  4. PlanRolloutStep on 10 serving outdated indices starts 5: 3 that keep
//     their old instance serving until the new one is ready (the surge),
//     and 2 whose old instance is told to stop at once (the
//     unavailability): 13 instances at most, 8 serving at least.
//
// Same 10 instances with the defaults: S = 1, U = 0 — one index at a time,
// never fewer than 10 serving, at most 11 instances. On 3 instances with
// "25%"/"25%": S = ceil(0.75) = 1, U = floor(0.75) = 0.
//
// The strategy is checked with UpdateStrategy.Validate first; a bad field
// comes back as its error, naming the field.
func ResolveRolloutStrategy(instances int32, s *UpdateStrategy) (RolloutStrategy, error) {
	if s != nil {
		if err := s.Validate(); err != nil {
			return RolloutStrategy{}, err
		}
	}
	n := max(instances, 0)
	resolved := RolloutStrategy{
		Instances:        n,
		MaxSurge:         1,
		MaxUnavailable:   0,
		MinReady:         Millis(s.GetMinReadyMs()),
		ProgressDeadline: DefaultProgressDeadline,
		AutoRevert:       s.GetAutoRevert(),
		HistoryLimit:     DefaultHistoryLimit,
	}
	if v := s.GetMaxSurge(); v != "" {
		resolved.MaxSurge = scaleCountOrPercent(v, n, true)
	}
	if v := s.GetMaxUnavailable(); v != "" {
		resolved.MaxUnavailable = scaleCountOrPercent(v, n, false)
	}
	if resolved.MaxSurge == 0 && resolved.MaxUnavailable == 0 {
		resolved.MaxSurge = 1
	}
	if ms := s.GetProgressDeadlineMs(); ms > 0 {
		resolved.ProgressDeadline = Millis(ms)
	}
	if limit := s.GetHistoryLimit(); limit > 0 {
		resolved.HistoryLimit = limit
	}
	return resolved, nil
}

// StoredRolloutStrategy resolves a stored strategy for instances as the
// board runs it: one that no longer validates (the API checks every
// strategy on the way in, so only a stored row can hold one) falls back to
// every default, rather than stopping the LRP's rollouts.
func StoredRolloutStrategy(instances int32, s *UpdateStrategy) RolloutStrategy {
	resolved, err := ResolveRolloutStrategy(instances, s)
	if err != nil {
		resolved, _ = ResolveRolloutStrategy(instances, nil)
	}
	return resolved
}

// scaleCountOrPercent resolves a validated count ("3") or percent ("25%")
// of instances, rounding a percent up or down, and caps it at instances.
func scaleCountOrPercent(value string, instances int32, roundUp bool) int32 {
	// Validate accepted the value, so it parses.
	parsed, percent, _ := ParseCountOrPercent(value)
	n := int64(parsed)
	if percent {
		scaled := int64(instances) * n
		n = scaled / 100
		if roundUp && scaled%100 != 0 {
			n++
		}
	}
	return int32(min(n, int64(instances)))
}
