package sqldb_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// A RETIRING instance's rep drains it once told to stop: it makes it
// unroutable (a start with presence RETIRING), stops it and removes its
// row (presence RETIRING).
var _ = forEachDialect("the lifecycle of a RETIRING instance", func(b *board) {
	var sink *recordingSink
	rep := models.Caller{InstanceGuid: "ig-0", CellID: "cell-1"}
	ordinaryKey := models.ActualLRPKey{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY}
	retiringKey := models.ActualLRPKey{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_RETIRING}
	netInfo := &models.NetInfo{Address: "10.0.0.1", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61000}}}

	row := func(key models.ActualLRPKey) *models.ActualLRP {
		GinkgoHelper()
		for _, lrp := range b.instances("web") {
			if lrp.Presence == key.Presence && lrp.Index == key.Index {
				return lrp
			}
		}
		return nil
	}

	BeforeEach(func() {
		sink = recordEvents(b)
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
		Expect(err).NotTo(HaveOccurred())
		b.exec("UPDATE actual_lrps SET cell_id = 'cell-1'")
		_, err = b.store.ClaimActualLRP(b.ctx, ordinaryKey, rep)
		Expect(err).NotTo(HaveOccurred())
		running, err := b.store.StartActualLRP(b.ctx, ordinaryKey, rep, netInfo, true)
		Expect(err).NotTo(HaveOccurred())
		// Convergence replaces it, stopping it at once, and creates its
		// successor.
		result, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{
			Retire: []convergence.Retirement{{Row: versionOf(running), Stop: true}},
			Create: []convergence.NewActualLRP{{ProcessGuid: "web", Index: 0, Domain: "apps", DefinitionID: "v1"}},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Applied).To(Equal(2))
		b.clock.Advance(1000)
		sink.take()
	})

	It("lists the row as told to stop", func() {
		retiring := row(retiringKey)
		Expect(retiring.StopRequested).To(BeTrue())
		Expect(retiring.InstanceGuid).To(Equal("ig-0"))
		Expect(retiring.Routable).To(BeTrue())
		Expect(row(ordinaryKey).StopRequested).To(BeFalse())
	})

	It("lets its rep make it unroutable, keeping it told to stop", func() {
		before := row(retiringKey)
		after, err := b.store.StartActualLRP(b.ctx, retiringKey, rep, netInfo, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(after.Routable).To(BeFalse())
		Expect(after.StopRequested).To(BeTrue())
		Expect(after.State).To(Equal(models.ActualLRP_RUNNING))
		Expect(after.Since).To(Equal(before.Since))
		Expect(row(retiringKey)).To(EqualProto(after))

		events := sink.take()
		Expect(events).To(HaveLen(1))
		expectEvent(events[0], models.EventActualLRPChanged, "web", &models.ActualLRPChangedEvent{Before: before, After: after})

		again, err := b.store.StartActualLRP(b.ctx, retiringKey, rep, netInfo, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(again).To(EqualProto(after))
		Expect(sink.take()).To(BeEmpty(), "a repeat writes nothing")
	})

	It("lets its rep remove it, leaving its successor", func() {
		before := row(retiringKey)
		Expect(b.store.RemoveActualLRP(b.ctx, retiringKey, rep)).To(Succeed())
		Expect(row(retiringKey)).To(BeNil())
		Expect(row(ordinaryKey)).NotTo(BeNil())
		events := sink.take()
		Expect(events).To(HaveLen(1))
		expectEvent(events[0], models.EventActualLRPRemoved, "web", &models.ActualLRPRemovedEvent{ActualLrp: before})
	})

	It("refuses another instance, and the ORDINARY key for it", func() {
		other := models.Caller{InstanceGuid: "ig-9", CellID: "cell-1"}
		_, err := b.store.StartActualLRP(b.ctx, retiringKey, other, netInfo, false)
		Expect(err).To(HaveErrorType(models.Error_InvalidStateTransition))
		Expect(b.store.RemoveActualLRP(b.ctx, retiringKey, other)).To(HaveErrorType(models.Error_InvalidStateTransition))
		// The ORDINARY row is its successor's now, not placed anywhere.
		_, err = b.store.StartActualLRP(b.ctx, ordinaryKey, rep, netInfo, false)
		Expect(err).To(HaveErrorType(models.Error_InvalidStateTransition))
		Expect(row(retiringKey).Routable).To(BeTrue())
		Expect(sink.take()).To(BeEmpty())
	})

	It("keeps stop_requested through a crash report", func() {
		crashed, err := b.store.CrashActualLRP(b.ctx, retiringKey, rep, "killed")
		Expect(err).NotTo(HaveOccurred())
		Expect(crashed.State).To(Equal(models.ActualLRP_CRASHED))
		Expect(crashed.StopRequested).To(BeTrue())
		Expect(row(retiringKey)).To(EqualProto(crashed))
	})
})
