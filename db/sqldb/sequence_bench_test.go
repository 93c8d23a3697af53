package sqldb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

// BenchmarkSequenceEvents moves a batch of outbox rows into the log, as a
// board's tailer does under an update load, through the store as a board
// has it and through one without its fast paths (sqldb.WithoutFastPaths):
// each op is one SequenceEvents call moving 64 rows of 150-byte payloads
// (inserted outside the timer, in one statement), and its commit.
func BenchmarkSequenceEvents(b *testing.B) {
	forEachBenchDialect(b, func(b *testing.B, env benchEnv) {
		ctx := context.Background()
		const batch = 64
		insert := dialect.Rebind(dialect.Name(env.dialect), "INSERT INTO event_outbox (event_type, event_key, payload) VALUES "+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", batch), ", "))
		args := make([]any, 0, 3*batch)
		for range batch {
			args = append(args, models.EventDesiredLRPChanged, "lrp-001", []byte(strings.Repeat("p", 150)))
		}
		for _, path := range []struct {
			name  string
			store *sqldb.SQLDB
		}{
			{"fast", env.store},
			{"general", newStore(env.conn, env.dialect, sqldb.WithoutFastPaths())},
		} {
			b.Run(path.name+"/64-events", func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					if _, err := env.conn.ExecContext(ctx, insert, args...); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					moved, err := path.store.SequenceEvents(ctx, 1000)
					if err != nil {
						b.Fatal(err)
					}
					if moved != batch {
						b.Fatalf("moved %d events, want %d", moved, batch)
					}
				}
			})
		}
	})
}
