package convergence

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/corkboard/corkboard/models"
)

// Compute decides one convergence pass: what to write so that the actual
// rows of snapshot move towards the desired ones, at time now. It does no
// I/O, does not modify snapshot, and returns the same plan for the same
// input whatever the order of the snapshot's slices. doc.go describes
// every decision.
func Compute(snapshot *Snapshot, now time.Time, cfg Config) *Plan {
	p := &planner{
		cfg:   cfg,
		now:   now.UnixNano(),
		plan:  &Plan{},
		cells: newCellTable(snapshot.Cells, now.UnixNano(), cfg.PresenceGrace),
		fresh: make(map[string]bool, len(snapshot.FreshDomains)),

		operationsSeen: map[string]bool{},
		validations:    map[string]*validationOutcome{},
	}
	for _, domain := range snapshot.FreshDomains {
		p.fresh[domain] = true
	}
	if cfg.QuarantineOnCrashSpike {
		p.plan.Quarantine = QuarantineSpikes(cfg.CrashMemory, snapshot.Crashes, snapshot.Cells, now)
		p.cells.quarantine(p.plan.Quarantine)
	}
	p.freezeAt(snapshot.FreezeWindows, now)
	p.loadCheckFailures(snapshot.CheckFailures)
	p.loadRollouts(snapshot)
	board := snapshot.Rollouts
	if snapshot.BoardRollouts != nil {
		board = snapshot.BoardRollouts
	}
	p.turns = GovernRollouts(board, cfg.MaxRolloutsInFlight)
	p.loadOperations(snapshot)
	p.placer = newPlacer(p.cells)
	p.avoided = avoidedCells(cfg.CrashMemory, snapshot.Crashes, p.cells, p.now)
	p.placer.crashed = p.avoided
	desired, instances := sortedDesired(snapshot.Desired)
	ordinaryRows := p.loadRows(snapshot.Actual, desired, snapshot.Cells)
	p.findOverloaded(snapshot)
	p.plan.Counts.Desired = instances
	p.plan.Writes.PlacementEpoch = snapshot.PlacementEpoch
	p.reserve(instances - ordinaryRows)
	p.tallyGroups(desired, snapshot.BudgetGroups)
	p.reconcileAll(desired)
	p.cleanForgottenLRPs()
	p.cleanForgottenOperations()
	p.decideMoves()
	p.placer.placeAll()
	p.wakeForStarts()
	p.emitPlacements()
	p.finishBlocked()
	p.finishValidations()
	p.emitMoves()
	p.countCells()
	p.plan.CrashSpikes = cfg.CrashMemory.CrashSpikes(snapshot.Crashes, p.cells.ids, now)
	return p.plan
}

type planner struct {
	cfg    Config
	now    int64
	plan   *Plan
	cells  *cellTable
	placer *placer
	fresh  map[string]bool
	rows   []row
	wake   int64

	// The unsettled rollout records and their LRPs' definitions (newest
	// first), by process guid.
	rollouts    map[string]*RolloutRow
	definitions map[string][]DefinitionRow
	// turns are the rollout governor's decisions, by process guid
	// (GovernRollouts over every rollout record of the board).
	turns map[string]RolloutTurn
	// reconciled notes the guids of rollout records whose LRP had a
	// DesiredLRP or rows in the snapshot.
	reconciled map[string]bool
	// operations are the snapshot's operations that have not ended, by
	// LRP in sequence order; operationsSeen the LRPs reconciled so far.
	operations     map[string][]*OperationRow
	operationsSeen map[string]bool
	// validations are this pass's decisions on the LRPs' validations under
	// way (validation.go), for their operations.
	validations map[string]*validationOutcome
	// underWay are those of validations this pass leaves under way, in
	// the order it decided them.
	underWay []*validationOutcome

	// Cells that are not present but still named by a CLAIMED or RUNNING
	// row: registered ones by index, unregistered ones by id.
	suspectCells        []bool
	unknownSuspectCells map[string]bool

	// overloaded marks, by cell index, the cells whose rows use more than
	// their capacity (nil when none, or in a partial snapshot), and freed
	// what this pass's writes take off each of them (moves.go).
	overloaded []bool
	freed      []capacity
	// movable collects the current LRP's movable instances.
	movable         []movable
	zoneScratch     []int32
	openZonesByTags map[string][]bool
	// openZonesUntagged is openZonesByTags of no tags, once computed.
	openZonesUntagged []bool

	// freeze is the freeze window active at now (nil for none), and
	// freezeUntil when its occurrence ends (rollout_freeze.go).
	freeze      *models.FreezeWindow
	freezeUntil time.Time

	// avoided are the cells each (LRP, definition) crashed on within the
	// crash memory's window (crash_memory.go).
	avoided map[CrashPair][]int32

	// blocked are the rollout records this pass may write, waiting for
	// placement to say what blocks them (finishBlocked).
	blocked []pendingRollout
	// checkFailures are the snapshot's CheckFailures by instance.
	checkFailures map[checkKey]*models.CheckFailure

	// groups are the budget groups some LRP of the snapshot names, by
	// name, tallied before the LRPs are decided and drawn down as they
	// are (tallyGroups, budget.go).
	groups map[string]*GroupBudget
}

