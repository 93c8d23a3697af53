package sqldb_test

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("BudgetGroupDB", func(b *board) {
	var sink *recordingSink

	BeforeEach(func() {
		sink = recordEvents(b)
	})

	It("sets groups stamped with the board's time, lists them by name, replaces one and logs budget_group_changed", func() {
		created := b.clock.Now().UnixNano()
		set, err := b.store.SetBudgetGroup(b.ctx, &models.BudgetGroup{Name: "checkout", MaxUnavailable: "2", CreatedAt: 99}, "alice")
		Expect(err).NotTo(HaveOccurred())
		want := &models.BudgetGroup{Name: "checkout", MaxUnavailable: "2", RequestedBy: "alice", CreatedAt: created, UpdatedAt: created}
		Expect(set).To(EqualProto(want), "the board sets the times and who asked")
		_, err = b.store.SetBudgetGroup(b.ctx, &models.BudgetGroup{Name: "Search", MaxUnavailable: "10%"}, "alice")
		Expect(err).NotTo(HaveOccurred())

		groups, err := b.store.BudgetGroups(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(groups).To(HaveLen(2))
		Expect(groups[0].Name).To(Equal("Search"), "bytes: upper case first")
		Expect(groups[1]).To(EqualProto(want))
		events := sink.take()
		Expect(eventTypes(events)).To(Equal([]string{models.EventBudgetGroupChanged, models.EventBudgetGroupChanged}))
		expectEvent(events[0], models.EventBudgetGroupChanged, "budget_group/checkout", &models.BudgetGroupChangedEvent{After: want, RequestedBy: "alice"})

		By("replacing it keeps when it was created")
		b.clock.Advance(time.Minute)
		updated := b.clock.Now().UnixNano()
		set, err = b.store.SetBudgetGroup(b.ctx, &models.BudgetGroup{Name: "checkout", MaxUnavailable: "25%"}, "bob")
		Expect(err).NotTo(HaveOccurred())
		replaced := &models.BudgetGroup{Name: "checkout", MaxUnavailable: "25%", RequestedBy: "bob", CreatedAt: created, UpdatedAt: updated}
		Expect(set).To(EqualProto(replaced))
		events = sink.take()
		Expect(events).To(HaveLen(1))
		expectEvent(events[0], models.EventBudgetGroupChanged, "budget_group/checkout", &models.BudgetGroupChangedEvent{Before: want, After: replaced, RequestedBy: "bob"})

		By("setting it to what it is changes nothing")
		b.clock.Advance(time.Minute)
		set, err = b.store.SetBudgetGroup(b.ctx, &models.BudgetGroup{Name: "checkout", MaxUnavailable: "25%"}, "carol")
		Expect(err).NotTo(HaveOccurred())
		Expect(set).To(EqualProto(replaced))
		Expect(sink.take()).To(BeEmpty())
	})

	It("keeps who asked cut to 256 bytes rather than refusing a long caller name", func() {
		long := strings.Repeat("a", 250) + " from 127.0.0.1:40000"
		set, err := b.store.SetBudgetGroup(b.ctx, &models.BudgetGroup{Name: "checkout", MaxUnavailable: "2"}, long)
		Expect(err).NotTo(HaveOccurred())
		Expect(set.GetRequestedBy()).To(Equal(long[:256]))
		groups, err := b.store.BudgetGroups(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(groups).To(HaveLen(1))
		Expect(groups[0].GetRequestedBy()).To(Equal(long[:256]))
	})

	It("removes a group and logs budget_group_changed; an unknown one is ResourceNotFound", func() {
		set, err := b.store.SetBudgetGroup(b.ctx, &models.BudgetGroup{Name: "checkout", MaxUnavailable: "2"}, "alice")
		Expect(err).NotTo(HaveOccurred())
		sink.take()
		Expect(b.store.RemoveBudgetGroup(b.ctx, "checkout", "bob")).To(Succeed())
		events := sink.take()
		Expect(events).To(HaveLen(1))
		expectEvent(events[0], models.EventBudgetGroupChanged, "budget_group/checkout", &models.BudgetGroupChangedEvent{Before: set, RequestedBy: "bob"})
		groups, err := b.store.BudgetGroups(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(groups).To(BeEmpty())
		Expect(b.store.RemoveBudgetGroup(b.ctx, "checkout", "bob")).To(HaveErrorType(models.Error_ResourceNotFound))
	})

	It("refuses a bad group naming the field, and changes nothing", func() {
		for _, c := range []struct {
			group *models.BudgetGroup
			field string
		}{
			{nil, "group: required"},
			{&models.BudgetGroup{MaxUnavailable: "2"}, "group.name: required"},
			{&models.BudgetGroup{Name: "checkout"}, "group.max_unavailable: required"},
			{&models.BudgetGroup{Name: "checkout", MaxUnavailable: "two"}, "group.max_unavailable: must be a count"},
			{&models.BudgetGroup{Name: "check\x00out", MaxUnavailable: "2"}, "group.name: must be printable"},
		} {
			_, err := b.store.SetBudgetGroup(b.ctx, c.group, "alice")
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest), "%v", c.group)
			Expect(err.Error()).To(ContainSubstring(c.field))
		}
		Expect(b.store.RemoveBudgetGroup(b.ctx, "", "bob")).To(HaveErrorType(models.Error_InvalidRequest))
		groups, err := b.store.BudgetGroups(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(groups).To(BeEmpty())
		Expect(sink.take()).To(BeEmpty())
	})

	It("keeps the group an LRP names through desire, update and the convergence snapshot", func() {
		lrp := newLRP("web", "apps", 2)
		lrp.DisruptionBudget = &models.DisruptionBudget{Group: "checkout"}
		_, err := b.store.DesireLRP(b.ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		got, err := b.store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(got.DisruptionBudget).To(EqualProto(&models.DisruptionBudget{Group: "checkout"}), "a group nobody defined is accepted")

		_, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{DisruptionBudget: &models.DisruptionBudget{MaxUnavailable: "1", Group: "search"}})
		Expect(err).NotTo(HaveOccurred())
		got, err = b.store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(got.DisruptionBudget).To(EqualProto(&models.DisruptionBudget{MaxUnavailable: "1", Group: "search"}))

		snapshot, err := b.store.ConvergenceSnapshot(b.ctx, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(snapshot.Desired).To(HaveLen(1))
		Expect(snapshot.Desired[0].DisruptionBudget).To(EqualProto(&models.DisruptionBudget{MaxUnavailable: "1", Group: "search"}))

		_, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{DisruptionBudget: &models.DisruptionBudget{}})
		Expect(err).NotTo(HaveOccurred())
		got, err = b.store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(got.DisruptionBudget).To(BeNil(), "an empty budget: no budget, no group")
	})
})

var _ = forEachDialect("Evacuation within a budget group", func(b *board) {
	netInfo := &models.NetInfo{Address: "10.0.0.1", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}
	caller := func(guid string, index int32) models.Caller {
		return models.Caller{InstanceGuid: fmt.Sprintf("ig-%s-%d", guid, index), CellID: "cell-1"}
	}
	ordinary := func(guid string, index int32) models.ActualLRPKey {
		return models.ActualLRPKey{ProcessGuid: guid, Index: index, Presence: models.ActualLRP_ORDINARY}
	}

	// web-a and web-b, 2 instances each with a budget of their own of 2,
	// both in group checkout, all serving on cell-1.
	BeforeEach(func() {
		for _, guid := range []string{"web-a", "web-b"} {
			lrp := newLRP(guid, "apps", 2)
			lrp.DisruptionBudget = &models.DisruptionBudget{MaxUnavailable: "2", Group: "checkout"}
			_, err := b.store.DesireLRP(b.ctx, lrp)
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(b.store.RegisterCell(b.ctx, &models.Cell{CellId: "cell-1", RepUrl: "http://cell-1", Zone: "z1",
			Capacity: &models.CellCapacity{MemoryMb: 4096, DiskMb: 16384, Instances: 50}}, time.Hour)).To(Succeed())
		for _, guid := range []string{"web-a", "web-b"} {
			for index := range int32(2) {
				b.exec(`UPDATE actual_lrps SET cell_id = 'cell-1' WHERE process_guid = ? AND instance_index = ?`, guid, index)
				_, err := b.store.ClaimActualLRP(b.ctx, ordinary(guid, index), caller(guid, index))
				Expect(err).NotTo(HaveOccurred())
				_, err = b.store.StartActualLRP(b.ctx, ordinary(guid, index), caller(guid, index), netInfo, true)
				Expect(err).NotTo(HaveOccurred())
			}
		}
		b.clock.Advance(time.Second)
		Expect(b.store.DrainCell(b.ctx, "cell-1")).To(Succeed())
	})

	It("hands over across the group only as far as the group's budget, and says the group holds the rest", func() {
		_, err := b.store.SetBudgetGroup(b.ctx, &models.BudgetGroup{Name: "checkout", MaxUnavailable: "1"}, "op")
		Expect(err).NotTo(HaveOccurred())
		_, err = b.store.EvacuateActualLRP(b.ctx, "web-a", 0, caller("web-a", 0))
		Expect(err).NotTo(HaveOccurred())

		before := b.instances("web-b")
		_, err = b.store.EvacuateActualLRP(b.ctx, "web-b", 0, caller("web-b", 0))
		Expect(err).To(HaveErrorType(models.Error_ResourceConflict))
		Expect(err.Error()).To(ContainSubstring("budget_exhausted: web-b's disruption budget group checkout: budget 1, spent 1 (web-a 1)"))
		Expect(b.instances("web-b")).To(HaveLen(len(before)), "nothing written")
		_, err = b.store.EvacuateActualLRP(b.ctx, "web-a", 1, caller("web-a", 1))
		Expect(err).To(HaveErrorType(models.Error_ResourceConflict), "web-a's own budget of 2 has room; the group's has not")

		status, err := b.store.DrainStatus(b.ctx, "cell-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(status.Blocked).To(HaveLen(2))
		Expect(status.Blocked[1].ProcessGuid).To(Equal("web-b"))
		Expect(status.Blocked[1].BlockedBy.Detail).To(Equal("web-b's disruption budget group checkout: budget 1, spent 1 (web-a 1)"))
	})

	It("lets each LRP's own budget alone hold when its group is not defined", func() {
		for _, hand := range []struct {
			guid  string
			index int32
		}{{"web-a", 0}, {"web-a", 1}, {"web-b", 0}, {"web-b", 1}} {
			_, err := b.store.EvacuateActualLRP(b.ctx, hand.guid, hand.index, caller(hand.guid, hand.index))
			Expect(err).NotTo(HaveOccurred(), "%s/%d", hand.guid, hand.index)
		}
	})
})
