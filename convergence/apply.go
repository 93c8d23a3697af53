package convergence

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/corkboard/corkboard/models"
)

// ApplyPlan applies a plan to a copy of the snapshot, in memory, as
// db.ConvergenceDB.ApplyConvergence is specified to: rows, autoscaled
// counts, rollout records (and the active and healthy definitions they
// move) and definition deletions, each write with its effect function
// (effects.go); a differential test in db/sqldb holds the result equal to
// ApplyConvergence's on every dialect. It is the store of a dry run (see
// PlanRollout) and of the tests that play many passes. Unlike the store
// it fails on a write whose row (or record, or LRP) is not at the version
// the write names, rather than skip it: with nobody else writing, none
// may be. s is not modified. Operations are not simulated: the result
// holds none.
//
// ApplyConvergence's events, operations and placement epoch have no
// counterpart here.
func ApplyPlan(s *Snapshot, plan *Plan, now time.Time) (*Snapshot, error) {
	m := newMemoryStore(s, now)
	w := &plan.Writes
	if err := m.autoscale(w.Autoscale); err != nil {
		return nil, err
	}
	if err := m.rows(w); err != nil {
		return nil, err
	}
	if err := m.rollouts(w.Rollouts); err != nil {
		return nil, err
	}
	m.deleteDefinitions(w.DeleteDefinitions)
	return m.snapshot(), nil
}

// memoryStore is a snapshot taken apart for ApplyPlan.
type memoryStore struct {
	before  *Snapshot
	now     int64
	rowsBy  map[models.ActualLRPKey]ActualRow
	desired []DesiredSchedule
	records map[string]RolloutRow
	defs    []DefinitionRow
}

func newMemoryStore(s *Snapshot, now time.Time) *memoryStore {
	m := &memoryStore{
		before:  s,
		now:     now.UnixNano(),
		rowsBy:  make(map[models.ActualLRPKey]ActualRow, len(s.Actual)),
		desired: slices.Clone(s.Desired),
		records: make(map[string]RolloutRow, len(s.Rollouts)),
		defs:    slices.Clone(s.Definitions),
	}
	for _, r := range s.Actual {
		m.rowsBy[r.Key()] = r
	}
	for _, rec := range s.Rollouts {
		m.records[rec.ProcessGuid] = rec
	}
	return m
}

func (m *memoryStore) lrp(guid string) *DesiredSchedule {
	for i := range m.desired {
		if m.desired[i].ProcessGuid == guid {
			return &m.desired[i]
		}
	}
	return nil
}

// resources are those of the LRP's definition id: a staged phase creates
// instances on the healthy definition, with its own memory and disk.
func (m *memoryStore) resources(guid, definitionID string) (memoryMB, diskMB int32) {
	for _, def := range m.defs {
		if def.ProcessGuid == guid && def.DefinitionID == definitionID {
			return def.MemoryMB, def.DiskMB
		}
	}
	if d := m.lrp(guid); d != nil {
		return d.MemoryMB, d.DiskMB
	}
	return 0, 0
}

func (m *memoryStore) autoscale(writes []AutoscaleWrite) error {
	for _, w := range writes {
		d := m.lrp(w.ProcessGuid)
		if d == nil || d.ModificationIndex != w.ExpectModificationIndex || d.Instances != w.PreviousInstances {
			return fmt.Errorf("autoscale %s: the LRP is not as the plan saw it", w.ProcessGuid)
		}
		*d = Autoscaled(*d, w)
	}
	return nil
}

// change applies effect to the row v names, if it is still at that
// version: the row after it takes its key (which must be free, for a
// write that moves the row to another presence) at the next modification
// index, with its definition's resources.
func (m *memoryStore) change(v RowVersion, effect func(ActualRow) ActualRow) error {
	r, ok := m.rowsBy[v.Key]
	if !ok || r.State != v.State || r.ModificationIndex != v.ModificationIndex {
		return fmt.Errorf("write for %+v finds %+v (exists %v)", v, r, ok)
	}
	next := effect(r)
	if next.Key() != v.Key {
		if _, taken := m.rowsBy[next.Key()]; taken {
			return fmt.Errorf("%+v: key %+v is taken", v.Key, next.Key())
		}
		delete(m.rowsBy, v.Key)
	}
	if next.DefinitionID != r.DefinitionID {
		next.MemoryMB, next.DiskMB = m.resources(next.ProcessGuid, next.DefinitionID)
	}
	next.ModificationIndex++
	m.rowsBy[next.Key()] = next
	return nil
}

// changeEach applies effect to the row of every version, in order.
func (m *memoryStore) changeEach(versions []RowVersion, effect func(ActualRow) ActualRow) error {
	for _, v := range versions {
		if err := m.change(v, effect); err != nil {
			return err
		}
	}
	return nil
}

