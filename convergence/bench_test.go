package convergence_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/corkboard/corkboard/convergence"
)

// Run with: go test ./convergence -run '^$' -bench . -benchmem
//
// The pass budget (p99 < 1 s for 250,000 instances) includes loading the
// snapshot from SQL; these measure the planner alone.

var benchNow = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// benchCells returns n present cells over four zones, each with room for
// 300 instances of 256 MB.
func benchCells(n int) []convergence.CellRow {
	cells := make([]convergence.CellRow, n)
	for i := range cells {
		cells[i] = convergence.CellRow{
			CellID:    fmt.Sprintf("cell-%04d", i),
			Zone:      fmt.Sprintf("z%d", i%4),
			Capacity:  convergence.Resources{MemoryMB: 300 * 256, DiskMB: 300 * 512, Instances: 300},
			ExpiresAt: benchNow.Add(30 * time.Second).UnixNano(),
		}
	}
	return cells
}

func benchDesired(lrps, instances int) []convergence.DesiredSchedule {
	desired := make([]convergence.DesiredSchedule, lrps)
	for i := range desired {
		desired[i] = convergence.DesiredSchedule{
			ProcessGuid:        fmt.Sprintf("lrp-%06d", i),
			Domain:             "apps",
			Instances:          int32(instances),
			ActiveDefinitionID: "v1",
			MemoryMB:           256,
			DiskMB:             512,
		}
	}
	return desired
}

// steadySnapshot is 50,000 LRPs × 5 RUNNING instances spread over 1,000
// cells, in the key order SQL returns them: nothing to fix.
func steadySnapshot() *convergence.Snapshot {
	const lrps, instances, cells = 50_000, 5, 1_000
	s := &convergence.Snapshot{
		Desired:      benchDesired(lrps, instances),
		Cells:        benchCells(cells),
		FreshDomains: []string{"apps"},
	}
	s.Actual = make([]convergence.ActualRow, 0, lrps*instances)
	for i, d := range s.Desired {
		for index := range int32(instances) {
			s.Actual = append(s.Actual, convergence.ActualRow{
				ProcessGuid:       d.ProcessGuid,
				Index:             index,
				Presence:          ordinary,
				State:             runningState,
				Domain:            "apps",
				InstanceGuid:      fmt.Sprintf("%s-%d", d.ProcessGuid, index),
				CellID:            s.Cells[(i*instances+int(index))%cells].CellID,
				DefinitionID:      "v1",
				Since:             benchNow.Add(-time.Hour).UnixNano(),
				Routable:          true,
				ModificationIndex: 3,
				MemoryMB:          256,
				DiskMB:            512,
			})
		}
	}
	return s
}

func benchmarkCompute(b *testing.B, s *convergence.Snapshot, check func(*testing.B, *convergence.Plan)) {
	cfg := convergence.DefaultConfig()
	check(b, convergence.Compute(s, benchNow, cfg))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		convergence.Compute(s, benchNow, cfg)
	}
}

func BenchmarkComputeSteadyState250k(b *testing.B) {
	benchmarkCompute(b, steadySnapshot(), func(b *testing.B, p *convergence.Plan) {
		if !p.Writes.Empty() || p.Counts.Running != 250_000 {
			b.Fatalf("expected nothing to do for 250,000 running instances, got %+v", p.Counts)
		}
	})
}

// The same state in random order, as a database without a usable ORDER BY
// would return it: the planner sorts.
func BenchmarkComputeSteadyState250kUnsorted(b *testing.B) {
	s := steadySnapshot()
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(s.Actual), func(i, j int) { s.Actual[i], s.Actual[j] = s.Actual[j], s.Actual[i] })
	r.Shuffle(len(s.Desired), func(i, j int) { s.Desired[i], s.Desired[j] = s.Desired[j], s.Desired[i] })
	benchmarkCompute(b, s, func(b *testing.B, p *convergence.Plan) {
		if !p.Writes.Empty() {
			b.Fatalf("expected nothing to do, got %+v", p.Counts)
		}
	})
}

// The steady state with 5% of instances missing, 1% crashed (restarting at
// once) and 1% extra.
func BenchmarkComputeRepairs250k(b *testing.B) {
	s := steadySnapshot()
	kept := s.Actual[:0]
	for i, row := range s.Actual {
		switch {
		case i%20 == 0:
			continue // missing
		case i%100 == 1:
			row.State = crashedState
			row.CrashCount = 1
		}
		kept = append(kept, row)
	}
	s.Actual = kept
	for i := range s.Desired {
		if i%20 == 0 {
			s.Desired[i].Instances-- // its index 4 becomes extra: 1% of instances
		}
	}
	benchmarkCompute(b, s, func(b *testing.B, p *convergence.Plan) {
		w := p.Writes
		if len(w.Create) != 12_500 || len(w.Restart) != 2_500 || len(w.Delete) != 2_500 || p.Counts.Unplaced != 0 {
			b.Fatalf("unexpected plan: %d creates, %d restarts, %d deletes, %+v",
				len(w.Create), len(w.Restart), len(w.Delete), p.Counts)
		}
	})
}

// 100,000 new instances (20,000 LRPs × 5) on 1,000 empty cells.
func BenchmarkPlace100kNewInstances(b *testing.B) {
	s := &convergence.Snapshot{Desired: benchDesired(20_000, 5), Cells: benchCells(1_000)}
	benchmarkCompute(b, s, func(b *testing.B, p *convergence.Plan) {
		if len(p.Writes.Create) != 100_000 || p.Counts.Unplaced != 0 {
			b.Fatalf("expected 100,000 placed creates, got %d (%d unplaced)", len(p.Writes.Create), p.Counts.Unplaced)
		}
	})
}

// One LRP of 100,000 instances (the most an LRP may have) on 1,000 cells:
// after the first 1,000 every cell runs it, the worst case for spreading.
func BenchmarkPlace100kOneLRP(b *testing.B) {
	s := &convergence.Snapshot{Desired: benchDesired(1, 100_000), Cells: benchCells(1_000)}
	benchmarkCompute(b, s, func(b *testing.B, p *convergence.Plan) {
		if p.Counts.Unplaced != 0 {
			b.Fatalf("expected all placed, %d unplaced", p.Counts.Unplaced)
		}
	})
}

// 100,000 new instances when only half fit: the other half fail fast.
func BenchmarkPlace100kHalfFit(b *testing.B) {
	cells := benchCells(1_000)
	for i := range cells {
		cells[i].Capacity.Instances = 50
	}
	s := &convergence.Snapshot{Desired: benchDesired(20_000, 5), Cells: cells}
	benchmarkCompute(b, s, func(b *testing.B, p *convergence.Plan) {
		if p.Counts.Unplaced != 50_000 {
			b.Fatalf("expected 50,000 unplaced, got %d", p.Counts.Unplaced)
		}
	})
}
