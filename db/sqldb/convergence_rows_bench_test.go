package sqldb_test

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkConvergenceRows reads the rows of a few LRPs that changed, as
// the lease owner's targeted passes do after each write they hear of
// (runner.Mirror), from 2,000 LRPs of 2 instances. On SQLite the guids go
// in one JSON argument (sqliteDriver.inStrings), so that a read of many
// is not compiled every time: 64 LRPs 599–652 µs against 778–843 µs with
// an IN list of a placeholder per guid (9fab830 and the tree before,
// alternated, 2026-11-30); 1 and 8 LRPs, whose IN lists were short
// enough to be kept prepared, within each other's spread.
func BenchmarkConvergenceRows(b *testing.B) {
	forEachBenchDialect(b, func(b *testing.B, env benchEnv) {
		const lrps = 2000
		guids := make([]string, lrps)
		for i := range guids {
			guids[i] = fmt.Sprintf("rows-%04d", i)
			if _, err := env.store.DesireLRP(context.Background(), newLRP(guids[i], "bench", 2)); err != nil {
				b.Fatal(err)
			}
		}
		for _, n := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("%d-lrps", n), func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					from := (i * n) % (lrps - n)
					snap, err := env.store.ConvergenceRows(context.Background(), guids[from:from+n])
					if err != nil {
						b.Fatal(err)
					}
					if len(snap.Desired) != n {
						b.Fatalf("read %d LRPs of %d", len(snap.Desired), n)
					}
				}
			})
		}
	})
}
