package convergence

import (
	"fmt"
	"slices"
	"time"

	"github.com/corkboard/corkboard/models"
)

// Autoscaling in a pass (DESIGN §7). For an LRP with autoscaling enabled,
// the pass first decides its instance count, then reconciles it at that
// count, all in the same plan:
//
//   - occupied counts the indices with a RUNNING occupied instance, each
//     index once, whatever its presence: a RETIRING or EVACUATING
//     predecessor that is occupied counts for its index, its replacement
//     adds nothing, and a surge never counts as demand.
//   - wanted = clamp(ceil(occupied / (1 − ready_target)), min, max)
//     (WantedInstances), then Stabilize: up at once, down only to the
//     highest count wanted within the scale-down stabilization window.
//   - A change of the count or of the count wanted is an AutoscaleWrite
//     (applied before every other write of the plan), with the decision
//     and its arithmetic; a change of the count records an AUTOSCALE
//     operation.
//   - A rollout under way works toward this pass's count: it is the
//     instances the rollout and the reconciliation of indices see.
//
// Worked example: web at 2 instances, min 2, max 10, ready_target 0.5,
// window 2m.
//
//  1. 12:00:00, 2 occupied: wanted ceil(2 / 0.5) = 4: up to 4 at once;
//     indices 2 and 3 are created in the same plan.
//  2. 12:00:05, 4 occupied: up to 8.
//  3. 12:01:00, 1 occupied (index 7): wanted 2, but 8 was wanted within
//     the window: stay at 8 and wake at 12:03:00.
//  4. 12:03:00: down to 2, and index 7, occupied, stays (see coverIndices):
//     it stands for index 1, whose idle instance is stopped instead.

// AutoscaleGauge is one autoscaled LRP's figures of a pass, for metrics.
type AutoscaleGauge struct {
	ProcessGuid string
	Occupied    int32
	Wanted      int32
	Instances   int32
	// Max is the LRP's max, -1 for no limit: wanted at max is the alert
	// that the policy would want more than it may have.
	Max int32
}

// autoscale decides the instance count of the autoscaled LRP d from its
// rows (without validation instances), notes the write that records it,
// and returns d at that count (d itself when it does not change).
func (p *planner) autoscale(d *DesiredSchedule, rows []row) *DesiredSchedule {
	a := d.Autoscaling
	dec := &models.AutoscalerDecision{
		At:                p.now,
		Occupied:          occupiedIndices(rows),
		ReadyTarget:       a.ReadyTarget(),
		Min:               a.GetMin(),
		Max:               a.GetMax(),
		PreviousInstances: d.Instances,
	}
	dec.Computed = WantedInstances(dec.Occupied, dec.ReadyTarget, 0, -1)
	dec.Wanted = a.ClampInstances(dec.Computed)
	window := a.ScaleDownStabilization(p.cfg.ScaleDownStabilization)
	history := recommendations(d.Autoscaler)
	st := Stabilize(d.Instances, dec.Wanted, history, p.now, int64(window))
	dec.Instances = st.Instances
	if st.DueAt > 0 {
		p.wakeAt(st.DueAt)
	}
	p.plan.Autoscaled = append(p.plan.Autoscaled, AutoscaleGauge{
		ProcessGuid: d.ProcessGuid, Occupied: dec.Occupied, Wanted: dec.Wanted, Instances: st.Instances, Max: dec.Max,
	})

	// The decision is written when the count, the count wanted, the
	// occupancy or the settings (min, max, ready_target) it was made from
	// changed, so that the last decision shown is never stale.
	last := d.Autoscaler.GetLastDecision()
	wantedChanged := len(history) == 0 || history[len(history)-1] != st.Kept[len(st.Kept)-1]
	sameInputs := last != nil && last.GetOccupied() == dec.Occupied &&
		last.GetMin() == dec.Min && last.GetMax() == dec.Max && last.GetReadyTarget() == dec.ReadyTarget
	if st.Instances == d.Instances && !wantedChanged && sameInputs {
		return d
	}
	dec.Reason = decisionReason(dec, window, st.DueAt)
	status := &models.AutoscalerStatus{LastDecision: dec}
	for _, r := range st.Kept {
		status.Recommendations = append(status.Recommendations, &models.AutoscalerRecommendation{At: r.At, Wanted: r.Wanted})
	}
	w := &p.plan.Writes
	w.Autoscale = append(w.Autoscale, AutoscaleWrite{
		ProcessGuid:             d.ProcessGuid,
		ExpectModificationIndex: d.ModificationIndex,
		PreviousInstances:       d.Instances,
		Instances:               st.Instances,
		Status:                  status,
	})
	p.plan.Reasons.Autoscale = append(p.plan.Reasons.Autoscale, dec.Describe())
	if st.Instances == d.Instances {
		return d
	}
	p.plan.Counts.Desired += int(st.Instances) - int(max(d.Instances, 0))
	scaled := *d
	scaled.Instances = st.Instances
	return &scaled
}

