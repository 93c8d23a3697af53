package runner

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
)

// MirrorStore is what a Mirror reads.
type MirrorStore interface {
	db.ConvergenceDB
	db.ConvergenceFeedDB
}

// DefaultFullReadInterval is how often a Mirror reads everything again
// although the log said what changed: a safety net for a write that
// changed rows without an event.
const DefaultFullReadInterval = 10 * time.Minute

// fullReadShare: when more than one LRP in fullReadShare changed since the
// last pass (and more than maxTargeted), reading them by name costs more
// than reading everything.
const fullReadShare = 4

// Mirror is the convergence lease owner's copy of the snapshot, kept in
// memory and brought up to date before each pass from the event log: only
// the LRPs the log names since the last pass (and those the last pass
// wrote, or a trigger names) are read again, with the cells, which are few.
// Passes then plan from memory as from a full read.
//
// A pass that changed nothing costs two small queries (the mark, the
// cells) instead of reading every row:
//
//  1. Pass 1 (taking over): the mark says log head 900, placement epoch 7;
//     everything is read (1,000,000 rows); the mirror is at position 900.
//  2. Pass 2: the mark says head 900, epoch 7. Nothing changed: only the
//     cells are read; the plan is computed over the 1,000,000 rows in
//     memory.
//  3. A rep crashes web/3, a client updates api: events 901–904 name
//     "web" and "api". Pass 3's mark says head 904, epoch 7; the rows of
//     web and api are read (in one transaction) and replace theirs in
//     memory; the mirror is at 904.
//  4. Pass 3 placed web/3 (epoch 7 → 8, as its apply reports). Pass 4's
//     mark says epoch 8: no one else placed, the mirror's usage of every
//     cell is still exact. Had it said 9, another board placed behind the
//     mirror's back, and everything is read again.
//
// Everything is also read again at takeover (Reset), when the log no
// longer keeps the positions since the last pass (trimmed), after a failed
// read or apply, when too many LRPs changed, and every FullReadInterval.
//
// A Mirror is used by one goroutine at a time.
type Mirror struct {
	store MirrorStore
	now   func() time.Time
	// FullReadInterval is how often everything is read again
	// (DefaultFullReadInterval when zero).
	FullReadInterval time.Duration
	// StartsLimited: the planner has a max_starts_per_cell_per_second, so
	// a partial snapshot carries each cell's UnreadStarts.
	StartsLimited bool

	readAt   time.Time
	position uint64 // the log position the rows are complete up to
	// loaded: the rows are complete for placementEpoch, so a refresh may
	// read only what changed. False (nothing read yet, reset, or a store
	// that reports no placement epoch) makes the next refresh read
	// everything.
	loaded         bool
	placementEpoch int64

	desired     []convergence.DesiredSchedule
	actual      []convergence.ActualRow
	rollouts    []convergence.RolloutRow
	definitions []convergence.DefinitionRow
	operations  []convergence.OperationRow
	// usage is what the rows use on each cell (every row naming it, any
	// state, any presence), kept in step with actual.
	usage map[string]convergence.Resources
	// written are the LRPs the last pass wrote, read again at the next
	// refresh whatever the log says.
	written []string

	// FullReads and LRPsRead count what the mirror read, for tests and
	// benchmarks: full reads, and LRPs read by name.
	FullReads int
	LRPsRead  int
}

// NewMirror returns an empty mirror over store: its first Snapshot reads
// everything. now is the clock of FullReadInterval.
func NewMirror(store MirrorStore, now func() time.Time) *Mirror {
	if now == nil {
		now = time.Now
	}
	return &Mirror{store: store, now: now}
}

// Reset makes the next Snapshot read everything, as after a takeover:
// another board may have converged meanwhile.
func (m *Mirror) Reset() {
	m.loaded, m.placementEpoch = false, 0
}

// Applied records the outcome of applying a plan made from this mirror:
// the LRPs written are read again at the next refresh, and the placement
// epoch moves on with the plan's own placements. A failed apply, or one
// whose placements another writer refused, leaves the mirror to read
// everything again.
func (m *Mirror) Applied(writes *convergence.ConvergenceWrites, result *convergence.ConvergenceResult, err error) {
	if err != nil || result == nil {
		m.Reset()
		return
	}
	m.written = append(m.written, writes.ProcessGuids()...)
	if len(writes.Place) > 0 {
		if result.PlacementEpoch == 0 {
			m.Reset()
			return
		}
		m.placementEpoch = result.PlacementEpoch
	}
}

