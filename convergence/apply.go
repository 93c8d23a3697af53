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
// move) and definition deletions. It is the store of a dry run (see
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
		d.Autoscaler = w.Status
		if w.Instances != d.Instances {
			d.Instances = w.Instances
			d.ModificationIndex++
		}
	}
	return nil
}

// at is the row v names, if it is still at that version.
func (m *memoryStore) at(v RowVersion) (ActualRow, error) {
	r, ok := m.rowsBy[v.Key]
	if !ok || r.State != v.State || r.ModificationIndex != v.ModificationIndex {
		return r, fmt.Errorf("write for %+v finds %+v (exists %v)", v, r, ok)
	}
	return r, nil
}

func (m *memoryStore) save(r ActualRow) {
	r.ModificationIndex++
	m.rowsBy[r.Key()] = r
}

// moveTo gives row r another presence; the key it moves to must be free.
func (m *memoryStore) moveTo(r ActualRow, presence models.ActualLRP_Presence) error {
	next := r
	next.Presence = presence
	if _, taken := m.rowsBy[next.Key()]; taken {
		return fmt.Errorf("%+v: key %+v is taken", r.Key(), next.Key())
	}
	delete(m.rowsBy, r.Key())
	m.save(next)
	return nil
}

// rows applies the row writes in ApplyConvergence's order.
func (m *memoryStore) rows(w *ConvergenceWrites) error {
	for _, v := range w.Delete {
		if _, err := m.at(v); err != nil {
			return err
		}
		delete(m.rowsBy, v.Key)
	}
	for _, group := range []struct {
		versions []RowVersion
		to       models.ActualLRP_Presence
	}{{w.Promote, ordinary}, {w.MarkSuspect, suspect}} {
		for _, v := range group.versions {
			r, err := m.at(v)
			if err == nil {
				err = m.moveTo(r, group.to)
			}
			if err != nil {
				return err
			}
		}
	}
	for _, rt := range w.Retire {
		r, err := m.at(rt.Row)
		if err == nil {
			r.StopRequested, r.Since = rt.Stop, m.now
			err = m.moveTo(r, retiring)
		}
		if err != nil {
			return err
		}
	}
	if err := m.each(w.RequestStop, func(r *ActualRow) { r.StopRequested, r.Since = true, m.now }); err != nil {
		return err
	}
	for _, c := range w.Create {
		key := models.ActualLRPKey{ProcessGuid: c.ProcessGuid, Index: c.Index, Presence: ordinary}
		if _, taken := m.rowsBy[key]; taken {
			return fmt.Errorf("create %+v: key is taken", key)
		}
		memory, disk := m.resources(c.ProcessGuid, c.DefinitionID)
		m.rowsBy[key] = ActualRow{
			ProcessGuid: c.ProcessGuid, Index: c.Index, Presence: ordinary, State: unclaimed,
			Domain: c.Domain, CellID: c.CellID, DefinitionID: c.DefinitionID, Since: m.now,
			PlacementError: c.PlacementError, ModificationIndex: 1, MemoryMB: memory, DiskMB: disk,
		}
	}
	unassign := func(r *ActualRow) {
		r.State, r.CellID, r.Since, r.Routable, r.Occupied = unclaimed, "", m.now, false, false
	}
	if err := m.each(w.Restart, unassign); err != nil {
		return err
	}
	for _, rd := range w.Redefine {
		r, err := m.at(rd.Row)
		if err != nil {
			return err
		}
		unassign(&r)
		r.DefinitionID, r.CrashCount, r.CrashReason, r.PlacementError = rd.DefinitionID, 0, "", ""
		r.MemoryMB, r.DiskMB = m.resources(r.ProcessGuid, rd.DefinitionID)
		m.save(r)
	}
	if err := m.each(w.Unassign, unassign); err != nil {
		return err
	}
	for _, p := range w.Place {
		r, err := m.at(p.Row)
		if err != nil {
			return err
		}
		r.CellID, r.PlacementError, r.Since = p.CellID, "", m.now
		m.save(r)
	}
	for _, f := range w.PlacementFailed {
		r, err := m.at(f.Row)
		if err != nil {
			return err
		}
		r.CellID, r.PlacementError = "", f.Reason
		m.save(r)
	}
	return nil
}

// each changes every row of versions in place.
func (m *memoryStore) each(versions []RowVersion, change func(r *ActualRow)) error {
	for _, v := range versions {
		r, err := m.at(v)
		if err != nil {
			return err
		}
		change(&r)
		m.save(r)
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
		next := w.Record
		next.ProcessGuid = w.ProcessGuid
		next.ModificationIndex = w.ExpectModificationIndex + 1
		m.records[w.ProcessGuid] = next
		if w.Settled || w.Delete {
			delete(m.records, w.ProcessGuid)
		}
		if d == nil {
			continue
		}
		if w.SetHealthyDefinitionID != "" {
			d.HealthyDefinitionID = w.SetHealthyDefinitionID
		}
		if w.SetActiveDefinitionID != "" {
			d.ActiveDefinitionID = w.SetActiveDefinitionID
			d.MemoryMB, d.DiskMB = m.resources(d.ProcessGuid, w.SetActiveDefinitionID)
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
