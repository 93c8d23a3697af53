package sqldb_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// A pass for some LRPs places their instances knowing what every other
// LRP uses on every cell: the snapshot's UnreadUse.
var _ = forEachDialect("convergence capacity", func(b *board) {
	var seed seeder

	BeforeEach(func() {
		seed = seeder{conn: b.conn, dialect: b.dialect}
		at := func(d time.Duration) int64 { return b.clock.Now().Add(d).UnixNano() }
		Expect(seed.domain(b.ctx, "apps", 0)).To(Succeed())
		Expect(seed.cells(b.ctx, []seedCell{
			{cellID: "cell-a", zone: "z1", memoryMB: 1024, diskMB: 1024, maxInstance: 2, expiresAt: at(time.Minute)},
			{cellID: "cell-b", zone: "z2", memoryMB: 1024, diskMB: 1024, maxInstance: 2, expiresAt: at(time.Minute)},
		})).To(Succeed())
		// LRP a fills cell-a's two slots: one instance on its active
		// definition and a RETIRING one on its older, bigger definition.
		Expect(seed.desired(b.ctx, []seedLRP{
			{guid: "a", domain: "apps", instances: 1, definitionID: "a2", memoryMB: 256, diskMB: 128},
		})).To(Succeed())
		Expect(seed.definition(b.ctx, "a", "a1", 512, 256)).To(Succeed())
		Expect(seed.actual(b.ctx, 3, func(i int) seedActual {
			return []seedActual{
				{guid: "a", index: 0, state: "RUNNING", domain: "apps", instanceGuid: "a-0", cellID: "cell-a", definitionID: "a2", routable: true, since: at(-time.Minute)},
				{guid: "a", index: 0, presence: "RETIRING", state: "RUNNING", domain: "apps", instanceGuid: "a-0-old", cellID: "cell-a", definitionID: "a1", routable: true, since: at(-time.Minute)},
				{guid: "a", index: 1, state: "RUNNING", domain: "apps", instanceGuid: "a-1", cellID: "cell-b", definitionID: "a2", routable: true, since: at(-time.Minute)},
			}[i]
		})).To(Succeed())
	})

	targeted := func(guids ...string) *convergence.Snapshot {
		snap, err := b.store.ConvergenceSnapshot(b.ctx, guids)
		Expect(err).NotTo(HaveOccurred())
		return snap
	}

	It("carries what the LRPs it did not read use on each cell", func() {
		Expect(seed.desired(b.ctx, []seedLRP{{guid: "b", domain: "apps", instances: 1, definitionID: "b1", memoryMB: 64, diskMB: 64}})).To(Succeed())
		snap := targeted("b")
		Expect(snap.Partial).To(BeTrue())
		Expect(snap.Cells).To(HaveLen(2))
		Expect(snap.Cells[0].CellID).To(Equal("cell-a"))
		Expect(snap.Cells[0].UnreadUse).To(Equal(convergence.Resources{MemoryMB: 768, DiskMB: 384, Instances: 2}))
		Expect(snap.Cells[1].UnreadUse).To(Equal(convergence.Resources{MemoryMB: 256, DiskMB: 128, Instances: 1}))

		full := targeted()
		Expect(full.Partial).To(BeFalse())
		for _, c := range full.Cells {
			Expect(c.UnreadUse).To(BeZero(), "a full snapshot holds every row")
		}

		// A snapshot of a itself holds a's rows: nothing is left unread.
		own := targeted("a")
		for _, c := range own.Cells {
			Expect(c.UnreadUse).To(BeZero())
		}
	})

	It("does not give another LRP a slot that a full pass would refuse", func() {
		// b wants 2 instances; cell-a has no slot left and cell-b one.
		Expect(seed.desired(b.ctx, []seedLRP{{guid: "b", domain: "apps", instances: 2, definitionID: "b1", memoryMB: 64, diskMB: 64}})).To(Succeed())
		plan := convergence.Compute(targeted("b"), b.clock.Now(), convergence.DefaultConfig())
		Expect(plan.Writes.Create).To(HaveLen(2))
		placed := map[string]int{}
		for _, c := range plan.Writes.Create {
			placed[c.CellID]++
		}
		Expect(placed).To(Equal(map[string]int{"cell-b": 1, "": 1}))
		for _, c := range plan.Writes.Create {
			if c.CellID == "" {
				Expect(c.PlacementError).To(ContainSubstring("instance slot"))
			}
		}

		_, err := b.store.ApplyConvergence(b.ctx, &plan.Writes)
		Expect(err).NotTo(HaveOccurred())
		full := convergence.Compute(targeted(), b.clock.Now(), convergence.DefaultConfig())
		Expect(full.Writes.Place).To(BeEmpty(), "a full pass agrees: no room anywhere")
	})

	It("refuses the placements of a plan whose snapshot another pass's placements made stale", func() {
		// b and c each want cell-b's last slot, planned from snapshots
		// read before either applied.
		Expect(seed.desired(b.ctx, []seedLRP{
			{guid: "b", domain: "apps", instances: 1, definitionID: "b1", memoryMB: 64, diskMB: 64},
			{guid: "c", domain: "apps", instances: 1, definitionID: "c1", memoryMB: 64, diskMB: 64},
		})).To(Succeed())
		planB := convergence.Compute(targeted("b"), b.clock.Now(), convergence.DefaultConfig())
		planC := convergence.Compute(targeted("c"), b.clock.Now(), convergence.DefaultConfig())
		Expect(planB.Writes.Create[0].CellID).To(Equal("cell-b"))
		Expect(planC.Writes.Create[0].CellID).To(Equal("cell-b"))

		_, err := b.store.ApplyConvergence(b.ctx, &planB.Writes)
		Expect(err).NotTo(HaveOccurred())
		_, err = b.store.ApplyConvergence(b.ctx, &planC.Writes)
		Expect(err).NotTo(HaveOccurred())

		cells, err := b.store.Cells(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		for _, c := range cells {
			Expect(c.Free.Instances).To(BeNumerically(">=", 0), "%s is over capacity", c.CellId)
		}
		lrps, err := b.store.ActualLRPs(b.ctx, db.ActualLRPFilter{ProcessGuid: "c"})
		Expect(err).NotTo(HaveOccurred())
		Expect(lrps).To(HaveLen(1), "c's instance is created all the same")
		Expect(lrps[0].CellId).To(BeEmpty(), "but not placed: the next pass does that")

		next := convergence.Compute(targeted("c"), b.clock.Now(), convergence.DefaultConfig())
		Expect(next.Writes.Place).To(BeEmpty())
		Expect(next.Writes.PlacementFailed).To(HaveLen(1), "with a fresh view: no slot is left")
	})

	It("never fills a cell beyond capacity while passes for different LRPs and the cells' rep calls run at once", func() {
		var lrps []seedLRP
		for i := range 6 {
			lrps = append(lrps, seedLRP{guid: fmt.Sprintf("lrp-%d", i), domain: "apps", instances: 2, definitionID: "v1", memoryMB: 64, diskMB: 64})
		}
		Expect(seed.desired(b.ctx, lrps)).To(Succeed())

		ctx, cancel := context.WithCancel(b.ctx)
		defer cancel()
		var background, passes sync.WaitGroup
		// The cells claim and start whatever is placed on them.
		background.Go(func() {
			defer GinkgoRecover()
			for ctx.Err() == nil {
				rows, err := b.store.ActualLRPs(ctx, db.ActualLRPFilter{})
				if ctx.Err() != nil {
					return
				}
				Expect(err).NotTo(HaveOccurred())
				for _, lrp := range rows {
					if lrp.State != models.ActualLRP_UNCLAIMED || lrp.CellId == "" {
						continue
					}
					key := models.ActualLRPKey{ProcessGuid: lrp.ProcessGuid, Index: lrp.Index, Presence: lrp.Presence}
					caller := models.Caller{InstanceGuid: fmt.Sprintf("ig-%s-%d", lrp.ProcessGuid, lrp.Index), CellID: lrp.CellId}
					// Either may lose a race with a pass; the next round
					// tries again.
					b.store.ClaimActualLRP(ctx, key, caller)
					b.store.StartActualLRP(ctx, key, caller, &models.NetInfo{Address: "10.0.0.1"}, true)
				}
			}
		})
		// Every cell is watched while the passes run.
		var over []string
		var overMu sync.Mutex
		background.Go(func() {
			defer GinkgoRecover()
			for ctx.Err() == nil {
				cells, err := b.store.Cells(ctx)
				if ctx.Err() != nil {
					return
				}
				Expect(err).NotTo(HaveOccurred())
				for _, c := range cells {
					if c.Free.Instances < 0 {
						overMu.Lock()
						over = append(over, c.CellId)
						overMu.Unlock()
					}
				}
			}
		})
		// Passes for different LRPs at once, each planned from its own
		// snapshot.
		for _, l := range lrps {
			passes.Go(func() {
				defer GinkgoRecover()
				for range 5 {
					snap, err := b.store.ConvergenceSnapshot(ctx, []string{l.guid})
					Expect(err).NotTo(HaveOccurred())
					plan := convergence.Compute(snap, b.clock.Now(), convergence.DefaultConfig())
					_, err = b.store.ApplyConvergence(ctx, &plan.Writes)
					Expect(err).NotTo(HaveOccurred())
				}
			})
		}
		passes.Wait()
		cancel()
		background.Wait()
		Expect(over).To(BeEmpty(), "cells seen over capacity")
		cells, err := b.store.Cells(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		placed := 0
		for _, c := range cells {
			Expect(c.Free.Instances).To(BeNumerically(">=", 0), "%s is over capacity", c.CellId)
			placed += int(c.Capacity.Instances - c.Free.Instances)
		}
		Expect(placed).To(Equal(4), "a's three instances and one more fill both cells")
	})

	It("refuses memory that the other LRPs use", func() {
		// cell-b has 768 MB free; b's instance needs 900.
		Expect(seed.desired(b.ctx, []seedLRP{{guid: "b", domain: "apps", instances: 1, definitionID: "b1", memoryMB: 900, diskMB: 64}})).To(Succeed())
		plan := convergence.Compute(targeted("b"), b.clock.Now(), convergence.DefaultConfig())
		Expect(plan.Writes.Create).To(HaveLen(1))
		Expect(plan.Writes.Create[0].CellID).To(BeEmpty())
		Expect(plan.Writes.Create[0].PlacementError).To(ContainSubstring("900 MB free memory"))
	})
})
