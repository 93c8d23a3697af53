package convergence_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// The planner in the middle of a rolling update (issue 5's benchmark:
// 10,000 instances, surge 25%, unavailable 0, cells that report healthy at
// once). bbs-load rollout measures the whole rollout on a database; these
// measure one planner pass alone.

// rollingSnapshot adds to s one LRP, guid, of n instances halfway through
// a rollout from v1 to v2 with max_surge 25%: the first quarter of its
// indices done (ORDINARY on v2), the second quarter with a ready
// successor on v2 beside its RETIRING v1 predecessor, the rest on v1.
// Its instances go round-robin over s.Cells.
func rollingSnapshot(s *convergence.Snapshot, guid string, n int) {
	s.Desired = append(s.Desired, convergence.DesiredSchedule{
		ProcessGuid:         guid,
		Domain:              "apps",
		Instances:           int32(n),
		ActiveDefinitionID:  "v2",
		HealthyDefinitionID: "v1",
		UpdateStrategy:      &models.UpdateStrategy{MaxSurge: "25%", MaxUnavailable: "0"},
		MemoryMB:            256,
		DiskMB:              512,
	})
	started := benchNow.Add(-time.Minute).UnixNano()
	s.Rollouts = append(s.Rollouts, convergence.RolloutRow{
		ProcessGuid:       guid,
		State:             models.RolloutStatus_PROGRESSING,
		Reason:            "rolling from v1 to v2",
		DefinitionID:      "v2",
		StartedAt:         started,
		ProgressAt:        started,
		UpdatedInstances:  int32(n / 4),
		InFlight:          int32(n / 4),
		ModificationIndex: 3,
	})
	s.Definitions = append(s.Definitions,
		convergence.DefinitionRow{ProcessGuid: guid, DefinitionID: "v2", CreatedAt: started},
		convergence.DefinitionRow{ProcessGuid: guid, DefinitionID: "v1", CreatedAt: benchNow.Add(-24 * time.Hour).UnixNano()},
	)
	row := func(index int, presence models.ActualLRP_Presence, definition string) convergence.ActualRow {
		return convergence.ActualRow{
			ProcessGuid:       guid,
			Index:             int32(index),
			Presence:          presence,
			State:             runningState,
			Domain:            "apps",
			InstanceGuid:      fmt.Sprintf("%s-%d-%s", guid, index, definition),
			CellID:            s.Cells[index%len(s.Cells)].CellID,
			DefinitionID:      definition,
			Since:             benchNow.Add(-30 * time.Second).UnixNano(),
			Routable:          true,
			ModificationIndex: 3,
			MemoryMB:          256,
			DiskMB:            512,
		}
	}
	// Key order: (guid, index, presence), ORDINARY before RETIRING.
	for index := range n {
		switch {
		case index < n/4:
			s.Actual = append(s.Actual, row(index, ordinary, "v2"))
		case index < n/2:
			s.Actual = append(s.Actual, row(index, ordinary, "v2"), row(index, models.ActualLRP_RETIRING, "v1"))
		default:
			s.Actual = append(s.Actual, row(index, ordinary, "v1"))
		}
	}
}

// checkRollingStep: the quarter with ready successors has its
// predecessors told to stop, and the next quarter starts, start before
// stop.
func checkRollingStep(n int) func(*testing.B, *convergence.Plan) {
	return func(b *testing.B, p *convergence.Plan) {
		w := p.Writes
		if len(w.RequestStop) != n/4 || len(w.Retire) != n/4 || len(w.Create) != n/4 || p.Counts.Unplaced != 0 {
			b.Fatalf("want %d stops, retirements and placed creates; got %d stops, %d retirements, %d creates (%d unplaced)",
				n/4, len(w.RequestStop), len(w.Retire), len(w.Create), p.Counts.Unplaced)
		}
	}
}

// One LRP of 10,000 instances halfway through its rollout, on 100 cells,
// and nothing else.
func BenchmarkComputeRollout10k(b *testing.B) {
	s := &convergence.Snapshot{Cells: benchCells(100), FreshDomains: []string{"apps"}}
	rollingSnapshot(s, "rolling", 10_000)
	benchmarkCompute(b, s, checkRollingStep(10_000))
}

// The same LRP beside the steady 250,000 instances of the other planner
// benchmarks: a full pass of a large board while one big LRP rolls.
func BenchmarkComputeRollout10kIn250k(b *testing.B) {
	s := steadySnapshot()
	// "rolling" sorts after every "lrp-…" guid: the snapshot stays in key
	// order.
	rollingSnapshot(s, "rolling", 10_000)
	benchmarkCompute(b, s, checkRollingStep(10_000))
}

// 2,000 LRPs × 5 instances, each halfway through its own rollout (surge
// 25% of 5 rounds up to 2): the same 10,000 instances spread over many
// small rollouts.
func BenchmarkComputeRollout2000x5(b *testing.B) {
	s := &convergence.Snapshot{Cells: benchCells(100), FreshDomains: []string{"apps"}}
	for i := range 2_000 {
		rollingFive(s, fmt.Sprintf("rolling-%04d", i))
	}
	benchmarkCompute(b, s, func(b *testing.B, p *convergence.Plan) {
		w := p.Writes
		// Per LRP: index 0 done, 1 and 2 ready beside their predecessors
		// (stopped now), 3 and 4 outdated (started now, surge 2).
		if len(w.RequestStop) != 4_000 || len(w.Retire) != 4_000 || len(w.Create) != 4_000 || p.Counts.Unplaced != 0 {
			b.Fatalf("want 4,000 stops, retirements and placed creates; got %d stops, %d retirements, %d creates (%d unplaced)",
				len(w.RequestStop), len(w.Retire), len(w.Create), p.Counts.Unplaced)
		}
	})
}

// rollingFive adds a 5-instance LRP rolling from v1 to v2 with surge 25%
// (2): index 0 done, 1 and 2 with a ready successor beside their RETIRING
// predecessor, 3 and 4 on v1.
func rollingFive(s *convergence.Snapshot, guid string) {
	before := len(s.Actual)
	rollingSnapshot(s, guid, 5)
	// rollingSnapshot splits 5 as 1 done, 1 ready, 3 outdated; make index 2
	// ready too.
	var out []convergence.ActualRow
	for _, row := range s.Actual[before:] {
		out = append(out, row)
		if row.Index == 2 && row.Presence == ordinary {
			out[len(out)-1].DefinitionID = "v2"
			retiring := row
			retiring.Presence = models.ActualLRP_RETIRING
			retiring.InstanceGuid += "-old"
			out = append(out, retiring)
		}
	}
	s.Actual = append(s.Actual[:before], out...)
	r := &s.Rollouts[len(s.Rollouts)-1]
	r.UpdatedInstances, r.InFlight = 1, 2
}