// rows applies the row writes in ApplyConvergence's order, Retire's two
// kinds (Stop or not) included: the ones that keep running first.
func (m *memoryStore) rows(w *ConvergenceWrites) error {
	for _, v := range w.Delete {
		r, ok := m.rowsBy[v.Key]
		if !ok || r.State != v.State || r.ModificationIndex != v.ModificationIndex {
			return fmt.Errorf("delete of %+v finds %+v (exists %v)", v, r, ok)
		}
		delete(m.rowsBy, v.Key)
	}
	now := m.now
	var keep, stop []RowVersion
	for _, rt := range w.Retire {
		if rt.Stop {
			stop = append(stop, rt.Row)
		} else {
			keep = append(keep, rt.Row)
		}
	}
	err := m.changeEach(w.Promote, Promoted)
	if err == nil {
		err = m.changeEach(w.MarkSuspect, MarkedSuspect)
	}
	if err == nil {
		err = m.changeEach(keep, func(r ActualRow) ActualRow { return Retired(r, false, now) })
	}
	if err == nil {
		err = m.changeEach(stop, func(r ActualRow) ActualRow { return Retired(r, true, now) })
	}
	if err == nil {
		err = m.changeEach(w.RequestStop, func(r ActualRow) ActualRow { return StopRequestedAt(r, now) })
	}
	if err != nil {
		return err
	}
	for _, c := range w.Create {
		r := Created(c, now)
		if _, taken := m.rowsBy[r.Key()]; taken {
			return fmt.Errorf("create %+v: key is taken", r.Key())
		}
		r.MemoryMB, r.DiskMB = m.resources(c.ProcessGuid, c.DefinitionID)
		m.rowsBy[r.Key()] = r
	}
	unassign := func(r ActualRow) ActualRow { return Unassigned(r, now) }
	if err := m.changeEach(w.Restart, unassign); err != nil {
		return err
	}
	for _, rd := range w.Redefine {
		if err := m.change(rd.Row, func(r ActualRow) ActualRow { return Redefined(r, rd.DefinitionID, now) }); err != nil {
			return err
		}
	}
	if err := m.changeEach(w.Unassign, unassign); err != nil {
		return err
	}
	for _, p := range w.Place {
		if err := m.change(p.Row, func(r ActualRow) ActualRow { return Placed(r, p.CellID, now) }); err != nil {
			return err
		}
	}
	for _, f := range w.PlacementFailed {
		if err := m.change(f.Row, func(r ActualRow) ActualRow { return PlacementFailedFor(r, f.Reason) }); err != nil {
			return err
		}
	}
	return nil
}

func (m *memoryStore) rollouts(writes []RolloutWrite) error {
	for _, w := range writes {
		rec := m.records[w.ProcessGuid]
		active := ""
		d := m.lrp(w.ProcessGuid)
		if d != nil {
			active = d.ActiveDefinitionID
		}
		if rec.ModificationIndex != w.ExpectModificationIndex || active != w.ExpectActiveDefinitionID {
			return fmt.Errorf("rollout write for %s expects record %d and active %q, finds %d and %q",
				w.ProcessGuid, w.ExpectModificationIndex, w.ExpectActiveDefinitionID, rec.ModificationIndex, active)
		}
		if next, read := StoredRollout(w); read {
			m.records[w.ProcessGuid] = next
		} else {
			delete(m.records, w.ProcessGuid)
		}
		if d == nil {
			continue
		}
		var moved bool
		d.ActiveDefinitionID, d.HealthyDefinitionID, moved = RolloutDefinitions(w, d.ActiveDefinitionID, d.HealthyDefinitionID)
		if moved {
			d.MemoryMB, d.DiskMB = m.resources(d.ProcessGuid, d.ActiveDefinitionID)
			d.ModificationIndex++
		}
	}
	return nil
}

func (m *memoryStore) deleteDefinitions(refs []DefinitionRef) {
	m.defs = slices.DeleteFunc(m.defs, func(def DefinitionRow) bool {
		return slices.Contains(refs, DefinitionRef{ProcessGuid: def.ProcessGuid, DefinitionID: def.DefinitionID})
	})
}

// snapshot is the state after the writes, in the order the store reads it.
func (m *memoryStore) snapshot() *Snapshot {
	s := m.before
	after := &Snapshot{
		Desired: m.desired, Cells: s.Cells, FreshDomains: s.FreshDomains, Partial: s.Partial,
		PlacementEpoch: s.PlacementEpoch, Definitions: m.defs,
		Actual: make([]ActualRow, 0, len(m.rowsBy)),
	}
	for _, r := range m.rowsBy {
		after.Actual = append(after.Actual, r)
	}
	slices.SortFunc(after.Actual, func(a, b ActualRow) int { return compareRows(&a, &b) })
	for _, rec := range m.records {
		after.Rollouts = append(after.Rollouts, rec)
	}
	slices.SortFunc(after.Rollouts, func(a, b RolloutRow) int { return strings.Compare(a.ProcessGuid, b.ProcessGuid) })
	return after
}