// row is an actual row with the index of the cell it names (noCell when it
// names none or an unregistered one).
type row struct {
	*ActualRow
	cell int32
}

func (p *planner) loadRollouts(snapshot *Snapshot) {
	p.rollouts = make(map[string]*RolloutRow, len(snapshot.Rollouts))
	for i := range snapshot.Rollouts {
		p.rollouts[snapshot.Rollouts[i].ProcessGuid] = &snapshot.Rollouts[i]
	}
	p.definitions = make(map[string][]DefinitionRow, len(snapshot.Rollouts))
	p.reconciled = make(map[string]bool, len(snapshot.Rollouts))
	// The store reads them in this order already; sorting the few there
	// are keeps the plan independent of the order all the same.
	defs := slices.Clone(snapshot.Definitions)
	slices.SortFunc(defs, func(a, b DefinitionRow) int {
		if c := strings.Compare(a.ProcessGuid, b.ProcessGuid); c != 0 {
			return c
		}
		if c := cmp.Compare(b.CreatedAt, a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.DefinitionID, a.DefinitionID)
	})
	for from := 0; from < len(defs); {
		to := from + 1
		for to < len(defs) && defs[to].ProcessGuid == defs[from].ProcessGuid {
			to++
		}
		p.definitions[defs[from].ProcessGuid] = defs[from:to]
		from = to
	}
}

// reserve sizes the write lists for about this many new instances, since
// growing them one append at a time costs several times their size when
// 100,000 instances are missing at once.
func (p *planner) reserve(creates int) {
	if creates <= 0 {
		return
	}
	p.plan.Writes.Create = make([]NewActualLRP, 0, creates)
	p.plan.Reasons.Create = make([]string, 0, creates)
	p.placer.requests = make([]request, 0, creates)
}

// loadRows orders the rows by key, charges each to its cell and returns
// how many are ORDINARY. Rows loaded with ORDER BY process_guid, index,
// presence are already in order and are only checked.
func (p *planner) loadRows(actual []ActualRow, desired []*DesiredSchedule, cellRows []CellRow) (ordinaryRows int) {
	p.rows = make([]row, len(actual))
	sorted := true
	var recentStarts map[int32][]int64
	if p.cfg.MaxStartsPerCellPerSecond > 0 {
		recentStarts = map[int32][]int64{}
	}
	for i := range actual {
		r := &actual[i]
		cell := p.cells.lookup(r.CellID)
		p.rows[i] = row{ActualRow: r, cell: cell}
		if cell != noCell {
			p.cells.use(cell, r)
			if recentStarts != nil && RecentStart(r, p.now) {
				recentStarts[cell] = append(recentStarts[cell], r.Since)
			}
		}
		if r.Presence == ordinary {
			ordinaryRows++
		}
		if i > 0 && compareRows(&actual[i-1], r) > 0 {
			sorted = false
		}
	}
	p.cells.limitStarts(p.cfg.MaxStartsPerCellPerSecond, cellRows, recentStarts, p.now)
	if !sorted {
		p.rows = sortRows(p.rows, desired)
	}
	return ordinaryRows
}

// sortRows puts rows in key order. Comparing process guids is what makes a
// plain sort of 250,000 rows slow, so rows are grouped by guid instead: a
// group's place comes from the (already sorted) DesiredLRPs, or, for the
// few guids that are no longer desired, from sorting those alone. Only the
// few rows within a group are then sorted, by index and presence.
func sortRows(rows []row, desired []*DesiredSchedule) []row {
	// Groups 0..len(desired)-1 are the desired guids in order; the ones
	// after are the undesired guids in order of appearance.
	groupOf := make(map[string]int32, len(desired))
	for i, d := range desired {
		groupOf[d.ProcessGuid] = int32(i)
	}
	var undesired []string
	group := make([]int32, len(rows))
	for i := range rows {
		guid := rows[i].ProcessGuid
		g, ok := groupOf[guid]
		if !ok {
			g = int32(len(desired) + len(undesired))
			groupOf[guid] = g
			undesired = append(undesired, guid)
		}
		group[i] = g
	}

	// rank[g] is group g's position in guid order, merging the sorted
	// desired guids with the sorted undesired ones.
	byGuid := make([]int32, len(undesired))
	for i := range byGuid {
		byGuid[i] = int32(i)
	}
	slices.SortFunc(byGuid, func(a, b int32) int { return strings.Compare(undesired[a], undesired[b]) })
	rank := make([]int32, len(desired)+len(undesired))
	d, u := 0, 0
	for r := range rank {
		if u == len(byGuid) || (d < len(desired) && desired[d].ProcessGuid < undesired[byGuid[u]]) {
			rank[d] = int32(r)
			d++
		} else {
			rank[len(desired)+int(byGuid[u])] = int32(r)
			u++
		}
	}

	// Lay the groups out in rank order.
	start := make([]int32, len(rank)+1)
	for _, g := range group {
		start[rank[g]+1]++
	}
	for r := 1; r < len(start); r++ {
		start[r] += start[r-1]
	}
	sorted := make([]row, len(rows))
	for i, g := range group {
		sorted[start[rank[g]]] = rows[i]
		start[rank[g]]++
	}
	for from := 0; from < len(sorted); {
		to := from + 1
		for to < len(sorted) && sorted[to].ProcessGuid == sorted[from].ProcessGuid {
			to++
		}
		if to-from > 1 {
			slices.SortFunc(sorted[from:to], func(a, b row) int { return compareRows(a.ActualRow, b.ActualRow) })
		}
		from = to
	}
	return sorted
}

