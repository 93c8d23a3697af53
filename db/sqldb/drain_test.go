package sqldb_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("Evacuation within the disruption budget", func(b *board) {
	var sink *recordingSink
	netInfo := &models.NetInfo{Address: "10.0.0.1", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}
	caller := func(index int32) models.Caller {
		return models.Caller{InstanceGuid: fmt.Sprintf("ig-%d", index), CellID: "cell-1"}
	}
	ordinary := func(index int32) models.ActualLRPKey {
		return models.ActualLRPKey{ProcessGuid: "web", Index: index, Presence: models.ActualLRP_ORDINARY}
	}
	drainStatus := func() *models.DrainStatus {
		GinkgoHelper()
		status, err := b.store.DrainStatus(b.ctx, "cell-1")
		Expect(err).NotTo(HaveOccurred())
		return status
	}

	// web: 3 instances, the default budget (max_unavailable 0), all
	// serving on cell-1; cell-2 takes the replacements.
	BeforeEach(func() {
		sink = recordEvents(b)
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 3))
		Expect(err).NotTo(HaveOccurred())
		for _, id := range []string{"cell-1", "cell-2"} {
			Expect(b.store.RegisterCell(b.ctx, &models.Cell{CellId: id, RepUrl: "http://" + id, Zone: "z1",
				Capacity: &models.CellCapacity{MemoryMb: 4096, DiskMb: 16384, Instances: 50}}, time.Hour)).To(Succeed())
		}
		for index := range int32(3) {
			b.exec(`UPDATE actual_lrps SET cell_id = 'cell-1' WHERE process_guid = 'web' AND instance_index = ?`, index)
			_, err := b.store.ClaimActualLRP(b.ctx, ordinary(index), caller(index))
			Expect(err).NotTo(HaveOccurred())
			_, err = b.store.StartActualLRP(b.ctx, ordinary(index), caller(index), netInfo, true)
			Expect(err).NotTo(HaveOccurred())
		}
		b.clock.Advance(time.Second)
	})

	It("hands one index over at a time, says what holds the others, and lets them go at the drain's deadline, recording it", func() {
		Expect(b.store.DrainCellBy(b.ctx, "cell-1", 10*time.Minute)).To(Succeed())
		drainedAt := b.clock.Now().UnixNano()
		status := drainStatus()
		Expect(status.Cell.Draining).To(BeTrue())
		Expect(status.Cell.DrainStartedAt).To(Equal(drainedAt))
		Expect(status.Cell.DrainDeadline).To(Equal(drainedAt + int64(10*time.Minute)))
		Expect(status.Waiting).To(BeEquivalentTo(3))
		Expect(status.Blocked).To(BeEmpty(), "nothing spent: the first hand-over may go")

		b.clock.Advance(time.Second)
		keep, err := b.store.EvacuateActualLRP(b.ctx, "web", 0, caller(0))
		Expect(err).NotTo(HaveOccurred())
		Expect(keep).To(BeTrue())
		evacuatedAt := b.clock.Now().UnixNano()

		By("the second index waits while web/0's replacement does not serve")
		sink.take()
		before := b.instances("web")
		_, err = b.store.EvacuateActualLRP(b.ctx, "web", 1, caller(1))
		Expect(err).To(HaveErrorType(models.Error_ResourceConflict))
		Expect(err.Error()).To(ContainSubstring("budget_exhausted: web's disruption budget: budget 0, spent 1: 1 leaving (evacuating or told to stop), 0 down"))
		Expect(b.instances("web")).To(HaveLen(len(before)), "nothing written")
		Expect(sink.take()).To(BeEmpty())

		status = drainStatus()
		Expect(status.Waiting).To(BeEquivalentTo(2))
		Expect(status.Evacuating).To(BeEquivalentTo(1))
		Expect(status.Blocked).To(HaveLen(1))
		Expect(status.Blocked[0].ProcessGuid).To(Equal("web"))
		Expect(status.Blocked[0].Waiting).To(BeEquivalentTo(2))
		blocked := status.Blocked[0].BlockedBy
		Expect(blocked.Reason).To(Equal(models.BlockedBudgetExhausted))
		Expect(blocked.Detail).To(Equal("web's disruption budget: budget 0, spent 1: 1 leaving (evacuating or told to stop), 0 down"))
		Expect(blocked.Since).To(Equal(evacuatedAt), "since web/0 started leaving")
		Expect(blocked.Estimate).To(Equal(drainedAt+int64(10*time.Minute)), "the deadline")

		By("at the deadline it goes all the same, and the cell records it once")
		b.clock.Advance(10 * time.Minute)
		beforeCell := drainStatus().Cell
		keep, err = b.store.EvacuateActualLRP(b.ctx, "web", 1, caller(1))
		Expect(err).NotTo(HaveOccurred())
		Expect(keep).To(BeTrue())
		after := drainStatus().Cell
		Expect(after.DrainOverdueAt).To(Equal(b.clock.Now().UnixNano()))
		var cellEvents int
		for _, e := range sink.take() {
			if e.Type == models.EventCellChanged {
				cellEvents++
				beforeCell.Free, after.Free = nil, nil
				expectEvent(e, "cell_changed", "cell-1", &models.CellChangedEvent{Before: beforeCell, After: after})
			}
		}
		Expect(cellEvents).To(Equal(1))

		b.clock.Advance(time.Second)
		_, err = b.store.EvacuateActualLRP(b.ctx, "web", 2, caller(2))
		Expect(err).NotTo(HaveOccurred())
		Expect(drainStatus().Cell.DrainOverdueAt).To(Equal(after.DrainOverdueAt), "recorded once")
	})

	It("lets the next index go once the replacement serves", func() {
		Expect(b.store.DrainCell(b.ctx, "cell-1")).To(Succeed())
		_, err := b.store.EvacuateActualLRP(b.ctx, "web", 0, caller(0))
		Expect(err).NotTo(HaveOccurred())
		b.exec(`UPDATE actual_lrps SET cell_id = 'cell-2' WHERE process_guid = 'web' AND instance_index = 0 AND presence = 'ORDINARY'`)
		replacement := models.Caller{InstanceGuid: "ig-new", CellID: "cell-2"}
		_, err = b.store.ClaimActualLRP(b.ctx, ordinary(0), replacement)
		Expect(err).NotTo(HaveOccurred())
		_, err = b.store.EvacuateActualLRP(b.ctx, "web", 1, caller(1))
		Expect(err).To(HaveErrorType(models.Error_ResourceConflict), "claimed is not serving")
		_, err = b.store.StartActualLRP(b.ctx, ordinary(0), replacement, netInfo, true)
		Expect(err).NotTo(HaveOccurred())
		_, err = b.store.EvacuateActualLRP(b.ctx, "web", 1, caller(1))
		Expect(err).NotTo(HaveOccurred())
		Expect(drainStatus().Cell.DrainOverdueAt).To(BeZero())
	})

	It("takes a disruption budget of 2 as two hand-overs at once", func() {
		_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{DisruptionBudget: &models.DisruptionBudget{MaxUnavailable: "2"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(b.store.DrainCell(b.ctx, "cell-1")).To(Succeed())
		for index := range int32(2) {
			_, err := b.store.EvacuateActualLRP(b.ctx, "web", index, caller(index))
			Expect(err).NotTo(HaveOccurred())
		}
		_, err = b.store.EvacuateActualLRP(b.ctx, "web", 2, caller(2))
		Expect(err).To(HaveErrorType(models.Error_ResourceConflict))
	})

	It("refuses a deadline out of range, and an unknown cell's status", func() {
		Expect(b.store.DrainCellBy(b.ctx, "cell-1", -time.Second)).To(HaveErrorType(models.Error_InvalidRequest))
		Expect(b.store.DrainCellBy(b.ctx, "cell-1", 8*24*time.Hour)).To(HaveErrorType(models.Error_InvalidRequest))
		_, err := b.store.DrainStatus(b.ctx, "cell-9")
		Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
	})
})
