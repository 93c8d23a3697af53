package sqldb_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

// BenchmarkRotateKeys measures a RotateKeys pass that re-encrypts every
// row: 10,000 run_infos rows with a definition of about 1 KB and 10,000
// operations rows, first plain, then alternately under k1 and k2. It
// reports rows re-encrypted per second.
//
// Run with: go test ./db/sqldb -run '^$' -bench RotateKeys -benchtime 3x
func BenchmarkRotateKeys(b *testing.B) {
	const rows = 10_000
	forEachBenchDialect(b, func(b *testing.B, env benchEnv) {
		seedRotation(b, env, rows)
		pass := 0 // across sub-benchmarks: each pass rotates to the other key
		for _, batch := range []int{sqldb.DefaultRotateBatchSize, 1000} {
			b.Run(fmt.Sprintf("batch-%d", batch), func(b *testing.B) {
				var total int64
				var elapsed time.Duration
				for b.Loop() {
					active, other := "k1", "k2"
					if pass%2 == 1 {
						active, other = other, active
					}
					pass++
					keys, err := sqldb.ParseEncryptionKeys(map[string]string{active: encKeyMaterial(active), other: encKeyMaterial(other)}, active)
					if err != nil {
						b.Fatal(err)
					}
					store := newStore(env.conn, env.dialect, sqldb.WithEncryption(keys))
					started := time.Now()
					progress, err := store.RotateKeys(context.Background(), sqldb.RotateOptions{BatchSize: batch})
					if err != nil {
						b.Fatal(err)
					}
					elapsed += time.Since(started)
					if got := progress.Total().Reencrypted; got != 2*rows {
						b.Fatalf("re-encrypted %d rows, want %d", got, 2*rows)
					}
					total += progress.Total().Reencrypted
				}
				b.ReportMetric(float64(total)/elapsed.Seconds(), "rows/s")
			})
		}
	})
}

// seedRotation stores n plain definitions of about 1 KB and n operations,
// in multi-row inserts.
func seedRotation(b *testing.B, env benchEnv, n int) {
	def := newDefinition("v1", "/bin/app")
	for i := range 12 {
		def.Action.Env = append(def.Action.Env, &models.EnvironmentVariable{
			Name: fmt.Sprintf("SETTING_%02d", i), Value: strings.Repeat("x", 60)})
	}
	blob, err := proto.MarshalOptions{Deterministic: true}.Marshal(def)
	if err != nil {
		b.Fatal(err)
	}
	params, err := anypb.New(&models.UpdateDesiredLRPRequest{ProcessGuid: "lrp", Update: &models.DesiredLRPUpdate{UpdateIdentifier: "v1"}})
	if err != nil {
		b.Fatal(err)
	}
	paramBlob, err := proto.Marshal(params)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("definition blob %d bytes, parameters blob %d bytes", len(blob), len(paramBlob))

	insert := func(table string, columns []string, rows int, row func(i int) []any) {
		const batch = 200
		for start := 0; start < rows; start += batch {
			end := min(rows, start+batch)
			placeholders := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ") + ")"
			values := make([]string, 0, end-start)
			var args []any
			for i := start; i < end; i++ {
				values = append(values, placeholders)
				args = append(args, row(i)...)
			}
			query := "INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") VALUES " + strings.Join(values, ", ")
			if _, err := env.conn.Exec(dialect.Rebind(dialect.Name(env.dialect), query), args...); err != nil {
				b.Fatal(err)
			}
		}
	}
	insert("run_infos", []string{"process_guid", "definition_id", "content_hash", "memory_mb", "disk_mb", "definition", "created_at"}, n,
		func(i int) []any {
			return []any{fmt.Sprintf("lrp-%06d", i), "v1", "hash", 256, 1024, blob, int64(i)}
		})
	insert("operations", []string{"id", "process_guid", "sequence", "kind", "status", "reason", "parameters", "definition_id",
		"requested_by", "created_at", "history", "ended", "modification_index"}, n,
		func(i int) []any {
			return []any{fmt.Sprintf("%024x", i), fmt.Sprintf("lrp-%06d", i), 1, "UPDATE", "FINISHED", "", paramBlob, "v1",
				"", int64(i), []byte{}, true, 1}
		})
}
