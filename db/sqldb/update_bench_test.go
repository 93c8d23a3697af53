package sqldb_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

// BenchmarkUpdate updates 100 LRPs in turn from one goroutine, through the
// store as a board has it and through one without its fast paths
// (sqldb.WithoutFastPaths): an annotation, and instances 1→2 then 2→1
// (one op each way).
func BenchmarkUpdate(b *testing.B) {
	forEachBenchDialect(b, func(b *testing.B, env benchEnv) {
		ctx := context.Background()
		const lrps = 100
		for i := range lrps {
			if _, err := env.store.DesireLRP(ctx, newLRP(fmt.Sprintf("lrp-%03d", i), "bench", 1)); err != nil {
				b.Fatal(err)
			}
		}
		for _, path := range []struct {
			name  string
			store *sqldb.SQLDB
		}{
			{"fast", env.store},
			{"general", newStore(env.conn, env.dialect, sqldb.WithoutFastPaths())},
		} {
			b.Run(path.name+"/annotation", func(b *testing.B) {
				for i := range b.N {
					note := fmt.Sprintf("note %d", i)
					if _, err := path.store.UpdateDesiredLRP(ctx, fmt.Sprintf("lrp-%03d", i%lrps), &models.DesiredLRPUpdate{Annotation: &note}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(path.name+"/instances", func(b *testing.B) {
				for i := range b.N {
					n := int32(2 - i/lrps%2)
					if _, err := path.store.UpdateDesiredLRP(ctx, fmt.Sprintf("lrp-%03d", i%lrps), &models.DesiredLRPUpdate{Instances: &n}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}