// Snapshot brings the mirror up to date and returns the snapshot a pass
// plans from: every LRP when guids is nil, a Partial snapshot of guids
// otherwise (each cell's UnreadUse then holds what the other LRPs' rows
// use on it). The snapshot shares the mirror's memory: it is valid until
// the next call, and nobody may change it.
func (m *Mirror) Snapshot(ctx context.Context, guids []string) (*convergence.Snapshot, error) {
	snapshot, err := m.refresh(ctx, guids)
	if err != nil {
		m.Reset()
		return nil, err
	}
	if guids == nil {
		return snapshot, nil
	}
	return m.partial(snapshot, guids), nil
}

// refresh updates the rows and returns a full snapshot over them with the
// cells just read.
func (m *Mirror) refresh(ctx context.Context, targeted []string) (*convergence.Snapshot, error) {
	mark, err := m.store.ConvergenceMark(ctx)
	if err != nil {
		return nil, err
	}
	interval := m.FullReadInterval
	if interval <= 0 {
		interval = DefaultFullReadInterval
	}
	if !m.loaded || mark.PlacementEpoch != m.placementEpoch || m.now().Sub(m.readAt) >= interval {
		return m.readAll(ctx, mark)
	}
	changed, lost, err := m.store.ConvergenceChanges(ctx, m.position, mark.LogHead)
	if err != nil {
		return nil, err
	}
	changed = unionSorted(changed, m.written, targeted)
	if lost || (len(changed) > maxTargeted && len(changed) > len(m.desired)/fullReadShare) {
		return m.readAll(ctx, mark)
	}
	if len(changed) > 0 {
		fresh, err := m.store.ConvergenceRows(ctx, changed)
		if err != nil {
			return nil, err
		}
		m.replace(changed, fresh)
		m.LRPsRead += len(changed)
	}
	cells, fresh, err := m.store.ConvergenceCells(ctx)
	if err != nil {
		return nil, err
	}
	m.position = mark.LogHead
	m.written = nil
	return m.full(cells, fresh, mark.PlacementEpoch), nil
}

// readAll reads everything. The mark was taken before: whatever is logged
// after it is read again at the next refresh, whether or not this read
// saw it.
func (m *Mirror) readAll(ctx context.Context, mark convergence.Mark) (*convergence.Snapshot, error) {
	m.Reset()
	s, err := m.store.ConvergenceSnapshot(ctx, nil)
	if err != nil {
		return nil, err
	}
	m.desired, m.actual, m.rollouts, m.definitions, m.operations = s.Desired, s.Actual, s.Rollouts, s.Definitions, s.Operations
	m.usage = make(map[string]convergence.Resources, len(s.Cells))
	addUsage(m.usage, m.actual, 1)
	m.position, m.placementEpoch, m.readAt = mark.LogHead, s.PlacementEpoch, m.now()
	m.loaded = s.PlacementEpoch != 0
	m.written = nil
	m.FullReads++
	return s, nil
}

// replace puts fresh's rows in place of those of the changed LRPs (sorted),
// keeping every slice in process guid order.
func (m *Mirror) replace(changed []string, fresh *convergence.Snapshot) {
	addUsage(m.usage, runsOf(m.actual, changed, actualGuid), -1)
	addUsage(m.usage, fresh.Actual, 1)
	m.desired = spliceRuns(m.desired, fresh.Desired, changed, desiredGuid)
	m.actual = spliceRuns(m.actual, fresh.Actual, changed, actualGuid)
	m.rollouts = spliceRuns(m.rollouts, fresh.Rollouts, changed, rolloutGuid)
	m.definitions = spliceRuns(m.definitions, fresh.Definitions, changed, definitionGuid)
	m.operations = spliceRuns(m.operations, fresh.Operations, changed, operationGuid)
}

func (m *Mirror) full(cells []convergence.CellRow, fresh []string, placementEpoch int64) *convergence.Snapshot {
	return &convergence.Snapshot{
		Desired: m.desired, Actual: m.actual, Rollouts: m.rollouts, Definitions: m.definitions,
		Operations: m.operations, Cells: cells, FreshDomains: fresh, PlacementEpoch: placementEpoch,
	}
}