// decisionReason says why the count is what it is.
func decisionReason(dec *models.AutoscalerDecision, window time.Duration, dueAt int64) string {
	switch {
	case dec.Instances > dec.PreviousInstances:
		return fmt.Sprintf("scale up: %d occupied want %d", dec.Occupied, dec.Instances)
	case dec.Instances < dec.PreviousInstances && dec.Instances == dec.Wanted:
		return fmt.Sprintf("scale down: %d wanted for the %s window", dec.Wanted, window)
	case dec.Instances < dec.PreviousInstances:
		return fmt.Sprintf("scale down to %d, the most wanted within the %s window", dec.Instances, window)
	case dec.Instances > dec.Wanted:
		return fmt.Sprintf("keeping %d: wanted within the %s window; lower from %s at the earliest",
			dec.Instances, window, time.Unix(0, dueAt).UTC().Format(time.RFC3339))
	default:
		return fmt.Sprintf("steady at %d", dec.Instances)
	}
}

// occupiedIndices counts the indices with a RUNNING occupied instance.
// rows are in key order, so an index's rows are together.
func occupiedIndices(rows []row) int32 {
	var n int32
	last := int32(-1)
	for i := range rows {
		r := &rows[i]
		if r.Occupied && r.State == running && r.Index >= 0 && r.Index != last {
			n++
			last = r.Index
		}
	}
	return n
}

func recommendations(s *models.AutoscalerStatus) []Recommendation {
	recs := s.GetRecommendations()
	out := make([]Recommendation, 0, len(recs))
	for _, r := range recs {
		out = append(out, Recommendation{At: r.GetAt(), Wanted: r.GetWanted()})
	}
	return out
}

// Scale-down never stops an occupied instance while an idle one could go
// instead. Indices are what instances are named by, and scaling down to n
// leaves indices 0..n-1; an occupied instance at index n or above keeps
// running and stands for one of them: that index is covered — its instance
// (idle, or not started) is stopped instead and nothing is created for it
// — for as long as the stand-in stays occupied. The LRP keeps n instances.
// Once the stand-in is idle it is an extra like any other, and the covered
// index is created again; the idle extra keeps serving until every index
// below n serves (start before stop), then goes — as far as max_surge
// allows beside a rollout's own surge (surgeLeft); beyond it, at once.
//
// Covered are, in this order, indices without an instance, indices whose
// instance is not RUNNING, then RUNNING idle ones from the highest down;
// never an index with an occupied instance or a replacement, suspect or
// evacuation under way. Each stand-in (lowest index first) covers one; a
// stand-in left without an index to cover goes as an extra: nothing idle
// could go instead.
//
// Worked example: web scales down from 25 to 10 (ready_target 0.5) with 5
// occupied instances, at indices 3, 9, 14, 20 and 24.
//
//  1. Stand-ins: 14, 20 and 24, above 9 and occupied. Candidates below
//     10: every index but 3 and 9 (occupied), RUNNING and idle.
//  2. Covered: 8, 7 and 6 (the highest idle): their instances are stopped.
//  3. The 12 idle extras (10–13, 15–19, 21–23) are stopped.
//  4. Running: 0–5 and 9 (7 instances), and 14, 20, 24 standing for 6, 7,
//     8: 10 in all, every occupied instance still running.
//  5. Later, 20 turns idle: it no longer stands for anything; index 6 is
//     created, and 20 stops once 6 serves.

