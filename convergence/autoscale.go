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
// within the window before now, so that occupancy that comes and goes
// does not start and stop instances each time.
//
// Worked example, window 2m, the LRP at 8 instances:
//
//  1. 12:00:00 wanted 8, 12:00:30 wanted 4, 12:01:00 wanted 6: the
//     highest within the window at 12:01:00 is 8: stay at 8.
//  2. 12:02:10: the 8 of 12:00:00 left the window; the highest since
//     12:00:10 is 6: down to 6.
//  3. 12:02:20 wanted 10: up to 10 at once.

// Recommendation is the count the policy wanted at a moment (Unix
// nanoseconds).
type Recommendation struct {
	At     int64
	Wanted int32
}

// StabilizedInstances is the count to run at now: wanted when it is above
// current, else the highest of wanted and every recommendation of the last
// window (those at or after now − window), never above current.
func StabilizedInstances(current, wanted int32, recent []Recommendation, now int64, window int64) int32 {
	if wanted >= current {
		return wanted
	}
	highest := wanted
	for _, r := range recent {
		if r.At >= now-window && r.At <= now {
			highest = max(highest, r.Wanted)
		}
	}
	return min(highest, current)
}
