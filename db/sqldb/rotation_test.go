package sqldb_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("RotateKeys under load", func(b *board) {
	It("re-encrypts while LRPs are desired and updated, and repeated passes leave nothing under the old key", func() {
		// Boards mid-rollout of the new active key: every board knows k1
		// and k2 (step 1 of a rotation), some still seal under k1, others
		// already under k2 (step 2); the rotation runs with k2 active.
		oldBoard := b.storeWith(encKeyring("k1", "k2"))
		newBoard := b.storeWith(encKeyring("k2", "k1"))
		rotator := b.storeWith(encKeyring("k2", "k1"))

		var mu sync.Mutex
		written := map[string]*models.LRPDefinition{} // "guid/id" → as sent
		record := func(guid, id string, def *models.LRPDefinition) {
			mu.Lock()
			defer mu.Unlock()
			written[guid+"/"+id] = def
		}
		for i := range 30 {
			guid := fmt.Sprintf("seed-%02d", i)
			lrp := secretLRP(guid, fmt.Sprintf("%s-%s", encSecret, guid))
			_, err := oldBoard.DesireLRP(b.ctx, lrp)
			Expect(err).NotTo(HaveOccurred())
			record(guid, "v1", lrp.Definition)
		}

		// Each writer desires LRPs of its own and updates them with new
		// definitions, at least perWriter times and on until the
		// rotation's first pass is done (at most 10 times as many): on a
		// loaded machine SQLite's busy handler may hold the rotator back
		// until fixed-length writers have finished.
		const writers, perWriter = 4, 50
		var writes atomic.Int64
		var rotated, writersDone atomic.Bool
		var wg sync.WaitGroup
		for w := range writers {
			store := oldBoard
			if w%2 == 1 {
				store = newBoard
			}
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				var mine []string
				for i := 0; i < perWriter || (!rotated.Load() && i < 10*perWriter); i++ {
					if i%3 == 0 {
						guid := fmt.Sprintf("w%d-%03d", w, i)
						lrp := secretLRP(guid, fmt.Sprintf("%s-%s", encSecret, guid))
						_, err := store.DesireLRP(b.ctx, lrp)
						Expect(err).NotTo(HaveOccurred())
						record(guid, "v1", lrp.Definition)
						mine = append(mine, guid)
					} else {
						guid := mine[i%len(mine)]
						id := fmt.Sprintf("u%03d", i)
						def := secretDefinition("", fmt.Sprintf("%s-%s-%s", encSecret, guid, id))
						_, err := store.UpdateDesiredLRP(b.ctx, guid, &models.DesiredLRPUpdate{Definition: def, UpdateIdentifier: id})
						Expect(err).NotTo(HaveOccurred())
						record(guid, id, def)
					}
					writes.Add(1)
					// Traffic, not a flood: SQLite's busy handler, which a
					// writer of another connection pool (bbs-migrate) waits
					// in, is no match for writers that never pause.
					time.Sleep(2 * time.Millisecond)
				}
			}()
		}

		go func() {
			wg.Wait()
			writersDone.Store(true)
		}()

		Eventually(writes.Load, 10*time.Second).Should(BeNumerically(">=", 20))
		var batches, batchesDuringWrites atomic.Int64
		first, err := rotator.RotateKeys(b.ctx, sqldb.RotateOptions{BatchSize: 5, Progress: func(sqldb.RotateProgress) {
			batches.Add(1)
			if !writersDone.Load() {
				batchesDuringWrites.Add(1)
			}
		}})
		rotated.Store(true)
		Expect(err).NotTo(HaveOccurred())
		wg.Wait()
		GinkgoWriter.Printf("first pass: %+v in %d batches, %d of them while LRPs were written\n", first, batches.Load(), batchesDuringWrites.Load())
		Expect(batchesDuringWrites.Load()).To(BeNumerically(">=", 3), "the rotation ran under load")
		Expect(first.RunInfos.Reencrypted).To(BeNumerically(">=", 30))

		// Repeat until a pass finds nothing to do.
		passes := 1
		for {
			pass, err := rotator.RotateKeys(b.ctx, sqldb.RotateOptions{BatchSize: 5})
			Expect(err).NotTo(HaveOccurred())
			passes++
			GinkgoWriter.Printf("pass %d: %+v\n", passes, pass)
			if pass.Total().Reencrypted == 0 && pass.Total().Skipped == 0 {
				break
			}
			Expect(passes).To(BeNumerically("<", 5), "rotation does not converge")
		}

		mu.Lock()
		defer mu.Unlock()
		Expect(b.labelsIn("run_infos")).To(Equal(map[string]int{"k2": len(written)}))
		for label := range b.labelsIn("operations") {
			Expect(label).To(Equal("k2"))
		}
		k2 := b.storeWith(encKeyring("k2"))
		for key, def := range written {
			guid, id, _ := strings.Cut(key, "/")
			got, err := k2.Definition(b.ctx, guid, id)
			Expect(err).NotTo(HaveOccurred(), key)
			Expect(sameContent(got, def)).To(BeTrue(), key)
		}
		lrps, err := k2.DesiredLRPs(b.ctx, db.DesiredLRPFilter{})
		Expect(err).NotTo(HaveOccurred())
		Expect(len(lrps)).To(BeNumerically(">=", 30))
		ops, _, err := k2.Operations(b.ctx, db.OperationFilter{Limit: 1000})
		Expect(err).NotTo(HaveOccurred())
		Expect(len(ops)).To(BeNumerically(">=", len(written)))
	})
})
