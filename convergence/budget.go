package convergence

import (
	"fmt"

	"github.com/corkboard/corkboard/models"
)

// BudgetIndex is what the disruption budget needs to know about one wanted
// index of a DesiredLRP (0 <= index < instances).
type BudgetIndex struct {
	// Up: the index serves and keeps serving — its ORDINARY instance is
	// RUNNING and routable on a present cell, or its RETIRING instance is
	// RUNNING and routable and has not been told to stop (it serves until
	// its successor is ready), or an autoscaled stand-in covers it.
	Up bool
	// Leaving: not Up, but an instance on its way out still serves it: an
	// EVACUATING instance (its cell drains), or a RETIRING one told to
	// stop. The index goes down when that instance stops, before its
	// replacement is ready.
	Leaving bool
	// Since is when an index that is not Up went down or started leaving
	// (Unix nanoseconds; 0 when unknown).
	Since int64
}

// DisruptionBudget is one DesiredLRP's disruption budget tallied for a
// pass: how many of its wanted indices may be down at once, and how many
// are down or on their way down now, whatever the cause. It is the one
// place the planner asks before a voluntary disruption (TallyBudget).
type DisruptionBudget struct {
	// Instances is the LRP's count (n).
	Instances int32
	// MaxUnavailable (B) is the resolved budget
	// (models.ResolveDisruptionBudget): at least n − B indices keep
	// serving, as far as voluntary disruptions go.
	MaxUnavailable int32
	// Down counts the wanted indices that serve nothing: a crash, a lost
	// cell, an instance not started yet, a stop under way. Involuntary
	// losses count here too; nothing blocks them.
	Down int32
	// Leaving counts the wanted indices served only by an instance on its
	// way out (BudgetIndex.Leaving).
	Leaving int32
	// Since is the earliest Since of the indices down or leaving: how long
	// the budget has been drawn on (0 when nothing is, or unknown).
	Since int64
}

// TallyBudget counts an LRP's wanted indices against its budget: n is the
// instance count, b the resolved budget (models.ResolveDisruptionBudget),
// indices one entry per wanted index, in any order. Every voluntary
// disruption draws from the result:
//
//  1. Spent = Down + Leaving: what is down, and what goes down when an
//     instance on its way out stops.
//  2. Stops = B − Spent (at least 0): how many serving indices a
//     stop-before-start disruption may take down this pass — a rolling
//     update's replacement that stops its old instance at once (its
//     rollback, abort and revert alike).
//  3. Handovers = max(B, 1) − Spent (at least 0): how many evacuations of
//     a draining cell may begin this pass. The evacuating instance serves
//     until its replacement runs — not until it is ready — so each
//     evacuation under way is Leaving and spends 1; a budget of 0 still
//     lets one index at a time hand over, as max_surge 1 does for a
//     rollout, and any index down holds them all.
//  4. A move to another cell or zone, and a rollout's start-before-stop
//     replacement (its surge, its rollback and revert alike), keep the
//     old instance Up until the new one is ready: they spend nothing,
//     but a move starts only while Handovers is above 0.
//
// Releasing an autoscaled stand-in waits for the index it covers to serve,
// and deleting instances above the count (a scale-down) touches no wanted
// index: neither spends anything.
//
// Worked example, 6 instances, budget 1 (n − B = 5):
//
//  1. All 6 up: Spent 0, Stops 1, Handovers 1.
//  2. A drain evacuates index 2 (EVACUATING, its replacement starting):
//     Leaving 1, Spent 1, Stops 0, Handovers 0 — a rollout that would
//     stop an old instance at once, and the drain's next evacuation of
//     this LRP, wait.
//  3. Index 4 crashes as well: Down 1, Spent 2 — below the floor by
//     accident. Nothing voluntary starts; the crash restarts as usual.
//  4. Both replacements run and serve: Spent 0, and the next disruption
//     may start.
//
// With budget 0 the same LRP hands over one index at a time (Handovers 1
// while nothing is spent) and never stops a serving instance first.
func TallyBudget(n, b int32, indices []BudgetIndex) DisruptionBudget {
	t := DisruptionBudget{Instances: max(n, 0), MaxUnavailable: max(b, 0)}
	for _, x := range indices {
		switch {
		case x.Up:
			continue
		case x.Leaving:
			t.Leaving++
		default:
			t.Down++
		}
		if x.Since != 0 && (t.Since == 0 || x.Since < t.Since) {
			t.Since = x.Since
		}
	}
	return t
}

// Spent counts the indices down or going down.
func (t DisruptionBudget) Spent() int32 {
	return t.Down + t.Leaving
}

// Stops is how many serving indices a stop-before-start disruption may
// take down now.
func (t DisruptionBudget) Stops() int32 {
	return max(t.MaxUnavailable-t.Spent(), 0)
}

// Handovers is how many start-before-stop disruptions may begin now.
func (t DisruptionBudget) Handovers() int32 {
	return max(max(t.MaxUnavailable, 1)-t.Spent(), 0)
}

// Floor is the fewest indices voluntary disruptions leave serving:
// Instances − MaxUnavailable.
func (t DisruptionBudget) Floor() int32 {
	return max(t.Instances-t.MaxUnavailable, 0)
}

// Holds says, in words for a BlockedBy detail, what holds the budget:
// "budget 1, spent 1: 1 leaving (evacuating or told to stop), 0 down".
func (t DisruptionBudget) Holds() string {
	return fmt.Sprintf("budget %d, spent %d: %d leaving (evacuating or told to stop), %d down",
		t.MaxUnavailable, t.Spent(), t.Leaving, t.Down)
}