func compareRows(a, b *ActualRow) int {
	if c := strings.Compare(a.ProcessGuid, b.ProcessGuid); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Index, b.Index); c != 0 {
		return c
	}
	return cmp.Compare(a.Presence, b.Presence)
}

// sortedDesired orders the DesiredLRPs by process guid and sums their
// instances.
func sortedDesired(desired []DesiredSchedule) (sorted []*DesiredSchedule, instances int) {
	sorted = make([]*DesiredSchedule, len(desired))
	inOrder := true
	for i := range desired {
		sorted[i] = &desired[i]
		instances += int(max(desired[i].Instances, 0))
		if i > 0 && desired[i-1].ProcessGuid > desired[i].ProcessGuid {
			inOrder = false
		}
	}
	if !inOrder {
		slices.SortFunc(sorted, func(a, b *DesiredSchedule) int { return cmp.Compare(a.ProcessGuid, b.ProcessGuid) })
	}
	return sorted, instances
}

// reconcileAll walks desired LRPs and row groups together, in process guid
// order.
func (p *planner) reconcileAll(desired []*DesiredSchedule) {
	di, ri := 0, 0
	for di < len(desired) || ri < len(p.rows) {
		var guid string
		switch {
		case di == len(desired):
			guid = p.rows[ri].ProcessGuid
		case ri == len(p.rows):
			guid = desired[di].ProcessGuid
		default:
			guid = min(desired[di].ProcessGuid, p.rows[ri].ProcessGuid)
		}
		var d *DesiredSchedule
		for di < len(desired) && desired[di].ProcessGuid == guid {
			if d == nil {
				d = desired[di]
			}
			di++
		}
		end := ri
		for end < len(p.rows) && p.rows[end].ProcessGuid == guid {
			end++
		}
		p.reconcileLRP(d, p.rows[ri:end])
		ri = end
	}
	if p.wake != 0 {
		p.plan.NextWake = time.Unix(0, p.wake).UTC()
	}
}

func (p *planner) countCells() {
	c := &p.plan.Counts
	for _, present := range p.cells.present {
		if present {
			c.PresentCells++
		}
	}
	for _, suspect := range p.suspectCells {
		if suspect {
			c.SuspectCells++
		}
	}
	c.SuspectCells += len(p.unknownSuspectCells)
}

// countRow adds a row to the gauges.
func (p *planner) countRow(r *row) {
	c := &p.plan.Counts
	switch r.Presence {
	case ordinary:
		switch r.State {
		case running:
			c.Running++
		case claimed:
			c.Claimed++
		case unclaimed:
			c.Unclaimed++
		case crashed:
			c.Crashed++
		}
	case suspect:
		c.Suspect++
	}
	if (r.State == running || r.State == claimed) &&
		r.CellID != "" && !p.cells.isPresent(r.cell) {
		p.noteSuspectCell(r)
	}
}

func (p *planner) noteSuspectCell(r *row) {
	if r.cell != noCell {
		if p.suspectCells == nil {
			p.suspectCells = make([]bool, len(p.cells.ids))
		}
		p.suspectCells[r.cell] = true
		return
	}
	if p.unknownSuspectCells == nil {
		p.unknownSuspectCells = map[string]bool{}
	}
	p.unknownSuspectCells[r.CellID] = true
}

// wakeForStarts sets the plan's NextWake no later than the first moment
// a cell the start governor kept an instance from may start again, so
// that the instance waits no longer than it must.
func (p *planner) wakeForStarts() {
	if p.cells.startsLeft == nil {
		return
	}
	reason := startLimitReason(p.cells.startLimit)
	waiting := false
	for i := range p.placer.requests {
		if p.placer.requests[i].failure == reason {
			waiting = true
			break
		}
	}
	if !waiting {
		return
	}
	for cell, left := range p.cells.startsLeft {
		if left != 0 {
			continue
		}
		p.wakeAt(p.cells.startsAgain(int32(cell)))
	}
	if p.wake != 0 {
		p.plan.NextWake = time.Unix(0, p.wake).UTC()
	}
}

func (p *planner) wakeAt(t int64) {
	if p.wake == 0 || t < p.wake {
		p.wake = t
	}
}
