package convergence

import (
	"math"
)

// Autoscaling on occupancy (DESIGN §7; issue 13). This file holds the
// decision's arithmetic; it is not wired into Compute yet (the model,
// storage, stabilization window and scale-down rules come with it).
//
// With the roomOccupancy policy the wanted instance count keeps a share of
// the instances ready (idle) for new work:
//
//	wanted = clamp(ceil(occupied / (1 − ready_target)), min, max)
//
// max −1 means no limit. The division is done in integers, the ready
// target taken in millionths: in floating point 1 − 0.9 is
// 0.09999999999999998, and 5 / (1 − 0.9) = 50.000000000000014 would round
// up to 51 instead of 50 (so would 1 / (1 − 0.8) to 6, and 21 / (1 − 0.3)
// to 31).
//
// Worked examples (occupied, ready_target → wanted; min 1, no max):
//
//  1. 80, 0.5: 80 / 0.5 = 160.
//  2. 50, 0.5: 50 / 0.5 = 100 exactly: 100, not 101.
//  3. 40, 0.3: 40 / 0.7 = 57.14…: 58.
//  4. 35, 0.3: 35 / 0.7 = 50 exactly: 50.
//  5. 5, 0.9: 5 / 0.1 = 50.
//  6. 1, 0.8: 1 / 0.2 = 5.
//  7. 0, any: 0, clamped up to min 1.

// readyTargetScale is the ready target's unit in WantedInstances:
// millionths.
const readyTargetScale = 1_000_000

// WantedInstances is the instance count the roomOccupancy policy wants for
// occupied busy instances: ceil(occupied / (1 − readyTarget)) clamped to
// [least, most], most < 0 meaning no limit. readyTarget is taken to the
// millionth; the API keeps it within [0.1, 0.9].
func WantedInstances(occupied int32, readyTarget float64, least, most int32) int32 {
	ready := int64(math.Round(readyTarget * readyTargetScale))
	busy := readyTargetScale - ready // the share not kept ready, in millionths
	var wanted int64
	if busy > 0 && occupied > 0 {
		wanted = (int64(occupied)*readyTargetScale + busy - 1) / busy
	}
	if most >= 0 {
		wanted = min(wanted, int64(most))
	}
	wanted = max(wanted, int64(least))
	return int32(min(wanted, math.MaxInt32))
}

// Scale-down stabilization (as Kubernetes' HPA): the count goes up as soon
// as the policy wants more, but down only to the highest count it wanted
// at any moment of the window before now, so that occupancy that comes and
// goes does not start and stop instances each time. Only changes of the
// wanted count are kept, each holding until the next: the one in effect
// when the window begins, and every later one.
//
// Worked example, window 2m, the LRP at 8 instances:
//
//  1. 12:00:00 wanted 8, 12:00:30 wanted 4, 12:01:00 wanted 6: at
//     12:01:00 the window began at 11:59:00, and 8 was wanted within it:
//     stay at 8.
//  2. 12:02:10: the window began at 12:00:10, when 8 was still wanted
//     (until 12:00:30): stay at 8. The change is due at 12:02:30.
//  3. 12:02:30: the window begins as 4 takes over; 4 and 6 since: down
//     to 6. 12:00:00's 8 is no longer kept.
//  4. 12:02:40 wanted 10: up to 10 at once.
//  5. 12:03:00 wanted 7, 12:03:20 wanted 9, 12:03:40 wanted 5: at
//     12:03:40 stay at 10, due at 12:05:00, when 7 is in effect as the
//     window begins (the 10 has left it). Then down to 9, the highest
//     left, due at 12:05:40, when 5 takes over from 9: down to 5.

// Recommendation is a count the policy wanted from At (Unix nanoseconds)
// until the next recommendation.
type Recommendation struct {
	At     int64
	Wanted int32
}

// Stabilized is what Stabilize decided.
type Stabilized struct {
	// Instances is the count to run.
	Instances int32
	// Kept are the recommendations the next decision needs, oldest first:
	// the one in effect when the window began, and every later one, the
	// last being the count wanted now.
	Kept []Recommendation
	// DueAt is when the window may let the count go lower (Unix
	// nanoseconds), 0 when it keeps nothing up.
	DueAt int64
}

// Stabilize decides the count to run at now: wanted when it is at least
// current; else the highest count wanted within the window (now − window
// to now), never above current. history holds the recommendations kept
// by the decision before, oldest first; one dated after now (a clock that
// went back) is dropped.
func Stabilize(current, wanted int32, history []Recommendation, now, window int64) Stabilized {
	kept := make([]Recommendation, 0, len(history)+1)
	for _, r := range history {
		if r.At <= now {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 || kept[len(kept)-1].Wanted != wanted {
		kept = append(kept, Recommendation{At: now, Wanted: wanted})
	}
	begins := now - window
	first := 0
	for first+1 < len(kept) && kept[first+1].At <= begins {
		first++
	}
	kept = kept[first:]
	if wanted >= current {
		return Stabilized{Instances: wanted, Kept: kept}
	}
	highest := wanted
	for _, r := range kept {
		highest = max(highest, r.Wanted)
	}
	out := Stabilized{Instances: min(highest, current), Kept: kept}
	if out.Instances > wanted {
		// The count holds while a recommendation of at least it is in
		// the window: until the one after the last such one is in effect
		// when the window begins. (The last one is wanted, below the
		// count, so there is one after.)
		last := 0
		for i, r := range kept {
			if r.Wanted >= out.Instances {
				last = i
			}
		}
		out.DueAt = kept[last+1].At + window
	}
	return out
}
