package sqldb_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("CellDB", func(b *board) {
	const ttl = 30 * time.Second
	var sink *recordingSink

	newCell := func(id, zone string) *models.Cell {
		return &models.Cell{
			CellId: id, RepUrl: "http://10.0.0.5:1800", Zone: zone,
			Capacity:      &models.CellCapacity{MemoryMb: 4096, DiskMb: 16384, Instances: 50},
			PlacementTags: []string{"ssd"},
			Isolation:     models.CellIsolationFull,
		}
	}
	// stored is cell as Cells lists it, without free capacity.
	stored := func(cell *models.Cell, expiresAt time.Time) *models.Cell {
		s := proto.Clone(cell).(*models.Cell)
		s.ExpiresAt = expiresAt.UnixNano()
		s.Present = expiresAt.After(b.clock.Now())
		return s
	}
	cells := func() []*models.Cell {
		GinkgoHelper()
		list, err := b.store.Cells(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		return list
	}
	withoutFree := func(cell *models.Cell) *models.Cell {
		c := proto.Clone(cell).(*models.Cell)
		c.Free = nil
		return c
	}

	BeforeEach(func() {
		sink = recordEvents(b)
	})

	Describe("RegisterCell", func() {
		It("stores a new cell, present for the TTL, and announces it", func() {
			cell := newCell("cell-1", "z1")
			Expect(b.store.RegisterCell(b.ctx, cell, ttl)).To(Succeed())

			want := stored(cell, b.clock.Now().Add(ttl))
			list := cells()
			Expect(list).To(HaveLen(1))
			Expect(withoutFree(list[0])).To(EqualProto(want))
			Expect(list[0].Present).To(BeTrue())

			events := sink.take()
			Expect(events).To(HaveLen(1))
			expectEvent(events[0], "cell_changed", "cell-1", &models.CellChangedEvent{After: want})
		})

		It("registers many new cells at once without a deadlock, each announced once", func() {
			// One attempt each: a deadlock between two registrations would
			// reach the caller. (Locking a cell's row before inserting it
			// took a gap lock on MySQL, and two registrations of new cells
			// in one gap deadlocked on each other's.) Without the
			// commit-fault seam, whose injected conflicts one attempt
			// would not survive either.
			store := sqldb.New(b.conn, b.dialect, sqldb.WithMaxAttempts(1), sqldb.WithClock(b.clock.Now), sqldb.WithEvents(sink))
			const n = 24
			errs := make(chan error, n)
			for i := range n {
				go func() {
					defer GinkgoRecover()
					errs <- store.RegisterCell(b.ctx, newCell(fmt.Sprintf("cell-%02d", i), "z1"), ttl)
				}()
			}
			for range n {
				Expect(<-errs).To(Succeed())
			}
			Expect(cells()).To(HaveLen(n))
			announced := map[string]int{}
			for _, e := range sink.take() {
				announced[e.Key]++
			}
			Expect(announced).To(HaveLen(n))
			for id, times := range announced {
				Expect(times).To(Equal(1), id)
			}
		})

		It("renews a present, unchanged cell quietly", func() {
			cell := newCell("cell-1", "z1")
			Expect(b.store.RegisterCell(b.ctx, cell, ttl)).To(Succeed())
			sink.take()

			b.clock.Advance(10 * time.Second)
			Expect(b.store.RegisterCell(b.ctx, cell, ttl)).To(Succeed())
			Expect(withoutFree(cells()[0])).To(EqualProto(stored(cell, b.clock.Now().Add(ttl))))
			Expect(b.store.RegisterCell(b.ctx, cell, ttl)).To(Succeed(), "even within the same instant")
			Expect(sink.take()).To(BeEmpty())
		})

		It("announces a change of any registered field, with the cell before and after", func() {
			cell := newCell("cell-1", "z1")
			Expect(b.store.RegisterCell(b.ctx, cell, ttl)).To(Succeed())
			before := stored(cell, b.clock.Now().Add(ttl))
			sink.take()

			changes := []func(c *models.Cell){
				func(c *models.Cell) { c.RepUrl = "http://10.0.0.6:1800" },
				func(c *models.Cell) { c.Zone = "z2" },
				func(c *models.Cell) { c.Capacity.MemoryMb = 8192 },
				func(c *models.Cell) { c.Capacity.DiskMb = 1 },
				func(c *models.Cell) { c.Capacity.Instances = 1 },
				func(c *models.Cell) { c.PlacementTags = []string{"ssd", "gpu"} },
				func(c *models.Cell) { c.Isolation = models.CellIsolationNone },
			}
			for _, change := range changes {
				b.clock.Advance(time.Second)
				change(cell)
				Expect(b.store.RegisterCell(b.ctx, cell, ttl)).To(Succeed())
				after := stored(cell, b.clock.Now().Add(ttl))
				events := sink.take()
				Expect(events).To(HaveLen(1))
				expectEvent(events[0], "cell_changed", "cell-1", &models.CellChangedEvent{Before: before, After: after})
				Expect(withoutFree(cells()[0])).To(EqualProto(after))
				before = after
			}
		})

		It("lets presence expire, and announces the cell when it comes back", func() {
			cell := newCell("cell-1", "z1")
			Expect(b.store.RegisterCell(b.ctx, cell, ttl)).To(Succeed())
			expiresAt := b.clock.Now().Add(ttl)
			sink.take()

			b.clock.Advance(ttl - time.Nanosecond)
			Expect(cells()[0].Present).To(BeTrue())
			b.clock.Advance(time.Nanosecond)
			Expect(cells()[0].Present).To(BeFalse(), "presence ends at expires_at")
			Expect(cells()[0].ExpiresAt).To(Equal(expiresAt.UnixNano()))

			b.clock.Advance(time.Minute)
			Expect(b.store.RegisterCell(b.ctx, cell, ttl)).To(Succeed())
			events := sink.take()
			Expect(events).To(HaveLen(1))
			expectEvent(events[0], "cell_changed", "cell-1", &models.CellChangedEvent{
				Before: stored(cell, expiresAt), After: stored(cell, b.clock.Now().Add(ttl)),
			})
			Expect(cells()[0].Present).To(BeTrue())
		})

		It("refuses a cell without an id, or a TTL that is not positive, storing nothing", func() {
			Expect(b.store.RegisterCell(b.ctx, nil, ttl)).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(b.store.RegisterCell(b.ctx, newCell("", "z1"), ttl)).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(b.store.RegisterCell(b.ctx, newCell("cell-1", "z1"), 0)).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(cells()).To(BeEmpty())
			Expect(sink.take()).To(BeEmpty())
		})
	})

	Describe("QuarantineCell and ClearCellQuarantine", func() {
		It("quarantines with who and why, survives heartbeats, clears keeping who and when, and announces each change", func() {
			cell := newCell("cell-1", "z1")
			Expect(b.store.RegisterCell(b.ctx, cell, ttl)).To(Succeed())
			sink.take()

			changed, err := b.store.QuarantineCell(b.ctx, "cell-1", "disk errors", "operator (cert CN=alice)", -1)
			Expect(err).NotTo(HaveOccurred())
			Expect(changed).To(BeTrue())
			quarantined := cells()[0]
			Expect(quarantined.GetQuarantinedAt()).To(Equal(b.clock.Now().UnixNano()))
			Expect(quarantined.GetQuarantinedBy()).To(Equal("operator (cert CN=alice)"))
			Expect(quarantined.GetQuarantineReason()).To(Equal("disk errors"))
			events := sink.take()
			Expect(events).To(HaveLen(1))
			Expect(events[0].Type).To(Equal("cell_changed"))

			By("quarantining again, or as the board after a clear it did not see: nothing changes")
			changed, err = b.store.QuarantineCell(b.ctx, "cell-1", "another reason", "board", -1)
			Expect(err).NotTo(HaveOccurred())
			Expect(changed).To(BeFalse())
			Expect(cells()[0].GetQuarantineReason()).To(Equal("disk errors"))

			By("a heartbeat keeps the quarantine")
			_, err = b.store.HeartbeatCell(b.ctx, cell, ttl, true)
			Expect(err).NotTo(HaveOccurred())
			Expect(cells()[0].GetQuarantinedAt()).NotTo(BeZero())
			sink.take()

			b.clock.Advance(time.Minute)
			Expect(b.store.ClearCellQuarantine(b.ctx, "cell-1", "operator (cert CN=bob)")).To(Succeed())
			cleared := cells()[0]
			Expect(cleared.GetQuarantinedAt()).To(BeZero())
			Expect(cleared.GetQuarantinedBy()).To(BeEmpty())
			Expect(cleared.GetQuarantineReason()).To(BeEmpty())
			Expect(cleared.GetQuarantineClearedAt()).To(Equal(b.clock.Now().UnixNano()))
			Expect(cleared.GetQuarantineClearedBy()).To(Equal("operator (cert CN=bob)"))
			Expect(sink.take()).To(HaveLen(1))
			Expect(b.store.ClearCellQuarantine(b.ctx, "cell-1", "operator (cert CN=bob)")).To(Succeed(), "clearing again")
			Expect(sink.take()).To(BeEmpty())

			By("the board's own quarantine only while the clear it counted from is still the last")
			changed, err = b.store.QuarantineCell(b.ctx, "cell-1", "crash spike", "board", 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(changed).To(BeFalse(), "planned before the clear")
			changed, err = b.store.QuarantineCell(b.ctx, "cell-1", "crash spike", "board", cleared.GetQuarantineClearedAt())
			Expect(err).NotTo(HaveOccurred())
			Expect(changed).To(BeTrue())

			snapshot, err := b.store.ConvergenceSnapshot(b.ctx, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(snapshot.Cells).To(HaveLen(1))
			Expect(snapshot.Cells[0].Quarantined).To(BeTrue())
			Expect(snapshot.Cells[0].QuarantineClearedAt).To(Equal(cleared.GetQuarantineClearedAt()))
		})

		It("refuses an unknown cell", func() {
			_, err := b.store.QuarantineCell(b.ctx, "cell-9", "why", "me", -1)
			Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
			Expect(b.store.ClearCellQuarantine(b.ctx, "cell-9", "me")).To(HaveErrorType(models.Error_ResourceNotFound))
		})
	})

	Describe("Cells", func() {
		It("lists every cell by id, present or not", func() {
			// Registered 20 s apart: cell-c's 30 s are over when cell-b comes.
			for i, id := range []string{"cell-c", "cell-a", "cell-b"} {
				if i > 0 {
					b.clock.Advance(20 * time.Second)
				}
				Expect(b.store.RegisterCell(b.ctx, newCell(id, "z1"), ttl)).To(Succeed())
			}
			list := cells()
			Expect(list).To(HaveLen(3))
			Expect([]string{list[0].CellId, list[1].CellId, list[2].CellId}).To(Equal([]string{"cell-a", "cell-b", "cell-c"}))
			Expect([]bool{list[0].Present, list[1].Present, list[2].Present}).To(Equal([]bool{true, true, false}))
		})

		It("computes free capacity from the definitions of every instance placed on each cell", func() {
			Expect(b.store.RegisterCell(b.ctx, newCell("cell-1", "z1"), ttl)).To(Succeed())
			Expect(b.store.RegisterCell(b.ctx, newCell("cell-2", "z1"), ttl)).To(Succeed())
			Expect(b.store.RegisterCell(b.ctx, newCell("cell-idle", "z1"), ttl)).To(Succeed())

			// web/0 and web/1 run v1 (256 MB, 1024 MB disk); after the update
			// web/2 and web/3 are v2 (512 MB, 2048 MB disk).
			_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 2))
			Expect(err).NotTo(HaveOccurred())
			v2 := newDefinition("", "/bin/web-2")
			v2.MemoryMb, v2.DiskMb = 512, 2048
			_, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
				Definition: v2, UpdateIdentifier: "v2", Instances: int32p(5),
			})
			Expect(err).NotTo(HaveOccurred())
			b.setState("web", 0, models.ActualLRP_RUNNING, "cell-1")
			b.setState("web", 1, models.ActualLRP_CLAIMED, "cell-1")
			b.setState("web", 2, models.ActualLRP_RUNNING, "cell-1")
			b.exec(`UPDATE actual_lrps SET cell_id = 'cell-1' WHERE process_guid = 'web' AND instance_index = 3`)
			b.setState("web", 4, models.ActualLRP_RUNNING, "cell-2")
			b.putActual(&models.ActualLRP{
				ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_SUSPECT, Domain: "apps", InstanceGuid: "ig-old",
				CellId: "cell-2", DefinitionId: "v1", State: models.ActualLRP_RUNNING, ModificationTag: &models.ModificationTag{Epoch: "e"},
			})

			list := cells()
			Expect(list).To(HaveLen(3))
			Expect(list[0].Free).To(EqualProto(&models.CellCapacity{
				MemoryMb: 4096 - 2*256 - 2*512, DiskMb: 16384 - 2*1024 - 2*2048, Instances: 50 - 4,
			}))
			Expect(list[1].Free).To(EqualProto(&models.CellCapacity{
				MemoryMb: 4096 - 512 - 256, DiskMb: 16384 - 2048 - 1024, Instances: 50 - 2,
			}), "the SUSPECT row counts too")
			Expect(list[2].CellId).To(Equal("cell-idle"))
			Expect(list[2].Free).To(EqualProto(list[2].Capacity))
		})

		It("frees a crashed instance's share of its cell", func() {
			Expect(b.store.RegisterCell(b.ctx, newCell("cell-1", "z1"), ttl)).To(Succeed())
			_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
			Expect(err).NotTo(HaveOccurred())
			b.exec(`UPDATE actual_lrps SET cell_id = 'cell-1' WHERE process_guid = 'web'`)
			k := models.ActualLRPKey{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY}
			rep := models.Caller{InstanceGuid: "ig", CellID: "cell-1"}
			_, err = b.store.ClaimActualLRP(b.ctx, k, rep)
			Expect(err).NotTo(HaveOccurred())
			Expect(cells()[0].Free.Instances).To(BeEquivalentTo(49))
			_, err = b.store.CrashActualLRP(b.ctx, k, rep, "boom")
			Expect(err).NotTo(HaveOccurred())
			Expect(cells()[0].Free).To(EqualProto(cells()[0].Capacity))
		})
	})
})
