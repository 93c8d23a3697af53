package models

import (
	"crypto/hmac"
	"crypto/sha256"
	"math"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"
)

// Staged phases (DESIGN §5, "Staged rollout"). A phase moves a share of an
// LRP's instances onto its active definition; the others stay on the
// healthy one. The share grows linearly from the share the phase started
// at (prior) to its target, at the safe rate, the paused time left out:
//
//	share(t) = min(target, prior + rate% × (t − phase_started_at − paused) / per)
//
// where paused is paused_nanos plus, while paused, t − paused_at (the
// share stands still from paused_at on). Without a rate the share is the
// target at once. The instances the share allows are
//
//	allowed = min(instances, ceil(instances × share / 100))
//
// computed so that a share that is an exact multiple of one instance does
// not round up to the next (6.25% of 16 is 1, not 2), and 0 only while the
// share is 0. Which indices they are is fixed by StageCohort.
//
// Worked example: Storj's schedule, 5% every 6 hours, humans stepping in at
// each doubling, on 16 instances.
//
//  1. Update with staged {target 6.25, safe_rate 5%/6h}, at 00:00. prior 0.
//     At 00:00 the share is 0: allowed 0. At 03:00 it is 2.5%:
//     ceil(16 × 2.5 / 100) = ceil(0.4) = 1. At 07:30 it is 6.25% (the
//     target: 6.25 / 5 × 6h = 7h30m): allowed 1. The phase holds (HOLDING)
//     once that instance runs the new definition.
//  2. Promote --to 12.5 --rate 5%/6h at 10:00: prior 6.25 (the share that
//     stands), phase start 10:00. Right after 10:00 the share passes 6.25%
//     and ceil(16 × 6.26 / 100) = ceil(1.0016) = 2: the second instance
//     moves at once. The share reaches 12.5% at 10:00 + 6.25 / 5 × 6h =
//     17:30, still 2 instances (16 × 12.5% = 2 exactly).
//  3. Promote --to 25 at 18:00, then paused at 19:00 (share 12.5 + 5/6 =
//     13.33%), resumed at 21:00: paused_nanos 2h, so at 22:00 the share is
//     12.5 + 5 × (4h − 2h) / 6h = 14.17%; 25% is reached at
//     18:00 + 2h + 15h = 11:00 the next day.
//  4. Promote --to 50, then --to 100: at 100% the rollout completes as an
//     unstaged one does, and the healthy definition moves.

// StageShare is the share (percent) the phase allows at now, Unix
// nanoseconds.
func StageShare(s *RolloutStage, now int64) float64 {
	if s == nil {
		return 100
	}
	target := s.GetTargetPercent()
	if !growsAtRate(s) {
		return target
	}
	rate := s.GetSafeRate()
	grown := rate.GetPercent() * float64(stageElapsed(s, now)) / float64(Millis(rate.GetPerMs()))
	return math.Min(target, s.GetPriorPercent()+grown)
}

// stageElapsed is how long the phase has run at now, paused time left
// out (nanoseconds, never negative).
func stageElapsed(s *RolloutStage, now int64) int64 {
	end := now
	if s.GetPaused() && s.GetPausedAt() < end {
		end = s.GetPausedAt()
	}
	return max(0, end-s.GetPhaseStartedAt()-s.GetPausedNanos())
}

// shareEpsilon absorbs floating-point error in share × instances: 6.25% of
// 16 computes as 1.0000000000000002 and must allow 1 instance, not 2.
const shareEpsilon = 1e-9

// StageAllowed is how many of instances the share allows:
// min(instances, ceil(instances × share / 100)), 0 only while the share is
// 0.
func StageAllowed(share float64, instances int32) int32 {
	if instances <= 0 || share <= 0 {
		return 0
	}
	n := int32(math.Ceil(float64(instances)*share/100 - shareEpsilon))
	return min(instances, max(n, 1))
}

// StageNextGrowth is when (Unix nanoseconds) the allowed count next grows
// above its count at now, or 0 when it will not without an operator: the
// phase is paused, has no rate, or is at its target.
func StageNextGrowth(s *RolloutStage, instances int32, now int64) int64 {
	if s.GetPaused() || !growsAtRate(s) || instances <= 0 {
		return 0
	}
	share := StageShare(s, now)
	allowed := StageAllowed(share, instances)
	if share >= s.GetTargetPercent() || allowed >= instances {
		return 0
	}
	next := shareAbove(allowed, instances)
	if next > s.GetTargetPercent() {
		return 0
	}
	at := stageReaches(s, next)
	return max(at, now+1)
}