// partial narrows a full snapshot to guids; each cell's UnreadUse is what
// the rows left out use on it.
func (m *Mirror) partial(s *convergence.Snapshot, guids []string) *convergence.Snapshot {
	guids = withGroupMates(s.Desired, unionSorted(guids))
	p := &convergence.Snapshot{
		Desired:        runsOf(s.Desired, guids, desiredGuid),
		Actual:         runsOf(s.Actual, guids, actualGuid),
		Rollouts:       runsOf(s.Rollouts, guids, rolloutGuid),
		Definitions:    runsOf(s.Definitions, guids, definitionGuid),
		Operations:     runsOf(s.Operations, guids, operationGuid),
		BoardRollouts:  s.Rollouts,
		FreshDomains:   s.FreshDomains,
		PlacementEpoch: s.PlacementEpoch,
		Partial:        true,
	}
	read := map[string]convergence.Resources{}
	addUsage(read, p.Actual, 1)
	p.Cells = make([]convergence.CellRow, len(s.Cells))
	for i, c := range s.Cells {
		all, mine := m.usage[c.CellID], read[c.CellID]
		c.UnreadUse = convergence.Resources{
			MemoryMB:  all.MemoryMB - mine.MemoryMB,
			DiskMB:    all.DiskMB - mine.DiskMB,
			Instances: all.Instances - mine.Instances,
		}
		p.Cells[i] = c
	}
	if m.StartsLimited {
		m.noteUnreadStarts(p, s.Actual, guids)
	}
	return p
}

// noteUnreadStarts adds to p's cells the Since of the rows left out of it
// (those of LRPs not in guids, sorted) that count as recent starts by the
// mirror's clock (convergence.RecentStart); the planner counts them again
// at its own now.
func (m *Mirror) noteUnreadStarts(p *convergence.Snapshot, all []convergence.ActualRow, guids []string) {
	now := m.now().UnixNano()
	index := make(map[string]int, len(p.Cells))
	for i := range p.Cells {
		index[p.Cells[i].CellID] = i
	}
	for i := range all {
		r := &all[i]
		if !convergence.RecentStart(r, now) {
			continue
		}
		if _, read := slices.BinarySearch(guids, r.ProcessGuid); read {
			continue
		}
		if c, ok := index[r.CellID]; ok {
			p.Cells[c].UnreadStarts = append(p.Cells[c].UnreadStarts, r.Since)
		}
	}
}

// addUsage adds (sign 1) or takes away (sign -1) what rows use on their
// cells.
func addUsage(usage map[string]convergence.Resources, rows []convergence.ActualRow, sign int32) {
	for i := range rows {
		r := &rows[i]
		if r.CellID == "" {
			continue
		}
		u := usage[r.CellID]
		u.MemoryMB += sign * r.MemoryMB
		u.DiskMB += sign * r.DiskMB
		u.Instances += sign
		usage[r.CellID] = u
	}
}

