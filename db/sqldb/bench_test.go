package sqldb_test

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
)

// Run with: go test ./db/sqldb -run '^$' -bench . -benchtime 5s
// Postgres and MySQL run when their DSNs are set (see internal/testdb).

// BenchmarkDesire desires one-instance LRPs from 32 concurrent goroutines
// and reports throughput and the 99th percentile latency.
func BenchmarkDesire(b *testing.B) {
	forEachBenchDialect(b, func(b *testing.B, env benchEnv) {
		var seq atomic.Int64
		b.Run("32-clients", func(b *testing.B) {
			template := newLRP("template", "bench", 1)
			var mu sync.Mutex
			var latencies []time.Duration
			b.SetParallelism(max(1, 32/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				for pb.Next() {
					lrp := proto.Clone(template).(*models.DesiredLRP)
					lrp.ProcessGuid = fmt.Sprintf("bench-%d", seq.Add(1))
					start := time.Now()
					if _, err := env.store.DesireLRP(context.Background(), lrp); err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(start))
				}
				mu.Lock()
				latencies = append(latencies, mine...)
				mu.Unlock()
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "desires/s")
			b.ReportMetric(float64(percentile(latencies, 0.99))/float64(time.Millisecond), "p99-ms")
		})
	})
}

// BenchmarkListActualLRPs lists 100,000 instances (100 LRPs of 1,000), all
// running with net info, as convergence and the CLI would.
func BenchmarkListActualLRPs(b *testing.B) {
	const lrps, perLRP = 100, 1000
	forEachBenchDialect(b, func(b *testing.B, env benchEnv) {
		ctx := context.Background()
		for i := range lrps {
			if _, err := env.store.DesireLRP(ctx, newLRP(fmt.Sprintf("lrp-%03d", i), "bench", perLRP)); err != nil {
				b.Fatal(err)
			}
		}
		netInfo, err := proto.Marshal(&models.NetInfo{
			Address: "10.0.0.1", InstanceAddress: "172.16.0.5",
			Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}},
		})
		if err != nil {
			b.Fatal(err)
		}
		// Every instance routed as a definition with routes has it: its
		// routes without host ports, which a list fills from net_info.
		routePorts, err := proto.Marshal(&models.RoutePorts{Ports: []*models.RoutePort{
			{Router: "http", Route: "web.example.com", ContainerPort: 8080},
		}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := env.conn.Exec(dialect.Rebind(dialect.Name(env.dialect),
			"UPDATE actual_lrps SET state = 'RUNNING', cell_id = 'cell-1', instance_guid = 'ig', routable = ?, net_info = ?, route_ports = ?"),
			true, netInfo, routePorts); err != nil {
			b.Fatal(err)
		}
		b.Run("100000", func(b *testing.B) {
			for b.Loop() {
				got, err := env.store.ActualLRPs(ctx, db.ActualLRPFilter{})
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != lrps*perLRP {
					b.Fatalf("listed %d instances, want %d", len(got), lrps*perLRP)
				}
			}
		})
		if err := (seeder{conn: env.conn, dialect: env.dialect}).analyze(ctx, "actual_lrps"); err != nil {
			b.Fatal(err)
		}
		// How the API streams a whole list: a page at a time, and by the
		// domain every instance is in, as a Diego-style client lists.
		for name, domain := range map[string]string{"100000 in pages of 500": "", "100000 in pages of 500 by domain": "bench"} {
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					listed := 0
					filter := db.ActualLRPFilter{Limit: 500, Domain: domain}
					for {
						page, err := env.store.ActualLRPs(ctx, filter)
						if err != nil {
							b.Fatal(err)
						}
						listed += len(page)
						if len(page) < filter.Limit {
							break
						}
						last := page[len(page)-1]
						filter.After = &models.ActualLRPKey{ProcessGuid: last.ProcessGuid, Index: last.Index, Presence: last.Presence}
					}
					if listed != lrps*perLRP {
						b.Fatalf("listed %d instances, want %d", listed, lrps*perLRP)
					}
				}
			})
		}
	})
}

