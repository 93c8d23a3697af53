package sqldb_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

// BenchmarkClaimStart has 32 cells claim and start the instances placed on
// them, each cell one goroutine, as 32 reps would: 3,200 instances of 320
// LRPs per round, two lifecycle writes each. It reports lifecycle writes
// per second and their 99th percentile latency.
func BenchmarkClaimStart(b *testing.B) {
	const cells, lrps, perLRP = 32, 320, 10
	forEachBenchDialect(b, func(b *testing.B, env benchEnv) {
		ctx := context.Background()
		for i := range lrps {
			if _, err := env.store.DesireLRP(ctx, newLRP(fmt.Sprintf("lrp-%03d", i), "bench", perLRP)); err != nil {
				b.Fatal(err)
			}
		}
		all, err := env.store.ActualLRPs(ctx, db.ActualLRPFilter{})
		if err != nil {
			b.Fatal(err)
		}
		// Round-robin placement: every cell runs instances of many LRPs.
		work := make([][]models.ActualLRPKey, cells)
		for i, lrp := range all {
			cell := i % cells
			if _, err := env.conn.Exec(dialect.Rebind(dialect.Name(env.dialect),
				"UPDATE actual_lrps SET cell_id = ? WHERE process_guid = ? AND instance_index = ?"),
				fmt.Sprintf("cell-%02d", cell), lrp.ProcessGuid, lrp.Index); err != nil {
				b.Fatal(err)
			}
			work[cell] = append(work[cell], models.ActualLRPKey{ProcessGuid: lrp.ProcessGuid, Index: lrp.Index, Presence: lrp.Presence})
		}
		netInfo := &models.NetInfo{Address: "10.0.0.1", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}

		b.Run("32-cells", func(b *testing.B) {
			var latencies []time.Duration
			var writes int
			var elapsed time.Duration
			for round := 0; b.Loop(); round++ {
				b.StopTimer()
				if _, err := env.conn.Exec(`UPDATE actual_lrps SET state = 'UNCLAIMED', instance_guid = '', net_info = NULL,
 routable = FALSE, modification_tag_index = modification_tag_index + 1`); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				began := time.Now()
				var mu sync.Mutex
				var wg sync.WaitGroup
				for cell, keys := range work {
					wg.Add(1)
					go func() {
						defer wg.Done()
						mine := make([]time.Duration, 0, 2*len(keys))
						for _, key := range keys {
							caller := models.Caller{InstanceGuid: fmt.Sprintf("ig-%d-%s-%d", round, key.ProcessGuid, key.Index), CellID: fmt.Sprintf("cell-%02d", cell)}
							start := time.Now()
							if _, err := env.store.ClaimActualLRP(ctx, key, caller); err != nil {
								b.Error(err)
								return
							}
							claimed := time.Now()
							if _, err := env.store.StartActualLRP(ctx, key, caller, netInfo, true); err != nil {
								b.Error(err)
								return
							}
							mine = append(mine, claimed.Sub(start), time.Since(claimed))
						}
						mu.Lock()
						latencies = append(latencies, mine...)
						mu.Unlock()
					}()
				}
				wg.Wait()
				elapsed += time.Since(began)
				writes += 2 * len(all)
			}
			b.ReportMetric(float64(writes)/elapsed.Seconds(), "writes/s")
			b.ReportMetric(float64(percentile(latencies, 0.99))/float64(time.Millisecond), "p99-ms")
		})
	})
}

// BenchmarkBulkReport has 8 cells at a time report the 250 instances each
// runs, all as the board has them (the steady state), out of 40 cells and
// 10,000 running instances. It reports reports per second and their 99th
// percentile latency.
func BenchmarkBulkReport(b *testing.B) {
	const cells, perCell, reporters = 40, 250, 8
	forEachBenchDialect(b, func(b *testing.B, env benchEnv) {
		ctx := context.Background()
		for i := range cells {
			if _, err := env.store.DesireLRP(ctx, newLRP(fmt.Sprintf("lrp-%02d", i), "bench", perCell)); err != nil {
				b.Fatal(err)
			}
		}
		netInfo := &models.NetInfo{Address: "10.0.0.1", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}
		encoded, err := proto.Marshal(netInfo)
		if err != nil {
			b.Fatal(err)
		}
		// Instance i of every LRP runs on cell i % cells.
		instanceGuid, cellID := "process_guid || '-' || instance_index", "'cell-' || (instance_index % 40)"
		if env.dialect == sqldb.MySQL {
			instanceGuid, cellID = "CONCAT(process_guid, '-', instance_index)", "CONCAT('cell-', instance_index % 40)"
		}
		if _, err := env.conn.Exec(dialect.Rebind(dialect.Name(env.dialect), `UPDATE actual_lrps SET state = 'RUNNING', routable = ?, net_info = ?,
 instance_guid = `+instanceGuid+`, cell_id = `+cellID), true, encoded); err != nil {
			b.Fatal(err)
		}
		reports := make([][]*models.ReportedInstance, cells)
		all, err := env.store.ActualLRPs(ctx, db.ActualLRPFilter{})
		if err != nil {
			b.Fatal(err)
		}
		cellIndex := map[string]int{}
		for i := range cells {
			cellIndex[fmt.Sprintf("cell-%d", i)] = i
		}
		for _, lrp := range all {
			i, ok := cellIndex[lrp.CellId]
			if !ok {
				b.Fatalf("instance %s/%d on unexpected cell %q", lrp.ProcessGuid, lrp.Index, lrp.CellId)
			}
			reports[i] = append(reports[i], &models.ReportedInstance{
				ProcessGuid: lrp.ProcessGuid, Index: lrp.Index, Presence: lrp.Presence, InstanceGuid: lrp.InstanceGuid,
				DefinitionId: lrp.DefinitionId, State: lrp.State, NetInfo: lrp.NetInfo, Routable: lrp.Routable,
			})
		}
		report := func(b *testing.B, cell int) time.Duration {
			start := time.Now()
			result, err := env.store.BulkReport(ctx, fmt.Sprintf("cell-%d", cell), reports[cell])
			if err != nil {
				b.Fatal(err)
			}
			if len(result.Stop) > 0 {
				b.Fatalf("cell-%d: %d instances to stop in the steady state", cell, len(result.Stop))
			}
			return time.Since(start)
		}
		// One report at a time: 1,000 cells every 30 s is 33 a second.
		b.Run("250-instances/serial", func(b *testing.B) {
			var latencies []time.Duration
			for i := 0; b.Loop(); i++ {
				latencies = append(latencies, report(b, i%cells))
			}
			b.ReportMetric(float64(percentile(latencies, 0.99))/float64(time.Millisecond), "p99-ms")
		})
		// As many at once as the machine takes, for throughput.
		b.Run("250-instances/8-reporters", func(b *testing.B) {
			var mu sync.Mutex
			var latencies []time.Duration
			var next atomic.Int64
			b.SetParallelism(max(1, reporters/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				for pb.Next() {
					mine = append(mine, report(b, int(next.Add(1))%cells))
				}
				mu.Lock()
				latencies = append(latencies, mine...)
				mu.Unlock()
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reports/s")
			b.ReportMetric(float64(percentile(latencies, 0.99))/float64(time.Millisecond), "p99-ms")
		})
	})
}
