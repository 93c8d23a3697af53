package convergence

import (
	"fmt"
	"math"
	"slices"
	"strings"

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
	return stopsLeft(t.MaxUnavailable, t.Spent())
}

// Handovers is how many start-before-stop disruptions may begin now.
func (t DisruptionBudget) Handovers() int32 {
	return handoversLeft(t.MaxUnavailable, t.Spent())
}

// stopsLeft is what a budget of maxUnavailable with spent used leaves for
// stop-before-start disruptions, and handoversLeft what it leaves for
// start-before-stop ones: at least one at a time while nothing is spent,
// even with a budget of 0 (an LRP's budget and a group's alike).
func stopsLeft(maxUnavailable, spent int32) int32 {
	return max(maxUnavailable-spent, 0)
}

func handoversLeft(maxUnavailable, spent int32) int32 {
	return max(max(maxUnavailable, 1)-spent, 0)
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
// whether the instance serves (RUNNING and routable), its LRP's budget t,
// its budget group g (nil for none) and the drain's deadline (Unix
// nanoseconds, 0 for none):
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
//
// When the LRP belongs to a budget group (g not nil; nil for none, or a
// group that is not defined), step 1 needs a handover left in both
// (GroupHandovers), and a group that holds the instance is what Blocked
// names: "web's disruption budget group checkout: budget 2, spent 2
// (web-a 1, web-b 1)", since the group's Since.
func DecideEvacuation(guid string, serves bool, t DisruptionBudget, g *GroupBudget, deadline, now int64) Evacuation {
	if !serves || GroupHandovers(t, g) > 0 {
		return Evacuation{Go: true}
	}
	if deadline != 0 && now >= deadline {
		return Evacuation{Go: true, Overdue: true}
	}
	blocked := &models.BlockedBy{
		Reason:   models.BlockedBudgetExhausted,
		Detail:   guid + "'s disruption budget: " + t.Holds(),
		Since:    t.Since,
		Estimate: deadline,
	}
	if t.Handovers() > 0 {
		// Only the group holds it.
		blocked.Detail = guid + "'s disruption budget " + g.Holds()
		blocked.Since = g.Since
	}
	return Evacuation{Blocked: blocked}
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

// GroupBudget is one budget group (models.BudgetGroup) tallied for a
// pass: the disruption budget that the DesiredLRPs naming the group share
// (DisruptionBudget.group), on top of each one's own. TallyGroup builds
// it; the planner draws it down (Draw) as it decides LRP after LRP, in
// process guid order.
type GroupBudget struct {
	// Name is the group's name.
	Name string
	// Instances is the members' instances together.
	Instances int32
	// MaxUnavailable is the group's budget resolved over Instances
	// (models.ResolveGroupBudget).
	MaxUnavailable int32
	// Spent is the members' Spent() together, and what this pass's
	// decisions drew since (Draw).
	Spent int32
	// Since is the earliest Since of the members' budgets drawn on.
	Since int64
	// Members are the members that spend something, in process guid
	// order, with what each spends: for Holds.
	Members []GroupMember
}

// GroupMember is one member of a budget group and its budget, as
// TallyGroup reads it; in GroupBudget.Members, what it spends.
type GroupMember struct {
	ProcessGuid string
	Budget      DisruptionBudget
}

// TallyGroup tallies budget group g over its members (each LRP whose
// DisruptionBudget.group names g, with its own budget tallied by
// TallyBudget, in any order). It returns nil when g is nil — an LRP that
// names a group nobody defined has no group budget, only its own:
//
//  1. Instances = the sum of the members' instances; MaxUnavailable =
//     models.ResolveGroupBudget over it (a percent rounds down).
//  2. Spent = the sum of the members' Spent(): involuntary losses count,
//     as they do for each LRP, and nothing blocks them.
//  3. Stops = MaxUnavailable − Spent and Handovers = max(MaxUnavailable,
//  1. − Spent (both at least 0), as for one LRP (TallyBudget): an LRP
//     of the group may start a voluntary disruption only while both its
//     own budget and the group's have room (GroupStops, GroupHandovers).
//  4. Each disruption the planner starts is drawn from the group at once
//     (Draw), before the next member is decided, so two members cannot
//     both take the group's last unit in one pass.
//
// Worked example, group checkout with budget "2" and members web-a and
// web-b of 6 instances each, each with its own budget 2:
//
//  1. All 12 serve: Spent 0, Stops 2. web-a rolls out first (guid order)
//     and may stop 2 old instances at once (its own Stops 2, the group's
//     2); the planner draws 2: the group's Stops is 0.
//  2. web-b, in the same pass, wants to roll out too: its own Stops is 2,
//     but the group's is 0 — it stops nothing; its blocked_by says
//     "group checkout: budget 2, spent 2 (web-a 2)".
//  3. Next pass, one of web-a's replacements serves: Spent 1, Stops 1, and
//     web-a (first in guid order) takes it again unless its own budget is
//     spent; a drain on web-b waits for the group too (Handovers 0 while
//     Spent is 2).
//  4. A crash in web-b while Spent is 2: Spent 3. Nothing voluntary starts
//     in the group until it is below 2 again; the crash restarts as usual.
func TallyGroup(g *models.BudgetGroup, members []GroupMember) *GroupBudget {
	if g == nil {
		return nil
	}
	t := &GroupBudget{Name: g.GetName()}
	for _, m := range members {
		t.Instances += m.Budget.Instances
	}
	t.MaxUnavailable, _ = models.ResolveGroupBudget(t.Instances, g)
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(a, b GroupMember) int { return strings.Compare(a.ProcessGuid, b.ProcessGuid) })
	for _, m := range sorted {
		t.draw(m.ProcessGuid, m.Budget.Spent(), m.Budget.Since)
	}
	return t
}

// Stops is how many serving indices of the group's members stop-before-
// start disruptions may take down now, together; MaxInt32 for no group.
func (g *GroupBudget) Stops() int32 {
	if g == nil {
		return math.MaxInt32
	}
	return stopsLeft(g.MaxUnavailable, g.Spent)
}

// Handovers is how many start-before-stop disruptions (drains' hand-overs)
// may begin now in the group; MaxInt32 for no group.
func (g *GroupBudget) Handovers() int32 {
	if g == nil {
		return math.MaxInt32
	}
	return handoversLeft(g.MaxUnavailable, g.Spent)
}

// Floor is the fewest of the members' indices that voluntary disruptions
// leave serving: Instances − MaxUnavailable.
func (g *GroupBudget) Floor() int32 {
	return max(g.Instances-g.MaxUnavailable, 0)
}

// Draw takes n from the group for a disruption of member guid that this
// pass starts (n serving indices it takes down), so that the members
// decided after it see what is left. A nil group takes nothing.
func (g *GroupBudget) Draw(guid string, n int32) {
	if g == nil || n <= 0 {
		return
	}
	g.draw(guid, n, 0)
}

func (g *GroupBudget) draw(guid string, n int32, since int64) {
	if n <= 0 {
		return
	}
	g.Spent += n
	if since != 0 && (g.Since == 0 || since < g.Since) {
		g.Since = since
	}
	i, found := slices.BinarySearchFunc(g.Members, guid, func(m GroupMember, guid string) int {
		return strings.Compare(m.ProcessGuid, guid)
	})
	if !found {
		g.Members = slices.Insert(g.Members, i, GroupMember{ProcessGuid: guid})
	}
	g.Members[i].Budget.Down += n
}

// maxHoldsMembers bounds the members Holds names.
const maxHoldsMembers = 5

// Holds says, in words for a BlockedBy detail, what holds the group:
// "group checkout: budget 2, spent 2 (web-a 1, web-b 1)", the members
// that spend something in process guid order, at most five of them and
// how many more.
func (g *GroupBudget) Holds() string {
	var spenders []string
	for i, m := range g.Members {
		if i == maxHoldsMembers {
			spenders = append(spenders, fmt.Sprintf("%d more", len(g.Members)-i))
			break
		}
		spenders = append(spenders, fmt.Sprintf("%s %d", m.ProcessGuid, m.Budget.Spent()))
	}
	said := fmt.Sprintf("group %s: budget %d, spent %d", g.Name, g.MaxUnavailable, g.Spent)
	if len(spenders) > 0 {
		said += " (" + strings.Join(spenders, ", ") + ")"
	}
	return said
}

// GroupStops is how many serving indices the LRP with budget t may take
// down now with a stop-before-start disruption, within its group g too
// (nil for none): the fewer of the two budgets' Stops.
func GroupStops(t DisruptionBudget, g *GroupBudget) int32 {
	return min(t.Stops(), g.Stops())
}

// GroupHandovers is how many start-before-stop disruptions of the LRP
// with budget t may begin now, within its group g too (nil for none).
func GroupHandovers(t DisruptionBudget, g *GroupBudget) int32 {
	return min(t.Handovers(), g.Handovers())
}

// tallyGroups tallies every defined budget group over its members before
// the LRPs are decided (TallyGroup): each member's own budget over its
// rows, at its stored instances, with no autoscaled stand-in counted (the
// group's tally comes before autoscaling decides; a stand-in only makes a
// member look more spent than it is). desired and p.rows are in process
// guid order.
func (p *planner) tallyGroups(desired []*DesiredSchedule, groups []*models.BudgetGroup) {
	if len(groups) == 0 {
		return
	}
	defined := make(map[string]*models.BudgetGroup, len(groups))
	for _, g := range groups {
		defined[g.GetName()] = g
	}
	members := map[string][]GroupMember{}
	ri := 0
	for _, d := range desired {
		name := d.DisruptionBudget.GetGroup()
		for ri < len(p.rows) && p.rows[ri].ProcessGuid < d.ProcessGuid {
			ri++
		}
		end := ri
		for end < len(p.rows) && p.rows[end].ProcessGuid == d.ProcessGuid {
			end++
		}
		if defined[name] != nil {
			rows, _ := withoutValidation(p.rows[ri:end])
			rows, _ = withoutBaseline(rows)
			members[name] = append(members[name], GroupMember{ProcessGuid: d.ProcessGuid,
				Budget: p.tallyBudget(d, rows, max(d.Instances, 0), nil)})
		}
		ri = end
	}
	p.groups = make(map[string]*GroupBudget, len(members))
	for name, m := range members {
		p.groups[name] = TallyGroup(defined[name], m)
	}
}

// groupOf is d's budget group as tallied for this pass, nil when d names
// none or one that is not defined.
func (p *planner) groupOf(d *DesiredSchedule) *GroupBudget {
	if p.groups == nil {
		return nil
	}
	return p.groups[d.DisruptionBudget.GetGroup()]
}