// spliceRuns returns rows (in guid order) with the run of each guid of
// changed (sorted) replaced by fresh's run of it (fresh holds only those
// guids, in order). It works in rows' own array whenever it can hold the
// result, so that a mirror of a million instances is not copied and
// reallocated each time an LRP is desired or scaled: the rows between the
// changed runs move by what the runs before them grew or shrank, those
// moving towards the start first (front to back), then those moving
// towards the end (back to front), so that no block is overwritten before
// it moves; fresh's runs are copied in last. When the array is too small,
// the rows are copied once into a new one with room to grow (an eighth
// more).
//
// Example: rows a a b c c d, changed [b c e], fresh b b e. The blocks
// between the runs are "a a" (stays), nothing, and "d", whose runs before
// it went from 3 rows (b c c) to 2 (b b): d moves one place towards the
// start; then e (new) goes after it and b b where b was: a a b b d e.
// With changed [b c] and fresh b c c, no block moves and b and c are
// overwritten in place.
func spliceRuns[T any](rows, fresh []T, changed []string, guid func(*T) string) []T {
	type span struct{ at, end, f, fEnd int }
	spans := make([]span, 0, len(changed))
	size := len(rows)
	from, f := 0, 0
	for _, g := range changed {
		at := from + sort.Search(len(rows)-from, func(i int) bool { return guid(&rows[from+i]) >= g })
		end := at
		for end < len(rows) && guid(&rows[end]) == g {
			end++
		}
		fEnd := f
		for fEnd < len(fresh) && guid(&fresh[fEnd]) == g {
			fEnd++
		}
		spans = append(spans, span{at, end, f, fEnd})
		size += (fEnd - f) - (end - at)
		from, f = end, fEnd
	}
	if size > cap(rows) {
		out := make([]T, 0, size+size/8)
		from = 0
		for _, s := range spans {
			out = append(out, rows[from:s.at]...)
			out = append(out, fresh[s.f:s.fEnd]...)
			from = s.end
		}
		return append(out, rows[from:]...)
	}
	// The rows before the first span, between two spans and after the
	// last, each with how far it moves.
	type block struct{ start, end, shift int }
	blocks := make([]block, 0, len(spans)+1)
	start, shift := 0, 0
	for _, s := range spans {
		blocks = append(blocks, block{start, s.at, shift})
		start, shift = s.end, shift+(s.fEnd-s.f)-(s.end-s.at)
	}
	blocks = append(blocks, block{start, len(rows), shift})
	buf := rows[:max(len(rows), size)]
	for _, b := range blocks {
		if b.shift < 0 {
			copy(buf[b.start+b.shift:b.end+b.shift], buf[b.start:b.end])
		}
	}
	for k := len(blocks) - 1; k >= 0; k-- {
		if b := blocks[k]; b.shift > 0 {
			copy(buf[b.start+b.shift:b.end+b.shift], buf[b.start:b.end])
		}
	}
	for i, s := range spans {
		// Span i's rows go right after block i, moved.
		copy(buf[blocks[i].end+blocks[i].shift:], fresh[s.f:s.fEnd])
	}
	// Rows past the end would keep their strings alive.
	clear(buf[size:])
	return buf[:size]
}

// runsOf copies the runs of guids (sorted) out of rows (in guid order).
func runsOf[T any](rows []T, guids []string, guid func(*T) string) []T {
	var out []T
	from := 0
	for _, g := range guids {
		at := from + sort.Search(len(rows)-from, func(i int) bool { return guid(&rows[from+i]) >= g })
		end := at
		for end < len(rows) && guid(&rows[end]) == g {
			end++
		}
		out = append(out, rows[at:end]...)
		from = end
	}
	return out
}

// unionSorted merges lists of guids into one sorted list without repeats.
func unionSorted(lists ...[]string) []string {
	seen := map[string]struct{}{}
	var out []string
	for _, list := range lists {
		for _, g := range list {
			if _, ok := seen[g]; !ok {
				seen[g] = struct{}{}
				out = append(out, g)
			}
		}
	}
	sort.Strings(out)
	return out
}

func desiredGuid(d *convergence.DesiredSchedule) string  { return d.ProcessGuid }
func actualGuid(r *convergence.ActualRow) string         { return r.ProcessGuid }
func rolloutGuid(r *convergence.RolloutRow) string       { return r.ProcessGuid }
func definitionGuid(d *convergence.DefinitionRow) string { return d.ProcessGuid }
func operationGuid(o *convergence.OperationRow) string   { return o.ProcessGuid }

// withGroupMates adds to guids (sorted) every LRP of desired that names a
// budget group one of guids' LRPs names, so that a targeted pass tallies
// each group whole (convergence.GroupBudget): deciding one member over a
// part of its group could spend what the others spend already. It reads
// all of desired only when one of guids names a group.
func withGroupMates(desired []convergence.DesiredSchedule, guids []string) []string {
	groups := map[string]bool{}
	for _, d := range runsOf(desired, guids, desiredGuid) {
		if g := d.DisruptionBudget.GetGroup(); g != "" {
			groups[g] = true
		}
	}
	if len(groups) == 0 {
		return guids
	}
	var mates []string
	for _, d := range desired {
		if groups[d.DisruptionBudget.GetGroup()] {
			mates = append(mates, d.ProcessGuid)
		}
	}
	return unionSorted(guids, mates)
}
