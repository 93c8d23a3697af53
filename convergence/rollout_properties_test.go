package convergence_test

import (
	"fmt"
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
			s, err := models.ResolveRolloutStrategy(int32(len(indices)), in)
			Expect(err).NotTo(HaveOccurred(), "seed %d", seed)
			step := convergence.PlanRolloutStep(indices, s, s.MaxUnavailable, now)
			checkRolloutStep(indices, s, now, step, seed)

			shuffled := slices.Clone(indices)
			r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			Expect(convergence.PlanRolloutStep(shuffled, s, s.MaxUnavailable, now)).To(Equal(step), "seed %d: order matters", seed)
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

func checkRolloutStep(indices []convergence.RolloutIndex, s models.RolloutStrategy, now time.Time, step convergence.RolloutStep, seed uint64) {
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

// These specs run Compute once on random mid-rollout states — outdated,
// superseded and crashed rows, RETIRING rows told to stop or not, lost
// cells, scaled LRPs, removed LRPs with records, records in every state —
// and check the plan against invariants 1–3 of DESIGN §10 and the record
// rules.
var _ = Describe("Rollout plans for random states", func() {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := convergence.DefaultConfig()

	It("keep one row per key, never take serving indices below instances - U, never delete a definition in use, and write records only on change", func() {
		for seed := range uint64(2000) {
			r := rand.New(rand.NewPCG(seed, 13))
			s := randomRolloutState(r, now)
			plan := convergence.Compute(s, now, cfg)
			Expect(convergence.Compute(s, now, cfg)).To(Equal(plan), "seed %d: not deterministic", seed)

			// Invariant 1: every write finds its row as the snapshot had it
			// (no row written twice, except chained Place), and no key is
			// taken twice: one ORDINARY and one RETIRING row per index.
			after, err := convergence.ApplyPlan(s, plan, now)
			Expect(err).NotTo(HaveOccurred(), "seed %d: %v", seed, plan.Reasons)

			// Invariant 3.
			checkNoDefinitionInUseDeleted(s, plan, seed)
			checkRolloutPlan(s, after, plan, now, seed)
		}
	})
})

// randomRolloutState is a few LRPs (desired or removed) with rows on
// random definitions of v1 < v2 < v3 < v4, RETIRING rows, lost cells and
// rollout records in any state.
func randomRolloutState(r *rand.Rand, now time.Time) *convergence.Snapshot {
	s := &convergence.Snapshot{FreshDomains: []string{"apps"}}
	for i := range 3 {
		c := convergence.CellRow{
			CellID: fmt.Sprintf("cell-%d", i), Zone: fmt.Sprintf("z%d", i%2),
			Capacity:  convergence.Resources{MemoryMB: 4096, DiskMB: 4096, Instances: int32(5 + r.IntN(20))},
			ExpiresAt: now.Add(time.Minute).UnixNano(),
		}
		if r.IntN(6) == 0 {
			c.ExpiresAt = now.Add(-5 * time.Second).UnixNano()
		}
		s.Cells = append(s.Cells, c)
	}
	defs := []string{"v1", "v2", "v3", "v4"}
	states := []models.RolloutStatus_State{
		models.RolloutStatus_NONE, models.RolloutStatus_PROGRESSING, models.RolloutStatus_COMPLETE,
		models.RolloutStatus_FAILED, models.RolloutStatus_REVERTED,
	}
	counts := []string{"", "0", "1", "2", "25%", "50%", "100%"}
	ago := func(max time.Duration) int64 {
		return now.Add(-time.Duration(r.Int64N(int64(max)))).UnixNano()
	}
	for l := range 1 + r.IntN(4) {
		guid := fmt.Sprintf("lrp-%d", l)
		gone := r.IntN(6) == 0
		instances := int32(r.IntN(8))
		if !gone {
			strategy := &models.UpdateStrategy{
				MaxSurge: counts[r.IntN(len(counts))], MaxUnavailable: counts[r.IntN(len(counts))],
				MinReadyMs: int64(r.IntN(3)) * 10_000, AutoRevert: r.IntN(2) == 0, HistoryLimit: int32(r.IntN(4)),
			}
			if r.IntN(5) == 0 {
				strategy = nil
			}
			s.Desired = append(s.Desired, convergence.DesiredSchedule{
				ProcessGuid: guid, Domain: "apps", Instances: instances,
				ActiveDefinitionID: defs[r.IntN(4)], HealthyDefinitionID: defs[r.IntN(4)],
				UpdateStrategy: strategy, MemoryMB: 64, DiskMB: 64,
			})
		}
		if gone || r.IntN(3) != 0 {
			rec := convergence.RolloutRow{
				ProcessGuid: guid, State: states[r.IntN(len(states))], DefinitionID: defs[r.IntN(4)],
				StartedAt: ago(20 * time.Minute), ProgressAt: ago(20 * time.Minute),
				UpdatedInstances: int32(r.IntN(5)), InFlight: int32(r.IntN(3)), ModificationIndex: int64(1 + r.IntN(5)),
			}
			if rec.State == models.RolloutStatus_REVERTED {
				rec.FailedDefinitionID = defs[r.IntN(4)]
			}
			if r.IntN(2) == 0 {
				rec.FinishedAt = ago(time.Minute)
			}
			s.Rollouts = append(s.Rollouts, rec)
			for i := len(defs) - 1; i >= 0; i-- {
				if r.IntN(4) != 0 {
					s.Definitions = append(s.Definitions, convergence.DefinitionRow{
						ProcessGuid: guid, DefinitionID: defs[i], CreatedAt: now.Add(-time.Duration(4-i) * time.Hour).UnixNano(),
					})
				}
			}
		}
		for index := range instances + int32(r.IntN(3)) {
			cell := fmt.Sprintf("cell-%d", r.IntN(3))
			row := convergence.ActualRow{
				ProcessGuid: guid, Index: index, Presence: ordinary, Domain: "apps", CellID: cell,
				InstanceGuid: fmt.Sprintf("%s-%d", guid, index), DefinitionID: defs[r.IntN(4)],
				Since: ago(3 * time.Minute), ModificationIndex: int64(1 + r.IntN(3)), MemoryMB: 64, DiskMB: 64,
			}
			switch r.IntN(8) {
			case 0:
				row.State, row.CellID = unclaimedState, ""
			case 1:
				row.State = unclaimedState
			case 2:
				row.State = claimedState
			case 3:
				row.State, row.CrashCount = crashedState, int32(1+r.IntN(5))
			default:
				row.State, row.Routable, row.Occupied = runningState, r.IntN(6) != 0, r.IntN(3) == 0
			}
			if r.IntN(8) != 0 {
				s.Actual = append(s.Actual, row)
			}
			if r.IntN(3) == 0 {
				ret := row
				ret.Presence = models.ActualLRP_RETIRING
				ret.CellID = fmt.Sprintf("cell-%d", r.IntN(3))
				ret.DefinitionID = defs[r.IntN(4)]
				ret.State, ret.Routable, ret.Occupied = runningState, r.IntN(5) != 0, false
				if r.IntN(6) == 0 {
					ret.State, ret.Routable = crashedState, false
				}
				ret.StopRequested = r.IntN(3) == 0
				ret.Since = ago(2 * time.Minute)
				s.Actual = append(s.Actual, ret)
			}
		}
	}
	slices.SortFunc(s.Actual, func(a, b convergence.ActualRow) int { return compareKeys(a.Key(), b.Key()) })
	return s
}

// checkRolloutPlan checks a plan computed from s (and applied as after)
// against the availability floor (invariant 2), the FAILED rule, the
// record rules, and that an LRP not rolling gets no rollout writes.
func checkRolloutPlan(s, after *convergence.Snapshot, plan *convergence.Plan, now time.Time, seed uint64) {
	present := map[string]bool{}
	for _, c := range s.Cells {
		present[c.CellID] = c.ExpiresAt > now.UnixNano()
	}
	desired := map[string]convergence.DesiredSchedule{}
	for _, d := range s.Desired {
		desired[d.ProcessGuid] = d
	}
	records := map[string]convergence.RolloutRow{}
	for _, rec := range s.Rollouts {
		records[rec.ProcessGuid] = rec
	}
	definitions := map[string]int{}
	for _, def := range s.Definitions {
		definitions[def.ProcessGuid]++
	}
	// serving counts the wanted indices of guid with a RUNNING, routable
	// instance on a present cell that was not told to stop.
	serving := func(rows []convergence.ActualRow, d convergence.DesiredSchedule) int {
		indices := map[int32]bool{}
		for _, r := range rows {
			if r.ProcessGuid == d.ProcessGuid && r.Index < d.Instances && r.State == runningState && r.Routable &&
				!r.StopRequested && present[r.CellID] &&
				(r.Presence == ordinary || r.Presence == models.ActualLRP_RETIRING) {
				indices[r.Index] = true
			}
		}
		return len(indices)
	}
	rolling := map[string]bool{}
	retiringAt := map[models.ActualLRPKey]bool{}
	byKey := map[models.ActualLRPKey]convergence.ActualRow{}
	for _, r := range s.Actual {
		byKey[r.Key()] = r
		d, ok := desired[r.ProcessGuid]
		if r.Presence == models.ActualLRP_RETIRING || (ok && r.Presence == ordinary && r.DefinitionID != d.ActiveDefinitionID) {
			rolling[r.ProcessGuid] = true
		}
		if r.Presence == models.ActualLRP_RETIRING {
			retiringAt[models.ActualLRPKey{ProcessGuid: r.ProcessGuid, Index: r.Index, Presence: ordinary}] = true
		}
	}
	for guid := range records {
		rolling[guid] = true
	}

	// Invariant 2.
	for _, d := range s.Desired {
		st, err := models.ResolveRolloutStrategy(d.Instances, d.UpdateStrategy)
		if err != nil {
			st, _ = models.ResolveRolloutStrategy(d.Instances, nil)
		}
		floor := min(int(st.MinAvailable()), serving(s.Actual, d))
		Expect(serving(after.Actual, d)).To(BeNumerically(">=", floor),
			"seed %d: %s below instances - max_unavailable: %v", seed, d.ProcessGuid, plan.Reasons)
	}

	w := plan.Writes
	failed := func(guid string) bool {
		rec, ok := records[guid]
		return ok && rec.State == models.RolloutStatus_FAILED && rec.DefinitionID == desired[guid].ActiveDefinitionID
	}
	for _, rt := range w.Retire {
		Expect(rolling[rt.Row.Key.ProcessGuid]).To(BeTrue(), "seed %d", seed)
		Expect(rt.Row.State).To(Equal(runningState), "seed %d: retires a row that does not run", seed)
		Expect(failed(rt.Row.Key.ProcessGuid)).To(BeFalse(), "seed %d: a FAILED rollout starts a replacement", seed)
	}
	for _, rd := range w.Redefine {
		guid := rd.Row.Key.ProcessGuid
		Expect(rolling[guid]).To(BeTrue(), "seed %d", seed)
		Expect(rd.DefinitionID).To(Equal(desired[guid].ActiveDefinitionID), "seed %d", seed)
		r := byKey[rd.Row.Key]
		Expect(r.State == runningState && r.Routable && present[r.CellID]).To(BeFalse(), "seed %d: redefines a serving instance", seed)
		if failed(guid) {
			Expect(retiringAt[rd.Row.Key]).To(BeTrue(), "seed %d: a FAILED rollout starts a replacement", seed)
		}
	}
	for _, v := range w.RequestStop {
		Expect(v.Key.Presence).To(Equal(models.ActualLRP_RETIRING), "seed %d", seed)
		Expect(byKey[v.Key].StopRequested).To(BeFalse(), "seed %d: told to stop twice", seed)
	}
	for _, ref := range w.DeleteDefinitions {
		Expect(rolling[ref.ProcessGuid]).To(BeTrue(), "seed %d", seed)
	}
	written := map[string]bool{}
	for _, rw := range w.Rollouts {
		guid := rw.ProcessGuid
		Expect(rolling[guid]).To(BeTrue(), "seed %d: rollout write for %s, which does not roll", seed, guid)
		Expect(written[guid]).To(BeFalse(), "seed %d: two record writes for %s", seed, guid)
		written[guid] = true
		rec, hasRecord := records[guid]
		Expect(rw.ExpectModificationIndex).To(Equal(rec.ModificationIndex), "seed %d", seed)
		Expect(rw.ExpectActiveDefinitionID).To(Equal(desired[guid].ActiveDefinitionID), "seed %d", seed)
		if rw.Delete {
			Expect(desired).NotTo(HaveKey(guid), "seed %d: deletes the record of a desired LRP", seed)
			Expect(definitions[guid]).To(BeZero(), "seed %d: deletes the record while definitions remain", seed)
			continue
		}
		if rw.SetActiveDefinitionID != "" {
			checkRevertStartsNothing(plan, guid, seed)
			Expect(rec.State).To(Equal(models.RolloutStatus_PROGRESSING), "seed %d: reverts a rollout that is not progressing", seed)
			Expect(rw.SetActiveDefinitionID).To(Equal(desired[guid].HealthyDefinitionID), "seed %d", seed)
			Expect(rw.Record.State).To(Equal(models.RolloutStatus_REVERTED), "seed %d", seed)
		}
		if hasRecord && !rw.Settled && rw.SetActiveDefinitionID == "" && rw.SetHealthyDefinitionID == "" {
			stored, next := rec, rw.Record
			stored.ModificationIndex, next.ModificationIndex = 0, 0
			Expect(next).NotTo(Equal(stored), "seed %d: record of %s written unchanged", seed, guid)
		}
	}
}

// checkRevertStartsNothing: the pass that reverts an LRP's rollout starts
// no instance of it (nothing of the definition that failed) and stops
// none (nothing of the healthy one it goes back to).
func checkRevertStartsNothing(plan *convergence.Plan, guid string, seed uint64) {
	w := plan.Writes
	for _, c := range w.Create {
		Expect(c.ProcessGuid).NotTo(Equal(guid), "seed %d: the reverting pass creates %s/%d", seed, guid, c.Index)
	}
	for _, v := range w.Restart {
		Expect(v.Key.ProcessGuid).NotTo(Equal(guid), "seed %d: the reverting pass restarts %+v", seed, v.Key)
	}
	for _, p := range w.Place {
		Expect(p.Row.Key.ProcessGuid).NotTo(Equal(guid), "seed %d: the reverting pass places %+v", seed, p.Row.Key)
	}
	for _, rd := range w.Redefine {
		Expect(rd.Row.Key.ProcessGuid).NotTo(Equal(guid), "seed %d: the reverting pass redefines %+v", seed, rd.Row.Key)
	}
	for _, rt := range w.Retire {
		Expect(rt.Row.Key.ProcessGuid).NotTo(Equal(guid), "seed %d: the reverting pass retires %+v", seed, rt.Row.Key)
	}
	for _, v := range w.RequestStop {
		Expect(v.Key.ProcessGuid).NotTo(Equal(guid), "seed %d: the reverting pass stops %+v", seed, v.Key)
	}
}

func compareKeys(a, b models.ActualLRPKey) int {
	if a.ProcessGuid != b.ProcessGuid {
		if a.ProcessGuid < b.ProcessGuid {
			return -1
		}
		return 1
	}
	if a.Index != b.Index {
		return int(a.Index - b.Index)
	}
	return int(a.Presence - b.Presence)
}
