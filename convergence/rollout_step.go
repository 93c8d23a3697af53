package convergence

import (
	"cmp"
	"slices"
	"time"

	"github.com/corkboard/corkboard/models"
)

// RolloutIndex is what PlanRolloutStep needs to know about one wanted
// index of a DesiredLRP (0 <= Index < instances) in the middle of a rolling
// update. It describes the index's ORDINARY instance and, while a
// replacement is under way, its RETIRING predecessor.
type RolloutIndex struct {
	Index int32
	// Current: the ORDINARY instance runs the active definition. An index
	// without an ORDINARY row counts as current too: Compute creates one
	// on the active definition. An index that is not current is outdated.
	Current bool
	// Serving: the ORDINARY instance is RUNNING and routable, since
	// ServingSince.
	Serving      bool
	ServingSince time.Time
	// Occupied: the ORDINARY instance is busy right now. Only orders the
	// victims: an outdated occupied instance is replaced last.
	Occupied bool
	// DefinitionCreatedAt is when the ORDINARY instance's definition was
	// stored (Unix nanoseconds; 0 when unknown). Among victims of one rank,
	// the oldest definition goes first: after a third definition
	// supersedes a rollout, the first definition's instances are replaced
	// before the intermediate one's.
	DefinitionCreatedAt int64
	// Retiring: the index has a RETIRING row, the predecessor of its
	// ORDINARY instance. The index then has a replacement under way and
	// cannot start another until that row is gone (one RETIRING row per
	// index).
	Retiring bool
	// RetiringServing: the RETIRING instance is RUNNING and routable (its
	// rep has not started draining it).
	RetiringServing bool
	// RetiringStopping: the RETIRING instance has already been told to
	// stop.
	RetiringStopping bool
}

// Replacement is an outdated index whose replacement starts this pass: its
// ORDINARY instance becomes RETIRING and a new ORDINARY instance is created
// on the active definition.
type Replacement struct {
	Index int32
	// StopOld: tell the old (now RETIRING) instance to stop at once rather
	// than keep it serving until its replacement is ready. Set when the old
	// instance serves nothing (it costs no availability to stop), and when
	// the surge is used up and max_unavailable allows one index fewer.
	StopOld bool
}

// RolloutStep is what PlanRolloutStep decided for one pass.
type RolloutStep struct {
	// Start lists the replacements to start, in victim order.
	Start []Replacement
	// Stop lists, by index, the RETIRING instances that may be told to
	// stop: their ORDINARY successor has been RUNNING and routable for
	// MinReady. The successor keeps the index serving.
	Stop []int32
	// InFlight counts replacements under way once Start is applied: a
	// RETIRING row whose successor is not yet ready, or a started
	// replacement.
	InFlight int32
	// Surging counts, once Start and Stop are applied, the indices running
	// a RETIRING instance that has not been told to stop beside a successor
	// that is not ready: the instances above Instances.
	Surging int32
	// Available counts the indices with a RUNNING, routable instance (old
	// or new) once the stops of this step take effect.
	Available int32
	// Wake is the earliest moment a successor that is serving becomes
	// ready (ServingSince + MinReady), so that a pass can run then. Zero
	// when none is waiting.
	Wake time.Time
}

