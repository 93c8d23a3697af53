package sqldb_test

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/corkboard/corkboard/convergence"
)

// Run with: go test ./db/sqldb -run '^$' -bench Convergence -benchtime 5x
// Postgres and MySQL run when their DSNs are set (see internal/testdb).
//
// The board's targets on a 2-core machine: a convergence pass over 250,000
// instances (50,000 LRPs × 5 on 1,000 cells) with p99 < 1 s, the repairs of
// 5% missing, 1% crashed and 1% extra persisted < 2 s, and 100,000 new
// instances placed < 10 s; each including the snapshot and planning.

const (
	benchLRPs      = 50_000
	benchInstances = 5
	benchCells     = 1_000
)

// BenchmarkConvergenceSnapshot loads 250,000 running instances, and
// reports the heap the snapshot keeps.
func BenchmarkConvergenceSnapshot(b *testing.B) {
	forEachBenchDialect(b, func(b *testing.B, env benchEnv) {
		ctx := context.Background()
		seedBenchState(b, env, benchLRPs, steadyRows)
		b.Run("250k", func(b *testing.B) {
			b.ReportAllocs()
			var latencies []time.Duration
			cpu := processCPU()
			for b.Loop() {
				start := time.Now()
				snap, err := env.store.ConvergenceSnapshot(ctx, nil)
				latencies = append(latencies, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				if len(snap.Actual) != benchLRPs*benchInstances || len(snap.Desired) != benchLRPs || len(snap.Cells) != benchCells {
					b.Fatalf("snapshot has %d desired, %d actual, %d cells", len(snap.Desired), len(snap.Actual), len(snap.Cells))
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N)/float64(time.Millisecond), "client-cpu-ms/op")
			b.ReportMetric(float64(percentile(latencies, 0.5))/float64(time.Millisecond), "p50-ms")
			b.ReportMetric(float64(percentile(latencies, 0.99))/float64(time.Millisecond), "p99-ms")
			b.ReportMetric(retainedBySnapshot(b, env)/(1<<20), "retained-MB")
		})
	})
}

// processCPU is the CPU time this process has used, in user and system
// mode: on a shared machine, a cost that does not grow with the load of
// other processes the way wall time does. For SQLite it is all the work;
// for Postgres and MySQL the server's share is not in it.
func processCPU() time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

// retainedBySnapshot is how many bytes of heap a snapshot keeps alive.
func retainedBySnapshot(b *testing.B, env benchEnv) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	snap, err := env.store.ConvergenceSnapshot(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(snap)
	return float64(after.HeapAlloc) - float64(before.HeapAlloc)
}

// BenchmarkConvergencePass is a whole pass over 250,000 running instances
// with nothing to fix: snapshot and plan.
func BenchmarkConvergencePass(b *testing.B) {
	forEachBenchDialect(b, func(b *testing.B, env benchEnv) {
		seedBenchState(b, env, benchLRPs, steadyRows)
		b.Run("250k-steady", func(b *testing.B) {
			var passes []time.Duration
			var cpu time.Duration
			for b.Loop() {
				p := runBenchPass(b, env)
				if !p.plan.Writes.Empty() {
					b.Fatalf("steady state planned writes: %+v", p.plan.Counts)
				}
				passes = append(passes, p.total())
				cpu += p.cpu
			}
			b.ReportMetric(float64(cpu)/float64(b.N)/float64(time.Millisecond), "client-cpu-ms")
			b.ReportMetric(float64(percentile(passes, 0.5))/float64(time.Millisecond), "p50-ms")
			b.ReportMetric(float64(percentile(passes, 0.99))/float64(time.Millisecond), "p99-ms")
		})
	})
}

// BenchmarkConvergenceRepairs converges 250,000 instances of which 5% are
// missing, 1% crashed and 1% extra: 12,500 creates, 2,500 restarts (and
// their placements) and 2,500 deletions, persisted.
func BenchmarkConvergenceRepairs(b *testing.B) {
	forEachBenchDialect(b, func(b *testing.B, env benchEnv) {
		seedBenchState(b, env, benchLRPs, repairRows)
		b.Run("250k", func(b *testing.B) {
			var passes []benchPass
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				reseedBenchActual(b, env, benchLRPs, true)
				b.StartTimer()
				p := runBenchPass(b, env)
				w := p.plan.Writes
				if len(w.Create) != 12_500 || len(w.Restart) != 2_500 || len(w.Place) != 2_500 || len(w.Delete) != 2_500 {
					b.Fatalf("unexpected plan: %d creates, %d restarts, %d places, %d deletes",
						len(w.Create), len(w.Restart), len(w.Place), len(w.Delete))
				}
				if p.result.Applied != 20_000 || p.result.Skipped != 0 {
					b.Fatalf("applied %d, skipped %d; want 20,000 and 0", p.result.Applied, p.result.Skipped)
				}
				passes = append(passes, p)
			}
			reportPasses(b, passes)
		})
	})
}