// StageAllowedSince is when (Unix nanoseconds, at most now) the allowed
// count of instances reached the value it has at now: the phase's start
// when it had it from the start (or the phase has no rate).
func StageAllowedSince(s *RolloutStage, instances int32, now int64) int64 {
	start := s.GetPhaseStartedAt()
	allowed := StageAllowed(StageShare(s, now), instances)
	if !growsAtRate(s) || allowed == 0 {
		return min(now, start)
	}
	needed := shareAbove(allowed-1, instances)
	if needed <= s.GetPriorPercent() {
		return min(now, start)
	}
	at := stageReaches(s, needed)
	return min(now, at)
}

// StageTargetAt is when (Unix nanoseconds) the share reaches the phase's
// target, or 0 when it has or while paused.
func StageTargetAt(s *RolloutStage, now int64) int64 {
	if s.GetPaused() || !growsAtRate(s) || StageShare(s, now) >= s.GetTargetPercent() {
		return 0
	}
	return stageReaches(s, s.GetTargetPercent())
}

// growsAtRate reports whether the phase's share grows over time (it has a
// rate) rather than standing at its target from the start.
func growsAtRate(s *RolloutStage) bool {
	return s.GetSafeRate().GetPercent() > 0 && s.GetSafeRate().GetPerMs() > 0
}

// shareAbove is the share (percent) just past the one that allows count of
// instances, by more than StageAllowed forgives: the share at which
// count + 1 are allowed.
func shareAbove(count, instances int32) float64 {
	return (float64(count) + 2*shareEpsilon) * 100 / float64(instances)
}

// stageReaches is when (Unix nanoseconds) the share of s, growing at its
// rate (which it must have) and not paused from now on, reaches share.
func stageReaches(s *RolloutStage, share float64) int64 {
	rate := s.GetSafeRate()
	per := float64(Millis(rate.GetPerMs()))
	// Saturated: a tiny percent per period puts the share's arrival
	// beyond what int64 nanoseconds hold.
	return s.GetPhaseStartedAt() + s.GetPausedNanos() + saturatingNanos(math.Ceil((share-s.GetPriorPercent())/rate.GetPercent()*per))
}

// DefaultStageSeed is the seed of a phase that names none: the LRP and the
// definition it rolls out, so that each rollout of an LRP draws its own
// order and the same rollout always the same one.
func DefaultStageSeed(processGuid, definitionID string) string {
	return processGuid + "/" + definitionID
}

// StageCohort orders an LRP's indices 0 … instances−1 by
// HMAC-SHA256(seed, process_guid + "/" + index), smallest first: the order
// in which a staged phase moves them. The first allowed of it are the
// cohort. The order depends on nothing else, so it is the same on every
// pass, board and restart, and a larger share (or more instances) only
// adds indices to a cohort.
func StageCohort(seed, processGuid string, instances int32) []int32 {
	type keyed struct {
		index int32
		key   [sha256.Size]byte
	}
	keys := make([]keyed, max(instances, 0))
	mac := hmac.New(sha256.New, []byte(seed))
	for i := range keys {
		mac.Reset()
		mac.Write([]byte(processGuid + "/" + strconv.Itoa(i)))
		keys[i].index = int32(i)
		mac.Sum(keys[i].key[:0])
	}
	slices.SortFunc(keys, func(a, b keyed) int {
		if c := slices.Compare(a.key[:], b.key[:]); c != 0 {
			return c
		}
		return int(a.index - b.index)
	})
	order := make([]int32, len(keys))
	for i, k := range keys {
		order[i] = k.index
	}
	return order
}

// NewRolloutStage is the phase an update with staged starts for the
// rollout of processGuid to definitionID at now (Unix nanoseconds): from
// 0% to the target, at the rate asked (nil: at once), with the seed asked
// or DefaultStageSeed, watched for crashes from the start. The store
// writes it with the update; a rollout plan simulates the same phase.
func NewRolloutStage(staged *StagedRollout, processGuid, definitionID string, now int64) *RolloutStage {
	seed := staged.GetSeed()
	if seed == "" {
		seed = DefaultStageSeed(processGuid, definitionID)
	}
	stage := &RolloutStage{
		PriorPercent:   0,
		TargetPercent:  staged.GetTargetPercent(),
		Seed:           seed,
		PhaseStartedAt: now,
		WatchingSince:  now,
	}
	if rate := staged.GetSafeRate(); rate != nil {
		stage.SafeRate = proto.Clone(rate).(*SafeRate)
	}
	return stage
}