// PlanRolloutStep decides, for one DesiredLRP, which outdated indices start
// a replacement at time now and which RETIRING predecessors may be told to
// stop. indices holds one entry per wanted index, in any order; s is the
// LRP's resolved strategy. It is pure: no I/O, no clock, the same answer
// for the same input whatever the order of indices.
//
// A replacement is ready when the index's ORDINARY instance has been
// RUNNING and routable for s.MinReady; from then on its RETIRING
// predecessor is in Stop (until told to stop) and the replacement no
// longer counts as in flight. An index counts as available when its
// ORDINARY or its RETIRING instance is RUNNING and routable.
//
// Outdated indices without a RETIRING row are the candidates, taken in
// victim order: those whose instance is not serving first (crashed,
// unclaimed, claimed, unroutable: replacing them costs no availability),
// then idle ones, then occupied ones; ties by index. Each is taken while
// fewer than MaxSurge + MaxUnavailable replacements are in flight:
//
//  1. Not serving: start it and stop the old instance at once.
//  2. Serving, fewer than MaxSurge predecessors kept beside a successor
//     that is not ready: start before stop — the old instance keeps
//     serving until its successor is ready (the surge).
//  3. Serving, the surge used up, stopping it still leaves at least
//     MinAvailable indices available, and the LRP's disruption budget has
//     a stop left (stops, DisruptionBudget.Stops: what crashes, drains and
//     other stops have not spent): start it and stop the old instance at
//     once (the unavailability).
//  4. Otherwise nothing more starts this pass.
//
// So a step that starts anything leaves at most MaxSurge + MaxUnavailable
// replacements in flight, adds a start-before-stop one only while fewer
// than MaxSurge predecessors surge, and never takes availability below
// MinAvailable (it does not lower it at all when it is already below).
// Nothing already under way is undone when the strategy shrinks: the
// step only starts fewer. With the defaults (S = 1, U = 0) that is strictly serial
// start-before-stop. Worked example, 10 serving outdated indices, nothing
// in flight:
//
//  1. S = 1, U = 0: starts 1 (start before stop); 10 available.
//  2. S = 3 ("25%"), U = 0: starts 3 (start before stop); 10 available.
//  3. S = 0, U = 1: starts 1, stopping its old instance at once;
//     9 available, the floor.
//  4. S = 3, U = 2 ("25%"/"25%"): starts 5, 3 start before stop and
//     2 stop at once; 8 available, at most 13 instances.
//
// Once a replacement is ready and its predecessor stopped, its slot frees
// up for the next outdated index on a later pass.
//
// A fast rollout (s.Fast, see models.RolloutStrategy.FastRollout) reads
// MaxSurge above as s.SurgeNow of the predecessors surging before the
// step: every outdated index at once as far as s.Room goes. On the same
// 10 serving outdated indices with S = 1, U = 0:
//
//  5. Fast, room 20: starts all 10 (start before stop); 10 available, 20
//     instances.
//  6. Fast, room 4: starts 4 (start before stop); the next 6 wait for
//     room.
func PlanRolloutStep(indices []RolloutIndex, s models.RolloutStrategy, stops int32, now time.Time) RolloutStep {
	var step RolloutStep
	var candidates []*RolloutIndex
	for i := range indices {
		x := &indices[i]
		if x.Serving || x.RetiringServing {
			step.Available++
		}
		if !x.Retiring {
			if !x.Current {
				candidates = append(candidates, x)
			}
			continue
		}
		readyAt := x.ServingSince.Add(s.MinReady)
		if x.Serving && !now.Before(readyAt) {
			if !x.RetiringStopping {
				step.Stop = append(step.Stop, x.Index)
			}
			continue
		}
		step.InFlight++
		if !x.RetiringStopping {
			step.Surging++
		}
		if x.Serving && (step.Wake.IsZero() || readyAt.Before(step.Wake)) {
			step.Wake = readyAt
		}
	}
	slices.Sort(step.Stop)
	slices.SortFunc(candidates, compareVictims)

	// The surge counts the predecessors surging now: a fast rollout's is
	// what the room allows on top of them (models.RolloutStrategy.SurgeNow).
	surge := s.SurgeNow(step.Surging)
	limit := surge + s.MaxUnavailable
	for _, x := range candidates {
		if step.InFlight >= limit {
			break
		}
		switch {
		case !x.Serving:
			step.Start = append(step.Start, Replacement{Index: x.Index, StopOld: true})
		case step.Surging < surge:
			step.Start = append(step.Start, Replacement{Index: x.Index})
			step.Surging++
		case step.Available-1 >= s.MinAvailable() && stops > 0:
			step.Start = append(step.Start, Replacement{Index: x.Index, StopOld: true})
			step.Available--
			stops--
		default:
			// Every later candidate is serving too: none fits.
			return step
		}
		step.InFlight++
	}
	return step
}

// compareVictims orders outdated indices for replacement: not serving
// first, then idle, then occupied; then the oldest definition first; ties
// by index.
func compareVictims(a, b *RolloutIndex) int {
	if c := cmp.Compare(victimRank(a), victimRank(b)); c != 0 {
		return c
	}
	if c := cmp.Compare(a.DefinitionCreatedAt, b.DefinitionCreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.Index, b.Index)
}

func victimRank(x *RolloutIndex) int {
	switch {
	case !x.Serving:
		return 0
	case !x.Occupied:
		return 1
	default:
		return 2
	}
}
