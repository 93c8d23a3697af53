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
	// Fast marks the strategy of a fast rollout (FastRollout): its surge
	// is as large as Room allows (SurgeNow).
	Fast bool
	// Room, of a fast rollout: how many more instances of the active
	// definition the cells that may run the LRP have room for, as the
	// planner counts it this pass.
	Room int32
}

// FastRollout is s for a fast rollout: a rollback or an abort asked with
// fast (`cork rollback --fast`), and every automatic revert. Its target is
// a definition that ran before (the healthy one, or one the operator
// picked), so the rollout does not wait for what only guards a new one,
// and starts as many replacements at once as the cells have room for:
//
//  1. MinReady is 0: a replacement is ready once it is RUNNING and
//     routable, and its predecessor is told to stop then.
//  2. The surge is SurgeNow: every remaining index at once, bounded by
//     room; max_surge no longer bounds it.
//  3. MaxUnavailable stays: an index may stop its old instance at once
//     only as the strategy allows any rollout (once the surge is used
//     up), so never more than max_unavailable indices are down.
//  4. Start before stop stays: an old instance that serves is told to
//     stop only when its replacement is ready (or by rule 3).
//
// Staged gating is not here: a rollback's or a revert's record never
// carries a staged phase, so it goes to every index at once.
//
// room below 0 counts as 0.
func (s RolloutStrategy) FastRollout(room int32) RolloutStrategy {
	s.Fast = true
	s.MinReady = 0
	s.Room = max(room, 0)
	return s
}

// SurgeNow is how many predecessors may run beside a successor that is
// not ready once this step's starts are made, given that surging of them
// already do. For a rollout that is not fast it is MaxSurge. For a fast
// one it is those already surging (they hold their room already) plus as
// many as the room takes, at most Instances:
//
//	min(Instances, surging + Room)
//
// So a fast rollout starts no replacement that placement could not put on
// a cell this pass; it waits for room instead (a rollout that is not fast
// creates it, unplaced, and it waits just the same).
//
// Worked example, 12 instances, max_surge 1, max_unavailable 0, every
// index outdated and serving, nothing in flight:
//
//  1. Room 20 (two cells with 10 free slots each): SurgeNow(0) =
//     min(12, 0 + 20) = 12: all 12 start, start before stop; 24 instances
//     at the most, 12 serving throughout.
//  2. Room 5 instead: SurgeNow(0) = 5: 5 start. A pass later their
//     successors hold that room (Room 0) and are not ready: SurgeNow(5) =
//     5, nothing more starts.
//  3. Those 5 become ready; their predecessors are told to stop and no
//     longer surge, but hold their room until their reps remove them:
//     SurgeNow(0) = 0, nothing starts.
//  4. They are gone (Room 5): SurgeNow(0) = 5: 5 more start; then the
//     last 2 the same way.
//
// With max_unavailable 2 and Room 0, step 3 still starts 2 whose old
// instances stop at once (rule 3 of FastRollout), as any rollout would.
func (s RolloutStrategy) SurgeNow(surging int32) int32 {
	if !s.Fast {
		return s.MaxSurge
	}
	allowed := int64(max(surging, 0)) + int64(s.Room)
	return int32(min(int64(s.Instances), allowed))
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