// budgetOf resolves d's disruption budget at instances
// (models.ResolveDisruptionBudget over its stored strategy).
func budgetOf(d *DesiredSchedule, instances int32) int32 {
	return models.ResolveDisruptionBudget(instances, d.DisruptionBudget, storedStrategy(d, instances))
}

// BudgetRow is what the budget reads of one actual row of an LRP.
type BudgetRow struct {
	Index         int32
	Presence      models.ActualLRP_Presence
	State         models.ActualLRP_State
	Routable      bool
	StopRequested bool
	// OnPresentCell: the row names a cell whose presence has not expired.
	OnPresentCell bool
	Since         int64
}

// TallyRows tallies an LRP's budget (TallyBudget) from its rows, in any
// order: n its instances, b its resolved budget, covered the indices
// autoscaled stand-ins serve (nil for none). Rows outside 0..n-1 play no
// part. An index is Up when its ORDINARY row is RUNNING and routable on a
// present cell, or its RETIRING row is RUNNING and routable on a present
// cell and not told to stop; Leaving when not Up but a RETIRING row told
// to stop, or an EVACUATING row, is RUNNING and routable on a present
// cell. A SUSPECT row (its cell lost), and any row on a lost cell, serves
// by chance only: its index counts as down.
// Since is the latest Since of the index's rows.
func TallyRows(n, b int32, rows []BudgetRow, covered map[int32]bool) DisruptionBudget {
	n = max(n, 0)
	indices := make([]BudgetIndex, n)
	for _, r := range rows {
		if r.Index < 0 || r.Index >= n {
			continue
		}
		x := &indices[r.Index]
		x.Since = max(x.Since, r.Since)
		serves := r.State == running && r.Routable
		switch r.Presence {
		case ordinary:
			x.Up = x.Up || serves && r.OnPresentCell
		case retiring:
			// On a lost cell it serves by chance only, as a SUSPECT
			// row does.
			x.Up = x.Up || serves && !r.StopRequested && r.OnPresentCell
			x.Leaving = x.Leaving || serves && r.StopRequested && r.OnPresentCell
		case evacuating:
			x.Leaving = x.Leaving || serves && r.OnPresentCell
		}
	}
	for index := range indices {
		if covered[int32(index)] {
			indices[index].Up = true
		}
	}
	return TallyBudget(n, b, indices)
}

// Evacuation is DecideEvacuation's answer for one instance of a draining
// cell.
type Evacuation struct {
	// Go: hand the instance over now.
	Go bool
	// Overdue: it goes only because the drain's deadline has passed; the
	// budget would hold it. The store records the first such evacuation
	// of a drain (Cell.drain_overdue_at).
	Overdue bool
	// Blocked, when it does not go: budget_exhausted, what holds the
	// budget, since when, and the deadline as the estimate.
	Blocked *models.BlockedBy
}

// DecideEvacuation decides whether an instance of LRP guid on a draining
// cell may be handed over now (the store's EvacuateActualLRP), given
// whether the instance serves (RUNNING and routable), its LRP's budget t
// and the drain's deadline (Unix nanoseconds, 0 for none):
//
//  0. An instance that serves nothing goes: handing it over costs no
//     availability.
//  1. The budget has a handover left (t.Handovers() > 0): it goes.
//  2. Otherwise, at or past a deadline: it goes all the same, Overdue.
//  3. Otherwise it waits (its rep keeps it running and asks again), and
//     Blocked says why: reason budget_exhausted, the detail naming the LRP
//     and what spends its budget, since t.Since, estimate the deadline.
//
// Worked example, web with 4 instances and budget 0, a drain with a
// deadline at 10:10, web/1 evacuating since 10:00 (its replacement
// starting):
//
//  1. 10:01, web/3 asks: Spent 1, Handovers 0 — it waits; blocked since
//     10:00, estimate 10:10.
//  2. 10:02, web/1's replacement serves and its EVACUATING instance stops:
//     Spent 0, Handovers 1 — web/3 goes on its next ask.
//  3. Had web/1's replacement found no cell, web/3 would go at 10:10,
//     Overdue, and the drain would record it.
func DecideEvacuation(guid string, serves bool, t DisruptionBudget, deadline, now int64) Evacuation {
	if !serves || t.Handovers() > 0 {
		return Evacuation{Go: true}
	}
	if deadline != 0 && now >= deadline {
		return Evacuation{Go: true, Overdue: true}
	}
	return Evacuation{Blocked: &models.BlockedBy{
		Reason:   models.BlockedBudgetExhausted,
		Detail:   guid + "'s disruption budget: " + t.Holds(),
		Since:    t.Since,
		Estimate: deadline,
	}}
}

// tallyBudget tallies d's budget over its rows (TallyRows), the indices in
// covered served by autoscaled stand-ins.
func (p *planner) tallyBudget(d *DesiredSchedule, rows []row, instances int32, covered coveredIndices) DisruptionBudget {
	view := make([]BudgetRow, len(rows))
	for i := range rows {
		r := &rows[i]
		view[i] = BudgetRow{Index: r.Index, Presence: r.Presence, State: r.State, Routable: r.Routable,
			StopRequested: r.StopRequested, OnPresentCell: p.cells.isPresent(r.cell), Since: r.Since}
	}
	return TallyRows(instances, budgetOf(d, instances), view, covered)
}