// BenchmarkConvergencePlace100k places 100,000 new instances (20,000 LRPs
// × 5) on 1,000 empty cells: as rows the pass creates, and as the
// UNCLAIMED rows desiring the LRPs made.
func BenchmarkConvergencePlace100k(b *testing.B) {
	const lrps = 20_000
	forEachBenchDialect(b, func(b *testing.B, env benchEnv) {
		seedBenchState(b, env, lrps, noRows)
		for _, variant := range []struct {
			name     string
			existing bool
		}{{"create", false}, {"place-existing", true}} {
			b.Run(variant.name, func(b *testing.B) {
				var passes []benchPass
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					resetUnplaced(b, env, lrps, variant.existing)
					b.StartTimer()
					p := runBenchPass(b, env)
					if p.plan.Counts.Unplaced != 0 || p.result.Applied != lrps*benchInstances || p.result.Skipped != 0 {
						b.Fatalf("applied %d, skipped %d, unplaced %d", p.result.Applied, p.result.Skipped, p.plan.Counts.Unplaced)
					}
					passes = append(passes, p)
				}
				reportPasses(b, passes)
			})
		}
	})
}

type benchPass struct {
	plan                   *convergence.Plan
	result                 *convergence.ConvergenceResult
	snapshot, plan_, apply time.Duration
	// cpu is the CPU time the process used for the pass.
	cpu time.Duration
}

func (p benchPass) total() time.Duration { return p.snapshot + p.plan_ + p.apply }

