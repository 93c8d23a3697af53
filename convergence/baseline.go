package convergence

import (
	"fmt"

	"github.com/corkboard/corkboard/models"
)

// Baseline instances (an update with baseline; models.BaselineWanted).
// While a rollout that asked for them is judged, the LRP runs fresh
// instances of its healthy definition at the baseline indices
// (models.BaselineIndexBase, +1, ...), one beside each ORDINARY instance of
// the active definition at a wanted index, at most
// models.MaxBaselineInstances; they are routable, placed and restarted
// like any instance, never stand for an index, and are deleted once the
// rollout is no longer judged. The analysis compares the new definition
// with them.
//
// Worked example: hello, 6 instances, v1 healthy, rolling to v2 with
// analysis and baseline, max_surge 1.
//
//  1. Pass 1 starts web/0's replacement on v2: one canary (an ORDINARY
//     row on v2, ready or not), so hello/100001 is created on v1.
//  2. Three indices later: hello/100001..100003 run v1 beside three v2
//     instances.
//  3. A verdict holds the rollout (HELD): it is no longer judged, and the
//     three baseline instances are deleted; their reps stop them.
//  4. Had it gone on to COMPLETE, the same: deleted once it completed.

// withoutBaseline splits the baseline instances' rows off rows (an LRP's
// rows in key order).
func withoutBaseline(rows []row) (regular, baseline []row) {
	return splitOff(rows, models.IsBaselineIndex)
}

// baselineWanted is how many baseline instances the LRP d, with
// instances wanted, rows (its regular rows) and its rollout ro (nil for
// none) wants this pass: none once a verdict of this pass ends its
// judging (held, failed, reverting).
func (p *planner) baselineWanted(d *DesiredSchedule, ro *rolloutLRP, instances int32, rows []row) int32 {
	rec := p.rollouts[d.ProcessGuid]
	if rec == nil || rec.DefinitionID != d.ActiveDefinitionID || d.ActiveDefinitionID == d.HealthyDefinitionID ||
		ro != nil && (ro.action != models.Continue || ro.reverting) {
		return 0
	}
	canaries := int32(0)
	for i := range rows {
		r := &rows[i]
		if r.Presence == ordinary && r.Index >= 0 && r.Index < instances && r.DefinitionID == d.ActiveDefinitionID {
			canaries++
		}
	}
	return models.BaselineWanted(rec.State, rec.Judgement, canaries)
}

// reconcileBaseline keeps wanted baseline instances of d's healthy
// definition at the first wanted baseline indices: it deletes the rows
// beyond them, of another definition or presence, creates the missing
// ones, and reconciles the others as any ORDINARY instance.
func (p *planner) reconcileBaseline(d *DesiredSchedule, rows []row, wanted int32) {
	schedule := *d
	schedule.ActiveDefinitionID = d.HealthyDefinitionID
	if def := p.definition(d.ProcessGuid, d.HealthyDefinitionID); def != nil {
		schedule.MemoryMB, schedule.DiskMB = def.MemoryMB, def.DiskMB
	} else if wanted > 0 {
		// The healthy definition is not stored: nothing to start.
		wanted = 0
	}
	have := map[int32]*row{}
	for i := range rows {
		r := &rows[i]
		switch {
		case r.Index >= models.BaselineIndexBase+wanted:
			p.delete(r, "a baseline instance, and the rollout no longer wants it")
		case r.Presence != ordinary || r.DefinitionID != d.HealthyDefinitionID || have[r.Index] != nil:
			p.delete(r, "a baseline instance, but not an ORDINARY one of the healthy definition "+d.HealthyDefinitionID)
		default:
			have[r.Index] = r
		}
	}
	for k := int32(0); k < wanted; k++ {
		index := models.BaselineIndexBase + k
		if r := have[index]; r != nil {
			p.reconcileOrdinary(&schedule, r)
			continue
		}
		p.create(&schedule, index, fmt.Sprintf("a baseline instance of %s beside the instances of %s its analysis judges",
			d.HealthyDefinitionID, d.ActiveDefinitionID))
	}
}

// definition is the stored definition id of the LRP guid, nil when it is
// not stored.
func (p *planner) definition(guid, id string) *DefinitionRow {
	defs := p.definitions[guid]
	for i := range defs {
		if defs[i].DefinitionID == id {
			return &defs[i]
		}
	}
	return nil
}
