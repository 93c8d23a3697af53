package sqldb_test

import (
	"fmt"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("BulkReport", func(b *board) {
	var sink *recordingSink

	netInfo := &models.NetInfo{Address: "10.0.0.1", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}
	key := func(guid string, index int32) models.ActualLRPKey {
		return models.ActualLRPKey{ProcessGuid: guid, Index: index, Presence: models.ActualLRP_ORDINARY}
	}
	row := func(guid string, index int32) *models.ActualLRP {
		GinkgoHelper()
		return b.instances(guid)[index]
	}
	place := func(guid string, index int32, cellID string) {
		GinkgoHelper()
		Expect(b.exec(`UPDATE actual_lrps SET cell_id = ? WHERE process_guid = ? AND instance_index = ?`,
			cellID, guid, index)).To(BeEquivalentTo(1))
	}
	// run claims (and with net info starts) an instance as its rep would.
	run := func(guid string, index int32, instanceGuid, cellID string, started bool) *models.ActualLRP {
		GinkgoHelper()
		place(guid, index, cellID)
		caller := models.Caller{InstanceGuid: instanceGuid, CellID: cellID}
		lrp, err := b.store.ClaimActualLRP(b.ctx, key(guid, index), caller)
		Expect(err).NotTo(HaveOccurred())
		if started {
			lrp, err = b.store.StartActualLRP(b.ctx, key(guid, index), caller, netInfo, true)
			Expect(err).NotTo(HaveOccurred())
		}
		return lrp
	}
	reported := func(guid string, index int32, instanceGuid string, state models.ActualLRP_State) *models.ReportedInstance {
		r := &models.ReportedInstance{
			ProcessGuid: guid, Index: index, Presence: models.ActualLRP_ORDINARY,
			InstanceGuid: instanceGuid, DefinitionId: "v1", State: state,
		}
		if state == models.ActualLRP_RUNNING {
			r.NetInfo, r.Routable = netInfo, true
		}
		return r
	}
	report := func(instances ...*models.ReportedInstance) *db.BulkReportResult {
		GinkgoHelper()
		result, err := b.store.BulkReport(b.ctx, "cell-1", instances)
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

	It("changes nothing when the cell runs what the board has, and hands out the cell's unclaimed instances", func() {
		run("web", 0, "ig-0", "cell-1", true)
		run("web", 1, "ig-1", "cell-1", false)
		place("web", 2, "cell-1")
		place("api", 0, "cell-1")
		place("api", 1, "cell-2")
		before := b.instances("web")
		sink.take()

		result := report(reported("web", 0, "ig-0", models.ActualLRP_RUNNING), reported("web", 1, "ig-1", models.ActualLRP_CLAIMED))
		Expect(result.Stop).To(BeEmpty())
		Expect(result.Assigned).To(HaveLen(2))
		Expect(result.Assigned[0]).To(EqualProto(row("api", 0)))
		Expect(result.Assigned[1]).To(EqualProto(row("web", 2)))

		after := b.instances("web")
		for i := range before {
			Expect(after[i]).To(EqualProto(before[i]))
		}
		Expect(sink.take()).To(BeEmpty())
	})

	It("brings a CLAIMED instance the cell runs to RUNNING, with its net info", func() {
		claimed := run("web", 0, "ig-0", "cell-1", false)
		sink.take()
		b.clock.Advance(1000)

		result := report(reported("web", 0, "ig-0", models.ActualLRP_RUNNING))
		Expect(result.Stop).To(BeEmpty())
		running := row("web", 0)
		Expect(running.State).To(Equal(models.ActualLRP_RUNNING))
		Expect(running.NetInfo).To(EqualProto(netInfo))
		Expect(running.Routable).To(BeTrue())
		Expect(running.Since).To(Equal(b.clock.Now().UnixNano()))
		Expect(running.ModificationTag.Index).To(Equal(claimed.ModificationTag.Index + 1))
		events := sink.take()
		Expect(events).To(HaveLen(1))
		expectEvent(events[0], "actual_lrp_changed", "web", &models.ActualLRPChangedEvent{Before: claimed, After: running})
	})

	It("follows a RUNNING instance's new net info, and one gone back to starting", func() {
		running := run("web", 0, "ig-0", "cell-1", true)
		b.clock.Advance(1000)

		moved := reported("web", 0, "ig-0", models.ActualLRP_RUNNING)
		moved.NetInfo = &models.NetInfo{Address: "10.0.0.9"}
		report(moved)
		updated := row("web", 0)
		Expect(updated.NetInfo).To(EqualProto(moved.NetInfo))
		Expect(updated.Since).To(Equal(running.Since), "still RUNNING")

		report(reported("web", 0, "ig-0", models.ActualLRP_CLAIMED))
		starting := row("web", 0)
		Expect(starting.State).To(Equal(models.ActualLRP_CLAIMED))
		Expect(starting.Routable).To(BeFalse())
		Expect(starting.Since).To(Equal(b.clock.Now().UnixNano()))
	})

	It("says to stop what the board has no instance for, or holds for another instance or cell", func() {
		run("web", 0, "ig-0", "cell-1", true)
		run("web", 1, "ig-other", "cell-2", true)
		run("web", 2, "ig-2", "cell-1", true)
		_, err := b.store.CrashActualLRP(b.ctx, key("web", 2), models.Caller{InstanceGuid: "ig-2", CellID: "cell-1"}, "boom")
		Expect(err).NotTo(HaveOccurred())
		place("web", 3, "cell-2")
		place("api", 0, "cell-1")
		before := append(b.instances("web"), b.instances("api")...)
		sink.take()

		unknown := reported("gone", 0, "ig-9", models.ActualLRP_RUNNING)
		stranger := reported("web", 0, "ig-impostor", models.ActualLRP_RUNNING)
		otherCell := reported("web", 1, "ig-other", models.ActualLRP_RUNNING)
		crashed := reported("web", 2, "ig-2", models.ActualLRP_RUNNING)
		placedElsewhere := reported("web", 3, "ig-3", models.ActualLRP_CLAIMED)
		otherDefinition := reported("api", 0, "ig-a", models.ActualLRP_CLAIMED)
		otherDefinition.DefinitionId = "v0"
		suspect := reported("web", 0, "ig-0", models.ActualLRP_RUNNING)
		suspect.Presence = models.ActualLRP_SUSPECT

		result := report(unknown, stranger, otherCell, crashed, placedElsewhere, otherDefinition, suspect)
		Expect(result.Stop).To(HaveLen(7))
		for i, r := range []*models.ReportedInstance{unknown, stranger, otherCell, crashed, placedElsewhere, otherDefinition, suspect} {
			Expect(result.Stop[i]).To(EqualProto(r))
		}
		after := append(b.instances("web"), b.instances("api")...)
		for i := range before {
			Expect(after[i]).To(EqualProto(before[i]))
		}
		Expect(sink.take()).To(BeEmpty())
		Expect(result.Assigned).To(HaveLen(1), "api/0 stays assigned to the cell")
	})

	It("keeps a returning cell's instance that the board holds as SUSPECT, and stops it once the SUSPECT row is gone", func() {
		running := run("web", 0, "ig-0", "cell-1", true)
		_, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{
			MarkSuspect: []convergence.RowVersion{versionOf(running)},
			Create:      []convergence.NewActualLRP{{ProcessGuid: "web", Index: 0, Domain: "apps", DefinitionID: "v1", CellID: "cell-2"}},
		})
		Expect(err).NotTo(HaveOccurred())
		suspectRow := func() *models.ActualLRP {
			GinkgoHelper()
			for _, lrp := range b.instances("web") {
				if lrp.Index == 0 && lrp.Presence == models.ActualLRP_SUSPECT {
					return lrp
				}
			}
			return nil
		}
		suspect := suspectRow()
		Expect(suspect).NotTo(BeNil())
		sink.take()

		returning := reported("web", 0, "ig-0", models.ActualLRP_RUNNING)
		result := report(returning)
		Expect(result.Stop).To(BeEmpty(), "the board may still promote the instance back")
		Expect(suspectRow()).To(EqualProto(suspect))
		Expect(sink.take()).To(BeEmpty())

		_, err = b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Delete: []convergence.RowVersion{versionOf(suspect)}})
		Expect(err).NotTo(HaveOccurred())
		result = report(returning)
		Expect(result.Stop).To(HaveLen(1))
		Expect(result.Stop[0]).To(EqualProto(returning))
	})

	It("keeps an instance a rolling update made RETIRING, reported either way, until the board asks it to stop", func() {
		running := run("web", 1, "ig-1", "cell-1", true)
		_, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{
			Retire: []convergence.Retirement{{Row: versionOf(running)}},
			Create: []convergence.NewActualLRP{{ProcessGuid: "web", Index: 1, Domain: "apps", DefinitionID: "v1", CellID: "cell-2"}},
		})
		Expect(err).NotTo(HaveOccurred())
		retiringRow := func() *models.ActualLRP {
			GinkgoHelper()
			for _, lrp := range b.instances("web") {
				if lrp.Index == 1 && lrp.Presence == models.ActualLRP_RETIRING {
					return lrp
				}
			}
			return nil
		}
		retired := retiringRow()
		Expect(retired).NotTo(BeNil())
		sink.take()

		asOrdinary := reported("web", 1, "ig-1", models.ActualLRP_RUNNING)
		asRetiring := proto.Clone(asOrdinary).(*models.ReportedInstance)
		asRetiring.Presence = models.ActualLRP_RETIRING
		for _, r := range []*models.ReportedInstance{asOrdinary, asRetiring} {
			Expect(report(r).Stop).To(BeEmpty(), "its replacement is not ready: it keeps serving")
		}
		Expect(retiringRow()).To(EqualProto(retired))
		Expect(sink.take()).To(BeEmpty())

		_, err = b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{RequestStop: []convergence.RowVersion{versionOf(retired)}})
		Expect(err).NotTo(HaveOccurred())
		for _, r := range []*models.ReportedInstance{asOrdinary, asRetiring} {
			result := report(r)
			Expect(result.Stop).To(HaveLen(1))
			Expect(result.Stop[0]).To(EqualProto(asRetiring), "named as the RETIRING row it is")
		}
		Expect(retiringRow().StopRequested).To(BeTrue(), "the rep removes it once drained")
	})

	It("keeps an instance promoted back from RETIRING that its rep still reports as RETIRING", func() {
		find := func(presence models.ActualLRP_Presence) *models.ActualLRP {
			GinkgoHelper()
			for _, lrp := range b.instances("web") {
				if lrp.Index == 1 && lrp.Presence == presence {
					return lrp
				}
			}
			return nil
		}
		running := run("web", 1, "ig-1", "cell-1", true)
		_, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Retire: []convergence.Retirement{{Row: versionOf(running)}}})
		Expect(err).NotTo(HaveOccurred())
		retired := find(models.ActualLRP_RETIRING)
		Expect(retired).NotTo(BeNil())
		_, err = b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Promote: []convergence.RowVersion{versionOf(retired)}})
		Expect(err).NotTo(HaveOccurred())
		Expect(find(models.ActualLRP_RETIRING)).To(BeNil())
		promoted := find(models.ActualLRP_ORDINARY)
		Expect(promoted.InstanceGuid).To(Equal("ig-1"))
		Expect(promoted.StopRequested).To(BeFalse())
		sink.take()

		asRetiring := reported("web", 1, "ig-1", models.ActualLRP_RUNNING)
		asRetiring.Presence = models.ActualLRP_RETIRING
		Expect(report(asRetiring).Stop).To(BeEmpty(), "it is the index's instance again")
		Expect(find(models.ActualLRP_ORDINARY)).To(EqualProto(promoted))
	})

	It("adopts an UNCLAIMED instance placed on the cell that the cell runs already", func() {
		place("web", 0, "cell-1")
		place("web", 1, "cell-1")
		before := row("web", 0)
		sink.take()

		result := report(reported("web", 0, "ig-0", models.ActualLRP_RUNNING))
		Expect(result.Stop).To(BeEmpty())
		adopted := row("web", 0)
		Expect(adopted.State).To(Equal(models.ActualLRP_RUNNING))
		Expect(adopted.InstanceGuid).To(Equal("ig-0"))
		Expect(adopted.CellId).To(Equal("cell-1"))
		Expect(result.Assigned).To(HaveLen(1))
		Expect(result.Assigned[0].Index).To(BeEquivalentTo(1))
		events := sink.take()
		Expect(events).To(HaveLen(1))
		expectEvent(events[0], "actual_lrp_changed", "web", &models.ActualLRPChangedEvent{Before: before, After: adopted})
	})

	It("leaves the cell's instances it did not report alone", func() {
		claimed := run("web", 0, "ig-0", "cell-1", false)
		result := report()
		Expect(result.Stop).To(BeEmpty())
		Expect(result.Assigned).To(BeEmpty())
		Expect(row("web", 0)).To(EqualProto(claimed))
	})

	It("reconciles a whole cell of 250 instances at once", func() {
		_, err := b.store.DesireLRP(b.ctx, newLRP("big", "apps", 250))
		Expect(err).NotTo(HaveOccurred())
		b.exec(`UPDATE actual_lrps SET cell_id = 'cell-1' WHERE process_guid = 'big'`)
		var instances []*models.ReportedInstance
		for i := range int32(250) {
			_, err := b.store.ClaimActualLRP(b.ctx, key("big", i), models.Caller{InstanceGuid: fmt.Sprintf("ig-%d", i), CellID: "cell-1"})
			Expect(err).NotTo(HaveOccurred())
			instances = append(instances, reported("big", i, fmt.Sprintf("ig-%d", i), models.ActualLRP_RUNNING))
		}
		instances = append(instances, reported("gone", 0, "ig-x", models.ActualLRP_RUNNING))
		sink.take()

		result := report(instances...)
		Expect(result.Stop).To(HaveLen(1))
		for _, lrp := range b.instances("big") {
			Expect(lrp.State).To(Equal(models.ActualLRP_RUNNING))
			Expect(lrp.NetInfo).To(EqualProto(netInfo))
		}
		Expect(sink.take()).To(HaveLen(250))

		again := report(instances...)
		Expect(again.Stop).To(HaveLen(1))
		Expect(sink.take()).To(BeEmpty(), "a repeated report changes nothing")
	})

	It("settles concurrent reports of one cell, each change announced in commit order", func() {
		var instances []*models.ReportedInstance
		last := map[int32]uint32{}
		for i := range int32(5) {
			last[i] = run("web", i, fmt.Sprintf("ig-%d", i), "cell-1", false).ModificationTag.Index
			instances = append(instances, reported("web", i, fmt.Sprintf("ig-%d", i), models.ActualLRP_RUNNING))
		}
		sink.take()

		const reporters = 6
		var wg sync.WaitGroup
		for n := range reporters {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				// Each reporter sees another address, so each report changes
				// every row once more.
				mine := make([]*models.ReportedInstance, len(instances))
				for i, r := range instances {
					mine[i] = proto.Clone(r).(*models.ReportedInstance)
					mine[i].NetInfo = &models.NetInfo{Address: fmt.Sprintf("10.0.1.%d", n)}
				}
				result, err := b.store.BulkReport(b.ctx, "cell-1", mine)
				Expect(err).NotTo(HaveOccurred())
				Expect(result.Stop).To(BeEmpty())
			}()
		}
		wg.Wait()

		for _, e := range sink.take() {
			after := e.Payload.(*models.ActualLRPChangedEvent).After
			Expect(after.ModificationTag.Index).To(Equal(last[after.Index]+1), "web/%d", after.Index)
			last[after.Index] = after.ModificationTag.Index
		}
		for i := range int32(5) {
			lrp := row("web", i)
			Expect(lrp.State).To(Equal(models.ActualLRP_RUNNING))
			Expect(last[i]).To(Equal(lrp.ModificationTag.Index), "every stored change was announced")
		}
	})

	It("refuses a report without a cell, or with an instance that is neither CLAIMED nor RUNNING", func() {
		run("web", 0, "ig-0", "cell-1", false)
		before := row("web", 0)
		_, err := b.store.BulkReport(b.ctx, "", nil)
		Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
		_, err = b.store.BulkReport(b.ctx, "cell-1", []*models.ReportedInstance{
			reported("web", 0, "ig-0", models.ActualLRP_RUNNING),
			reported("web", 1, "ig-1", models.ActualLRP_CRASHED),
		})
		Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
		Expect(err.Error()).To(ContainSubstring("instances[1].state"))
		Expect(row("web", 0)).To(EqualProto(before))
	})
})