func runBenchPass(b *testing.B, env benchEnv) benchPass {
	ctx := context.Background()
	cpu := processCPU()
	start := time.Now()
	snap, err := env.store.ConvergenceSnapshot(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	loaded := time.Now()
	plan := convergence.Compute(snap, loaded, convergence.DefaultConfig())
	planned := time.Now()
	result := &convergence.ConvergenceResult{}
	if !plan.Writes.Empty() {
		if result, err = env.store.ApplyConvergence(ctx, &plan.Writes); err != nil {
			b.Fatal(err)
		}
	}
	return benchPass{plan: plan, result: result, snapshot: loaded.Sub(start), plan_: planned.Sub(loaded),
		apply: time.Since(planned), cpu: processCPU() - cpu}
}

func reportPasses(b *testing.B, passes []benchPass) {
	var snapshot, plan, apply, cpu, worst time.Duration
	for _, p := range passes {
		snapshot += p.snapshot
		plan += p.plan_
		apply += p.apply
		cpu += p.cpu
		worst = max(worst, p.total())
	}
	n := time.Duration(len(passes)) * time.Millisecond
	b.ReportMetric(float64(snapshot)/float64(n), "snapshot-ms")
	b.ReportMetric(float64(plan)/float64(n), "plan-ms")
	b.ReportMetric(float64(apply)/float64(n), "apply-ms")
	b.ReportMetric(float64(worst)/float64(time.Millisecond), "max-total-ms")
	b.ReportMetric(float64(cpu)/float64(n), "client-cpu-ms")
}

// benchRows says which instances seedBenchState stores.
type benchRows int

const (
	// noRows stores none.
	noRows benchRows = iota
	// steadyRows has every instance running.
	steadyRows
	// repairRows has 5% of instances missing, 1% crashed and 1% extra.
	repairRows
)

// seedBenchState stores lrps LRPs of benchInstances, benchCells cells with
// room for 300 instances each, and the rows of the instances running on
// them, then refreshes the planner statistics.
func seedBenchState(b *testing.B, env benchEnv, lrps int, rows benchRows) {
	ctx := context.Background()
	start := time.Now()
	s := seeder{conn: env.conn, dialect: env.dialect}
	desired := make([]seedLRP, lrps)
	for i := range desired {
		desired[i] = seedLRP{guid: benchGuid(i), domain: "apps", instances: benchInstances, definitionID: "v1", memoryMB: 256, diskMB: 512}
		if rows == repairRows && i%20 == 0 {
			desired[i].instances-- // its last instance becomes extra: 1% of instances
		}
	}
	cells := make([]seedCell, benchCells)
	for i := range cells {
		cells[i] = seedCell{
			cellID: fmt.Sprintf("cell-%04d", i), zone: fmt.Sprintf("z%d", i%4),
			memoryMB: 300 * 256, diskMB: 300 * 512, maxInstance: 300,
			expiresAt: time.Now().Add(24 * time.Hour).UnixNano(),
		}
	}
	for _, err := range []error{s.desired(ctx, desired), s.cells(ctx, cells), s.domain(ctx, "apps", 0)} {
		if err != nil {
			b.Fatal(err)
		}
	}
	if rows != noRows {
		reseedBenchActual(b, env, lrps, rows == repairRows)
	}
	if err := s.analyze(ctx); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: seeded %d LRPs in %v", env.dialect, lrps, time.Since(start).Round(time.Millisecond))
}

// reseedBenchActual replaces every instance row with the running state of
// seedBenchState.
func reseedBenchActual(b *testing.B, env benchEnv, lrps int, repairs bool) {
	ctx := context.Background()
	if _, err := env.conn.ExecContext(ctx, "DELETE FROM actual_lrps"); err != nil {
		b.Fatal(err)
	}
	var rows []seedActual
	since := time.Now().Add(-time.Hour).UnixNano()
	for i := range lrps {
		for index := range int32(benchInstances) {
			r := i*benchInstances + int(index)
			row := seedActual{
				guid: benchGuid(i), index: index, state: "RUNNING", domain: "apps",
				instanceGuid: fmt.Sprintf("%s-%d", benchGuid(i), index), cellID: fmt.Sprintf("cell-%04d", r%benchCells),
				definitionID: "v1", since: since, routable: true, modIndex: 3,
			}
			if repairs {
				switch {
				case r%20 == 0:
					continue // missing
				case r%100 == 1:
					row.state, row.crashCount, row.routable = "CRASHED", 1, false
				}
			}
			rows = append(rows, row)
		}
	}
	s := seeder{conn: env.conn, dialect: env.dialect}
	if err := s.actual(ctx, len(rows), func(i int) seedActual { return rows[i] }); err != nil {
		b.Fatal(err)
	}
}

// resetUnplaced leaves the LRPs with no instances, or with UNCLAIMED ones
// on no cell.
func resetUnplaced(b *testing.B, env benchEnv, lrps int, existing bool) {
	ctx := context.Background()
	if _, err := env.conn.ExecContext(ctx, "DELETE FROM actual_lrps"); err != nil {
		b.Fatal(err)
	}
	if !existing {
		return
	}
	s := seeder{conn: env.conn, dialect: env.dialect}
	err := s.actual(ctx, lrps*benchInstances, func(r int) seedActual {
		i := r / benchInstances
		return seedActual{guid: benchGuid(i), index: int32(r % benchInstances), domain: "apps", definitionID: "v1", since: 1}
	})
	if err != nil {
		b.Fatal(err)
	}
}

func benchGuid(i int) string { return fmt.Sprintf("lrp-%06d", i) }