// coveredIndices is a scale-down's indices below the count that an occupied
// instance above it stands for.
type coveredIndices map[int32]bool

// coverIndices applies the rule above to the autoscaled LRP d at its new
// count: it stops the covered indices' instances, keeps the stand-ins, and
// returns the rows left for the rest of the pass (neither the stand-ins'
// nor the covered indices') with the covered indices.
func (p *planner) coverIndices(d *DesiredSchedule, rows []row) ([]row, coveredIndices) {
	n := max(d.Instances, 0)
	var standIns []*row
	for i := range rows {
		r := &rows[i]
		if r.Index >= n && r.Presence == ordinary && r.State == running && r.Occupied && p.cells.isPresent(r.cell) {
			standIns = append(standIns, r)
		}
	}
	if len(standIns) == 0 {
		return rows, nil
	}
	candidates := coverCandidates(rows, n)
	covered := coveredIndices{}
	standing := make(map[*ActualRow]bool, len(standIns))
	for k, standIn := range standIns {
		if k == len(candidates) {
			break
		}
		index := candidates[k].index
		covered[index] = true
		if o := candidates[k].ord; o != nil {
			p.delete(o, fmt.Sprintf("index %d is covered by occupied index %d above instances %d: an idle instance goes instead", index, standIn.Index, n))
		}
		p.placer.keep(standIn.cell)
		p.plan.Counts.Extra++
		standing[standIn.ActualRow] = true
	}
	kept := make([]row, 0, len(rows))
	for i := range rows {
		r := &rows[i]
		if (r.Index >= 0 && r.Index < n && covered[r.Index]) || standing[r.ActualRow] {
			continue
		}
		kept = append(kept, *r)
	}
	return kept, covered
}

// coverCandidate is an index below the count that a stand-in may cover, and
// its ORDINARY row (nil when it has none).
type coverCandidate struct {
	index int32
	ord   *row
	rank  int
}

// coverCandidates lists the indices below n that may be covered, in the order
// they are taken: no instance, an instance that is not RUNNING, then an
// idle RUNNING one from the highest index down.
func coverCandidates(rows []row, n int32) []coverCandidate {
	type slot struct {
		ord      *row
		excluded bool
	}
	slots := make([]slot, n)
	for i := range rows {
		r := &rows[i]
		if r.Index < 0 || r.Index >= n {
			continue
		}
		s := &slots[r.Index]
		if r.Occupied || r.Presence != ordinary {
			s.excluded = true
			continue
		}
		s.ord = r
	}
	var out []coverCandidate
	for index := range slots {
		s := &slots[index]
		if s.excluded {
			continue
		}
		c := coverCandidate{index: int32(index), ord: s.ord}
		switch {
		case s.ord == nil:
			c.rank = 0
		case s.ord.State != running:
			c.rank = 1
		default:
			c.rank = 2
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b coverCandidate) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		if a.rank == 2 {
			return int(b.index - a.index) // the highest idle first
		}
		return int(a.index - b.index)
	})
	return out
}

// unservedIndices counts the indices below d's count, covered ones aside,
// whose ORDINARY instance is not RUNNING and routable on a present cell:
// as many idle extras keep serving meanwhile.
func (p *planner) unservedIndices(d *DesiredSchedule, rows []row, covered coveredIndices) int32 {
	n := max(d.Instances, 0)
	serving := int32(0)
	for i := range rows {
		r := &rows[i]
		if r.Index >= 0 && r.Index < n && !covered[r.Index] && r.Presence == ordinary &&
			r.State == running && r.Routable && p.cells.isPresent(r.cell) {
			serving++
		}
	}
	return n - int32(len(covered)) - serving
}

// surgeLeft is how many instances above d's count its strategy's
// max_surge still allows beside the replacements of a rollout (ro, nil
// when none) under way: the idle extras kept while their indices start
// are a surge too.
func (p *planner) surgeLeft(d *DesiredSchedule, ro *rolloutLRP, instances int32) int32 {
	if ro != nil {
		return max(ro.strategy.MaxSurge-ro.step.Surging, 0)
	}
	return storedStrategy(d, instances).MaxSurge
}
