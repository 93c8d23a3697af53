package convergence_test

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// These specs run PlanRolloutStep on random indices and strategies and
// check the step against the rules, recounted here from the facts.
var _ = Describe("Rollout steps for random states", func() {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

	It("never surge past S, never run past S+U in flight, never go below instances-U, and take victims in order", func() {
		for seed := range uint64(3000) {
			r := rand.New(rand.NewPCG(seed, 11))
			indices := randomRolloutIndices(r, now)
			in := randomUpdateStrategy(r)
			s, err := convergence.ResolveRolloutStrategy(int32(len(indices)), in)
			Expect(err).NotTo(HaveOccurred(), "seed %d", seed)
			step := convergence.PlanRolloutStep(indices, s, now)
			checkRolloutStep(indices, s, now, step, seed)

			shuffled := slices.Clone(indices)
			r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			Expect(convergence.PlanRolloutStep(shuffled, s, now)).To(Equal(step), "seed %d: order matters", seed)
		}
	})
})

func randomRolloutIndices(r *rand.Rand, now time.Time) []convergence.RolloutIndex {
	indices := make([]convergence.RolloutIndex, r.IntN(21))
	for i := range indices {
		x := convergence.RolloutIndex{Index: int32(i), Current: r.IntN(3) == 0}
		if r.IntN(4) != 0 {
			x.Serving = true
			x.ServingSince = now.Add(-time.Duration(r.IntN(120)) * time.Second)
			x.Occupied = r.IntN(3) == 0
		}
		if r.IntN(4) == 0 {
			x.Retiring = true
			x.Current = r.IntN(5) != 0 // sometimes superseded
			x.RetiringStopping = r.IntN(3) == 0
			x.RetiringServing = !x.RetiringStopping && r.IntN(4) != 0
		}
		indices[i] = x
	}
	return indices
}

func randomUpdateStrategy(r *rand.Rand) *models.UpdateStrategy {
	if r.IntN(8) == 0 {
		return nil
	}
	countOrPercent := func() string {
		switch r.IntN(3) {
		case 0:
			return ""
		case 1:
			return strconv.Itoa(r.IntN(8))
		default:
			return strconv.Itoa([]int{0, 1, 10, 25, 33, 50, 75, 100}[r.IntN(8)]) + "%"
		}
	}
	return &models.UpdateStrategy{
		MaxSurge:       countOrPercent(),
		MaxUnavailable: countOrPercent(),
		MinReadyMs:     int64(r.IntN(4)) * 20_000,
	}
}

func checkRolloutStep(indices []convergence.RolloutIndex, s convergence.RolloutStrategy, now time.Time, step convergence.RolloutStep, seed uint64) {
	ready := func(x convergence.RolloutIndex) bool {
		return x.Serving && !now.Before(x.ServingSince.Add(s.MinReady))
	}

	// The facts before the step.
	var inFlight, surging, available int32
	var stop []int32
	var candidates []convergence.RolloutIndex
	byIndex := map[int32]convergence.RolloutIndex{}
	for _, x := range indices {
		byIndex[x.Index] = x
		if x.Serving || x.RetiringServing {
			available++
		}
		switch {
		case x.Retiring && ready(x):
			if !x.RetiringStopping {
				stop = append(stop, x.Index)
			}
		case x.Retiring:
			inFlight++
			if !x.RetiringStopping {
				surging++
			}
		case !x.Current:
			candidates = append(candidates, x)
		}
	}
	Expect(step.Stop).To(ConsistOf(stopAsAny(stop)...), "seed %d: stop", seed)
	Expect(slices.IsSorted(step.Stop)).To(BeTrue(), "seed %d: stop in index order", seed)

	// Apply the starts.
	rank := func(x convergence.RolloutIndex) int {
		switch {
		case !x.Serving:
			return 0
		case !x.Occupied:
			return 1
		}
		return 2
	}
	var surgeStarts, availabilityCost int32
	for _, start := range step.Start {
		x, ok := byIndex[start.Index]
		Expect(ok).To(BeTrue(), "seed %d: start of unknown index %d", seed, start.Index)
		Expect(x.Current || x.Retiring).To(BeFalse(), "seed %d: index %d is no candidate", seed, start.Index)
		if !x.Serving {
			Expect(start.StopOld).To(BeTrue(), "seed %d: a not-serving old instance is kept", seed)
		}
		if start.StopOld && x.Serving {
			availabilityCost++
		}
		if !start.StopOld {
			surgeStarts++
		}
	}
	started := int32(len(step.Start))
	limit := s.MaxSurge + s.MaxUnavailable
	floor := s.MinAvailable()

	// The bounds.
	if started > 0 {
		Expect(inFlight+started).To(BeNumerically("<=", limit), "seed %d: in flight", seed)
	}
	if surgeStarts > 0 {
		Expect(surging+surgeStarts).To(BeNumerically("<=", s.MaxSurge), "seed %d: surging", seed)
	}
	if availabilityCost > 0 {
		Expect(available-availabilityCost).To(BeNumerically(">=", floor), "seed %d: availability", seed)
	}
	if available >= floor {
		Expect(available-availabilityCost).To(BeNumerically(">=", floor), "seed %d: availability", seed)
	}
	Expect(step.InFlight).To(Equal(inFlight+started), "seed %d: InFlight", seed)
	Expect(step.Surging).To(Equal(surging+surgeStarts), "seed %d: Surging", seed)
	Expect(step.Available).To(Equal(available-availabilityCost), "seed %d: Available", seed)

	// The step takes a prefix of the victims and stops only when the next
	// one does not fit.
	slices.SortFunc(candidates, func(a, b convergence.RolloutIndex) int {
		if rank(a) != rank(b) {
			return rank(a) - rank(b)
		}
		return int(a.Index - b.Index)
	})
	for i, start := range step.Start {
		Expect(start.Index).To(Equal(candidates[i].Index), "seed %d: not the next victim", seed)
	}
	if int(started) < len(candidates) {
		next := candidates[started]
		full := step.InFlight >= limit
		noRoom := next.Serving && step.Surging >= s.MaxSurge && step.Available-1 < floor
		Expect(full || noRoom).To(BeTrue(), "seed %d: index %d could have started", seed, next.Index)
	}
}

func stopAsAny(stop []int32) []any {
	out := make([]any, len(stop))
	for i, index := range stop {
		out[i] = index
	}
	return out
}
