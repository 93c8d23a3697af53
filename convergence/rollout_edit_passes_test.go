package convergence_test

import (
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// An edit in flight (models.DecideRolloutEdit) seen by the planner: a
// rollout of 6 instances with max_surge 1 moves one index a pass; edited to
// max_surge 3 mid-way, the next pass starts 3 at once, and the instances
// already on the new definition are left as they are.
var _ = Describe("A rollout edited in flight", func() {
	It("starts as many replacements as the new max_surge allows at the next pass, leaving updated instances alone", func() {
		cfg := convergence.DefaultConfig()
		now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		s := &convergence.Snapshot{FreshDomains: []string{"apps"}}
		for i := range 2 {
			s.Cells = append(s.Cells, convergence.CellRow{
				CellID: fmt.Sprintf("cell-%d", i), Zone: fmt.Sprintf("z%d", i),
				Capacity:  convergence.Resources{MemoryMB: 1 << 20, DiskMB: 1 << 20, Instances: 100},
				ExpiresAt: now.Add(time.Hour).UnixNano(),
			})
		}
		s.Desired = []convergence.DesiredSchedule{{
			ProcessGuid: "web", Domain: "apps", Instances: 6, ActiveDefinitionID: "v2", HealthyDefinitionID: "v1",
			UpdateStrategy: &models.UpdateStrategy{MaxSurge: "1"}, MemoryMB: 64, DiskMB: 64,
		}}
		s.Rollouts = []convergence.RolloutRow{{ProcessGuid: "web", State: models.RolloutStatus_PROGRESSING, DefinitionID: "v2",
			StartedAt: now.UnixNano(), ProgressAt: now.UnixNano(), ModificationIndex: 1}}
		s.Definitions = []convergence.DefinitionRow{
			{ProcessGuid: "web", DefinitionID: "v2", CreatedAt: now.UnixNano()},
			{ProcessGuid: "web", DefinitionID: "v1", CreatedAt: now.Add(-time.Hour).UnixNano()},
		}
		for index := range int32(6) {
			s.Actual = append(s.Actual, convergence.ActualRow{
				ProcessGuid: "web", Index: index, Presence: ordinary, State: runningState, Domain: "apps",
				InstanceGuid: fmt.Sprintf("old-%d", index), CellID: fmt.Sprintf("cell-%d", index%2), DefinitionID: "v1",
				Routable: true, Since: now.Add(-time.Hour).UnixNano(), ModificationIndex: 3, MemoryMB: 64, DiskMB: 64,
			})
		}

		// Two passes with max_surge 1: one replacement each.
		for pass := range 2 {
			plan := convergence.Compute(s, now, cfg)
			Expect(plan.Writes.Retire).To(HaveLen(1), "pass %d: %v", pass, plan.Reasons)
			after, err := convergence.ApplyPlan(s, plan, now)
			Expect(err).NotTo(HaveOccurred())
			now = now.Add(time.Second)
			s = playCells(after, now, nil)
		}
		updated := rowsOn(s, "v2")
		Expect(updated).To(HaveLen(2), "two indices run v2 when the edit comes")

		// Unedited, the next pass would start one more.
		Expect(convergence.Compute(s, now, cfg).Writes.Retire).To(HaveLen(1))

		// The edit, as the store applies it: the decided strategy on the LRP.
		rec := record(s, "web")
		edit := &models.EditRolloutRequest{ProcessGuid: "web", MaxSurge: proto.String("3")}
		Expect(edit.Validate()).To(Succeed())
		decided, err := models.DecideRolloutEdit("web", "v2", s.Desired[0].UpdateStrategy,
			models.StageRecord{State: rec.State, DefinitionID: rec.DefinitionID, ProgressAt: rec.ProgressAt, FinishedAt: rec.FinishedAt},
			edit, now.UnixNano())
		Expect(err).NotTo(HaveOccurred())
		Expect(decided.Line).To(Equal("max_surge 1 → 3"))
		s.Desired[0].UpdateStrategy = decided.Strategy

		plan := convergence.Compute(s, now, cfg)
		Expect(plan.Writes.Retire).To(HaveLen(3), "three started at once: %v", plan.Reasons)
		Expect(plan.Writes.Create).To(HaveLen(3))
		for _, r := range plan.Writes.Retire {
			Expect(r.Row.Key.Presence).To(Equal(ordinary))
			Expect(indicesOf(updated)).NotTo(ContainElement(r.Row.Key.Index), "an updated index is not replaced again")
		}
		after, err := convergence.ApplyPlan(s, plan, now)
		Expect(err).NotTo(HaveOccurred())
		for _, row := range updated {
			i := slices.IndexFunc(after.Actual, func(r convergence.ActualRow) bool { return r.Key() == row.Key() })
			Expect(i).NotTo(Equal(-1))
			Expect(after.Actual[i]).To(Equal(row), "index %d: untouched by the pass after the edit", row.Index)
		}

		// And it finishes: the last replacement within the new surge too.
		for pass := 0; pass < 10 && !rolledOut(after); pass++ {
			now = now.Add(time.Second)
			s = playCells(after, now, nil)
			plan = convergence.Compute(s, now, cfg)
			Expect(len(plan.Writes.Retire)).To(BeNumerically("<=", 3))
			after, err = convergence.ApplyPlan(s, plan, now)
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(rolledOut(after)).To(BeTrue())
	})
})

// rowsOn is the ORDINARY rows on definition id that are RUNNING.
func rowsOn(s *convergence.Snapshot, id string) []convergence.ActualRow {
	var rows []convergence.ActualRow
	for _, r := range s.Actual {
		if r.Presence == ordinary && r.DefinitionID == id && r.State == runningState {
			rows = append(rows, r)
		}
	}
	return rows
}

func indicesOf(rows []convergence.ActualRow) []int32 {
	var indices []int32
	for _, r := range rows {
		indices = append(indices, r.Index)
	}
	return indices
}
