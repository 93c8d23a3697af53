package sqldb_test

import (
	"fmt"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("ReportOccupancy", func(b *board) {
	var sink *recordingSink

	netInfo := &models.NetInfo{Address: "10.0.0.1", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}
	key := func(guid string, index int32) models.ActualLRPKey {
		return models.ActualLRPKey{ProcessGuid: guid, Index: index, Presence: models.ActualLRP_ORDINARY}
	}
	row := func(guid string, index int32) *models.ActualLRP {
		GinkgoHelper()
		return b.instances(guid)[index]
	}
	// run claims (and when started, starts) an instance as its rep would.
	run := func(guid string, index int32, instanceGuid, cellID string, started bool) *models.ActualLRP {
		GinkgoHelper()
		Expect(b.exec(`UPDATE actual_lrps SET cell_id = ? WHERE process_guid = ? AND instance_index = ?`,
			cellID, guid, index)).To(BeEquivalentTo(1))
		caller := models.Caller{InstanceGuid: instanceGuid, CellID: cellID}
		lrp, err := b.store.ClaimActualLRP(b.ctx, key(guid, index), caller)
		Expect(err).NotTo(HaveOccurred())
		if started {
			lrp, err = b.store.StartActualLRP(b.ctx, key(guid, index), caller, netInfo, true)
			Expect(err).NotTo(HaveOccurred())
		}
		return lrp
	}
	change := func(guid string, index int32, instanceGuid string, occupied bool) *models.OccupancyChange {
		return &models.OccupancyChange{
			ProcessGuid: guid, Index: index, Presence: models.ActualLRP_ORDINARY, InstanceGuid: instanceGuid, Occupied: occupied,
		}
	}
	report := func(changes ...*models.OccupancyChange) *db.OccupancyResult {
		GinkgoHelper()
		result, err := b.store.ReportOccupancy(b.ctx, "cell-1", changes)
		Expect(err).NotTo(HaveOccurred())
		return result
	}

	BeforeEach(func() {
		sink = recordEvents(b)
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 5))
		Expect(err).NotTo(HaveOccurred())
		_, err = b.store.DesireLRP(b.ctx, newLRP("api", "apps", 2))
		Expect(err).NotTo(HaveOccurred())
		b.clock.Advance(1000)
	})

	It("sets occupied on the cell's own RUNNING row, bumping its tag, and announces it", func() {
		running := run("web", 0, "ig-0", "cell-1", true)
		sink.take()

		result := report(change("web", 0, "ig-0", true))
		Expect(result.Applied).To(Equal(1))
		Expect(result.Changed).To(Equal([]string{"web"}))
		occupied := row("web", 0)
		Expect(occupied.Occupied).To(BeTrue())
		Expect(occupied.ModificationTag.Epoch).To(Equal(running.ModificationTag.Epoch))
		Expect(occupied.ModificationTag.Index).To(Equal(running.ModificationTag.Index + 1))
		Expect(occupied.Since).To(Equal(running.Since), "occupancy is no change of state")
		events := sink.take()
		Expect(events).To(HaveLen(1))
		expectEvent(events[0], "actual_lrp_changed", "web", &models.ActualLRPChangedEvent{Before: running, After: occupied})

		result = report(change("web", 0, "ig-0", false))
		Expect(result.Applied).To(Equal(1))
		ready := row("web", 0)
		Expect(ready.Occupied).To(BeFalse())
		Expect(ready.ModificationTag.Index).To(Equal(running.ModificationTag.Index + 2))
		events = sink.take()
		Expect(events).To(HaveLen(1))
		expectEvent(events[0], "actual_lrp_changed", "web", &models.ActualLRPChangedEvent{Before: occupied, After: ready})
	})

	It("leaves alone another instance's row, a CLAIMED row, a missing row and a change that changes nothing", func() {
		run("web", 0, "ig-0", "cell-2", true)
		run("web", 1, "ig-1", "cell-1", true)
		run("web", 2, "ig-2", "cell-1", false)
		run("web", 3, "ig-3", "cell-1", true)
		Expect(report(change("web", 3, "ig-3", true)).Applied).To(Equal(1))
		before := b.instances("web")
		sink.take()

		evacuating := change("web", 1, "ig-1", true)
		evacuating.Presence = models.ActualLRP_EVACUATING
		result := report(
			change("web", 0, "ig-other", true),    // cell-2's row, another instance
			change("web", 1, "ig-impostor", true), // another instance
			evacuating,                            // no such row
			change("web", 2, "ig-2", true),        // CLAIMED
			change("web", 3, "ig-3", true),        // occupied already
			change("web", 4, "ig-4", true),        // UNCLAIMED, on no cell
			change("gone", 0, "ig-9", true),       // no such LRP
		)
		Expect(result.Applied).To(BeZero())
		Expect(result.Changed).To(BeEmpty())
		for i, lrp := range b.instances("web") {
			Expect(lrp).To(EqualProto(before[i]))
		}
		Expect(sink.take()).To(BeEmpty())
	})

	It("applies a batch of many rows in one go, naming each changed LRP once, in order", func() {
		for i := range int32(5) {
			run("web", i, fmt.Sprintf("ig-web-%d", i), "cell-1", true)
		}
		run("api", 0, "ig-api-0", "cell-1", true)
		run("api", 1, "ig-api-1", "cell-1", true)
		sink.take()

		result := report(
			change("web", 3, "ig-web-3", true),
			change("api", 1, "ig-api-1", true),
			change("web", 0, "ig-web-0", true),
			change("web", 4, "ig-web-4", false), // ready already
			change("web", 1, "ig-web-1", true),
		)
		Expect(result.Applied).To(Equal(4))
		Expect(result.Changed).To(Equal([]string{"api", "web"}))
		var occupied []string
		for _, guid := range []string{"api", "web"} {
			for _, lrp := range b.instances(guid) {
				if lrp.Occupied {
					occupied = append(occupied, fmt.Sprintf("%s/%d", guid, lrp.Index))
				}
			}
		}
		Expect(occupied).To(Equal([]string{"api/1", "web/0", "web/1", "web/3"}))
		Expect(eventTypes(sink.take())).To(Equal([]string{
			"actual_lrp_changed", "actual_lrp_changed", "actual_lrp_changed", "actual_lrp_changed",
		}))
	})

	It("applies a row's changes in order: the last one counts, and a change undone in the batch writes nothing", func() {
		run("web", 0, "ig-0", "cell-1", true)
		run("web", 1, "ig-1", "cell-1", true)
		before := row("web", 0)
		sink.take()

		result := report(
			change("web", 0, "ig-0", true), change("web", 0, "ig-0", false),
			change("web", 1, "ig-1", true), change("web", 1, "ig-1", false), change("web", 1, "ig-1", true),
		)
		Expect(result.Applied).To(Equal(1))
		Expect(row("web", 0)).To(EqualProto(before))
		Expect(row("web", 1).Occupied).To(BeTrue())
		Expect(sink.take()).To(HaveLen(1))
	})

	It("settles concurrent reports of one cell, each change announced in commit order", func() {
		last := map[int32]uint32{}
		for i := range int32(5) {
			last[i] = run("web", i, fmt.Sprintf("ig-%d", i), "cell-1", true).ModificationTag.Index
		}
		sink.take()

		const reporters = 6
		var wg sync.WaitGroup
		for n := range reporters {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				var changes []*models.OccupancyChange
				for i := range int32(5) {
					changes = append(changes, change("web", i, fmt.Sprintf("ig-%d", i), n%2 == 0))
				}
				_, err := b.store.ReportOccupancy(b.ctx, "cell-1", changes)
				Expect(err).NotTo(HaveOccurred())
			}()
		}
		wg.Wait()

		for _, e := range sink.take() {
			payload := e.Payload.(*models.ActualLRPChangedEvent)
			Expect(payload.After.Occupied).NotTo(Equal(payload.Before.Occupied))
			Expect(payload.After.ModificationTag.Index).To(Equal(last[payload.After.Index]+1), "web/%d", payload.After.Index)
			last[payload.After.Index] = payload.After.ModificationTag.Index
		}
		for i := range int32(5) {
			Expect(last[i]).To(Equal(row("web", i).ModificationTag.Index), "every stored change was announced")
		}
	})

	// Issue 26: a cell naming another cell's instance was answered as if
	// nothing were wrong. The whole batch is refused, so that nothing of
	// it applies and the caller hears why.
	It("refuses a batch naming another cell's instance, applying none of it", func() {
		run("web", 0, "ig-0", "cell-2", true)
		run("web", 1, "ig-1", "cell-1", true)
		before := b.instances("web")
		sink.take()

		_, err := b.store.ReportOccupancy(b.ctx, "cell-1", []*models.OccupancyChange{
			change("web", 1, "ig-1", true), // cell-1's own: not applied either
			change("web", 0, "ig-0", true), // cell-2's instance
		})
		Expect(err).To(HaveErrorType(models.Error_InvalidStateTransition))
		Expect(err.Error()).To(ContainSubstring(`changes[1]: cannot report occupancy of actual LRP web/0 (ORDINARY): instance "ig-0" runs on cell "cell-2", not on cell "cell-1"`))
		for i, lrp := range b.instances("web") {
			Expect(lrp).To(EqualProto(before[i]))
		}
		Expect(sink.take()).To(BeEmpty())

		// The owner's report goes through.
		result, err := b.store.ReportOccupancy(b.ctx, "cell-2", []*models.OccupancyChange{change("web", 0, "ig-0", true)})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Applied).To(Equal(1))
	})

	It("refuses a report without a cell or with a nil change", func() {
		_, err := b.store.ReportOccupancy(b.ctx, "", []*models.OccupancyChange{change("web", 0, "ig-0", true)})
		Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
		_, err = b.store.ReportOccupancy(b.ctx, "cell-1", []*models.OccupancyChange{change("web", 0, "ig-0", true), nil})
		Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
		Expect(err.Error()).To(ContainSubstring("changes[1]"))
	})
})