// BenchmarkListOperations pages through 100,000 operations (100 LRPs of
// 1,000), each holding its request with a definition and a history of two
// lines, 1,000 a page, as `cork operations` would: one op is one whole
// listing. The target: well under a second.
func BenchmarkListOperations(b *testing.B) {
	const lrps, perLRP = 100, 1000
	forEachBenchDialect(b, func(b *testing.B, env benchEnv) {
		ctx := context.Background()
		params, err := anypb.New(&models.UpdateDesiredLRPRequest{ProcessGuid: "lrp-000", Update: &models.DesiredLRPUpdate{
			Definition: newDefinition("", "/bin/app"), UpdateIdentifier: "v2", Instances: int32p(4)}})
		if err != nil {
			b.Fatal(err)
		}
		paramBlob, err := proto.Marshal(params)
		if err != nil {
			b.Fatal(err)
		}
		history, err := proto.Marshal(&models.OperationHistory{Events: []*models.OperationEvent{
			{At: 1, Message: "definition v2 activated: rolling from v1 to v2; instances 3 → 4"},
			{At: 2, Message: "4 of 4 instances on v2"},
		}})
		if err != nil {
			b.Fatal(err)
		}
		seed := seeder{conn: env.conn, dialect: env.dialect}
		err = seed.insert(ctx, "operations", []string{
			"id", "process_guid", "sequence", "kind", "status", "reason", "parameters", "definition_id", "requested_by",
			"created_at", "started_at", "finished_at", "lease_owner", "lease_expires_at", "history", "ended",
			"modification_index",
		}, lrps*perLRP, func(i int, args []any) []any {
			at := int64(1_700_000_000_000_000_000) + int64(i)
			return append(args, fmt.Sprintf("%016x%08x", at, i), fmt.Sprintf("lrp-%03d", i%lrps), int64(i/lrps+1),
				"UPDATE_DEFINITION", "FINISHED", "every index runs v2", paramBlob, "v2", "cork from 10.0.0.1:5000",
				at, at, at, "board-1", at, history, true, 3)
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := seed.analyze(ctx, "operations"); err != nil {
			b.Fatal(err)
		}
		listAll := func(b *testing.B, filter db.OperationFilter, want int) {
			n := 0
			for {
				ops, next, err := env.store.Operations(ctx, filter)
				if err != nil {
					b.Fatal(err)
				}
				n += len(ops)
				if next == "" {
					break
				}
				filter.Cursor = next
			}
			if n != want {
				b.Fatalf("listed %d operations, want %d", n, want)
			}
		}
		b.Run("100000-by-1000", func(b *testing.B) {
			for b.Loop() {
				listAll(b, db.OperationFilter{Limit: models.MaxOperationsPage}, lrps*perLRP)
			}
		})
		b.Run("one-lrp-by-100", func(b *testing.B) {
			for b.Loop() {
				listAll(b, db.OperationFilter{ProcessGuid: "lrp-042", Limit: 100}, perLRP)
			}
		})
	})
}

// benchEnv is one dialect's freshly migrated database.
type benchEnv struct {
	dialect string
	conn    *sql.DB
	store   *sqldb.SQLDB
}

// forEachBenchDialect runs body once per dialect on a fresh migrated
// database, skipping a dialect whose DSN is not set.
func forEachBenchDialect(b *testing.B, body func(b *testing.B, env benchEnv)) {
	available, err := testdb.Dialects()
	if err != nil {
		b.Fatal(err)
	}
	for _, dialect := range []string{sqldb.SQLite, sqldb.Postgres, sqldb.MySQL} {
		b.Run(dialect, func(b *testing.B) {
			if !slices.Contains(available, dialect) {
				b.Skipf("%s: DSN not set", dialect)
			}
			database, err := testdb.Create(dialect)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { database.Drop() })
			conn, err := sqldb.Open(context.Background(), dialect, database.DSN)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { conn.Close() })
			if err := migrations.Up(context.Background(), conn, dialect); err != nil {
				b.Fatal(err)
			}
			body(b, benchEnv{dialect: dialect, conn: conn, store: newStore(conn, dialect)})
		})
	}
}

func percentile(values []time.Duration, p float64) time.Duration {
	if len(values) == 0 {
		return 0
	}
	slices.Sort(values)
	return values[int(float64(len(values)-1)*p)]
}

// BenchmarkListDesiredLRPs lists 2,000 desired LRPs with their
// definitions, each shaped as bbs-load peer's (peerShapedLRP), as a whole
// list of desired LRPs reads them: the read, unpacking and decoding each
// definition. Its "answer" runs read and encode each LRP as a protobuf
// list answer does (measured, then marshalled), with the definitions
// decoded or kept encoded (KeepEncoded).
func BenchmarkListDesiredLRPs(b *testing.B) {
	const lrps = 2000
	forEachBenchDialect(b, func(b *testing.B, env benchEnv) {
		ctx := context.Background()
		for i := range lrps {
			lrp := peerShapedLRP(fmt.Sprintf("lrp-%04d", i))
			if _, err := env.store.DesireLRP(ctx, lrp); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprint(lrps), func(b *testing.B) {
			for b.Loop() {
				got, err := env.store.DesiredLRPs(ctx, db.DesiredLRPFilter{})
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != lrps {
					b.Fatalf("listed %d LRPs, want %d", len(got), lrps)
				}
			}
		})
		for _, encoded := range []bool{false, true} {
			name := "answer, definitions decoded"
			if encoded {
				name = "answer, definitions kept encoded"
			}
			b.Run(fmt.Sprintf("%d %s", lrps, name), func(b *testing.B) {
				var answer []byte
				for b.Loop() {
					answer = answer[:0]
					listed := 0
					err := env.store.EachDesiredLRP(ctx, db.DesiredLRPFilter{KeepEncoded: encoded}, func(lrp *models.DesiredLRP) error {
						listed++
						_ = proto.Size(lrp)
						var err error
						answer, err = proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(answer, lrp)
						return err
					})
					if err != nil {
						b.Fatal(err)
					}
					if listed != lrps {
						b.Fatalf("listed %d LRPs, want %d", listed, lrps)
					}
				}
			})
		}
	})
}
