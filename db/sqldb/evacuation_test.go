package sqldb_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("Cell draining", func(b *board) {
	const ttl = 30 * time.Second
	var sink *recordingSink

	newCell := func(id string) *models.Cell {
		return &models.Cell{
			CellId: id, RepUrl: "http://10.0.0.5:1800", Zone: "z1",
			Capacity: &models.CellCapacity{MemoryMb: 4096, DiskMb: 16384, Instances: 50},
		}
	}
	cell := func(id string) *models.Cell {
		GinkgoHelper()
		cells, err := b.store.Cells(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		for _, c := range cells {
			if c.CellId == id {
				c.Free = nil
				return c
			}
		}
		Fail("no cell " + id)
		return nil
	}

	BeforeEach(func() {
		sink = recordEvents(b)
		Expect(b.store.RegisterCell(b.ctx, newCell("cell-1"), ttl)).To(Succeed())
		Expect(b.store.RegisterCell(b.ctx, newCell("cell-2"), ttl)).To(Succeed())
		sink.take()
	})

	It("marks a cell draining, lists it so, and announces the change once", func() {
		before := cell("cell-1")
		Expect(before.Draining).To(BeFalse())

		Expect(b.store.DrainCell(b.ctx, "cell-1")).To(Succeed())
		after := cell("cell-1")
		Expect(after.Draining).To(BeTrue())
		Expect(after.Present).To(BeTrue(), "a draining cell stays present")
		Expect(cell("cell-2").Draining).To(BeFalse())
		events := sink.take()
		Expect(events).To(HaveLen(1))
		expectEvent(events[0], "cell_changed", "cell-1", &models.CellChangedEvent{Before: before, After: after})

		Expect(b.store.DrainCell(b.ctx, "cell-1")).To(Succeed(), "draining again")
		Expect(sink.take()).To(BeEmpty())
	})

	It("refuses an unknown cell with ResourceNotFound", func() {
		Expect(b.store.DrainCell(b.ctx, "cell-9")).To(HaveErrorType(models.Error_ResourceNotFound))
		Expect(b.store.DrainCell(b.ctx, "")).To(HaveErrorType(models.Error_InvalidRequest))
		Expect(sink.take()).To(BeEmpty())
	})

	It("tells a heartbeat that the cell drains, keeps the flag, and clears it on a fresh start", func() {
		draining, err := b.store.HeartbeatCell(b.ctx, newCell("cell-1"), ttl, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(draining).To(BeFalse())

		Expect(b.store.DrainCell(b.ctx, "cell-1")).To(Succeed())
		sink.take()
		for range 2 {
			b.clock.Advance(time.Second)
			draining, err = b.store.HeartbeatCell(b.ctx, newCell("cell-1"), ttl, false)
			Expect(err).NotTo(HaveOccurred())
			Expect(draining).To(BeTrue())
		}
		Expect(b.store.RegisterCell(b.ctx, newCell("cell-1"), ttl)).To(Succeed())
		Expect(cell("cell-1").Draining).To(BeTrue(), "RegisterCell is a heartbeat")
		Expect(cell("cell-1").ExpiresAt).To(Equal(b.clock.Now().Add(ttl).UnixNano()), "the heartbeat renewed presence")
		Expect(sink.take()).To(BeEmpty(), "a heartbeat that changes nothing but presence is quiet")

		before := cell("cell-1")
		b.clock.Advance(time.Second)
		draining, err = b.store.HeartbeatCell(b.ctx, newCell("cell-1"), ttl, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(draining).To(BeFalse())
		after := cell("cell-1")
		Expect(after.Draining).To(BeFalse())
		events := sink.take()
		Expect(events).To(HaveLen(1))
		expectEvent(events[0], "cell_changed", "cell-1", &models.CellChangedEvent{Before: before, After: after})
	})

	It("ignores draining in a registration, and a fresh start of a new or undrained cell is a plain registration", func() {
		asked := newCell("cell-3")
		asked.Draining = true
		draining, err := b.store.HeartbeatCell(b.ctx, asked, ttl, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(draining).To(BeFalse())
		Expect(cell("cell-3").Draining).To(BeFalse())
		sink.take()

		draining, err = b.store.HeartbeatCell(b.ctx, asked, ttl, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(draining).To(BeFalse())
		Expect(sink.take()).To(BeEmpty())
	})

	It("shows draining cells in the convergence snapshot", func() {
		Expect(b.store.DrainCell(b.ctx, "cell-2")).To(Succeed())
		snapshot, err := b.store.ConvergenceSnapshot(b.ctx, nil)
		Expect(err).NotTo(HaveOccurred())
		draining := map[string]bool{}
		for _, c := range snapshot.Cells {
			draining[c.CellID] = c.Draining
		}
		Expect(draining).To(Equal(map[string]bool{"cell-1": false, "cell-2": true}))
	})
})

var _ = forEachDialect("Evacuation", func(b *board) {
	var sink *recordingSink

	rep := models.Caller{InstanceGuid: "ig-0", CellID: "cell-1"}
	netInfo := &models.NetInfo{Address: "10.0.0.1", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}
	ordinaryKey := func(index int32) models.ActualLRPKey {
		return models.ActualLRPKey{ProcessGuid: "web", Index: index, Presence: models.ActualLRP_ORDINARY}
	}
	evacuatingKey := func(index int32) models.ActualLRPKey {
		return models.ActualLRPKey{ProcessGuid: "web", Index: index, Presence: models.ActualLRP_EVACUATING}
	}
	// rowOf is the row with this key, nil when there is none.
	rowOf := func(key models.ActualLRPKey) *models.ActualLRP {
		GinkgoHelper()
		for _, lrp := range b.instances(key.ProcessGuid) {
			if lrp.Index == key.Index && lrp.Presence == key.Presence {
				return lrp
			}
		}
		return nil
	}
	place := func(index int32, cellID string) {
		GinkgoHelper()
		Expect(b.exec(`UPDATE actual_lrps SET cell_id = ? WHERE process_guid = 'web' AND instance_index = ? AND presence = 'ORDINARY'`,
			cellID, index)).To(BeEquivalentTo(1))
	}
	run := func(index int32, caller models.Caller, started bool) *models.ActualLRP {
		GinkgoHelper()
		place(index, caller.CellID)
		lrp, err := b.store.ClaimActualLRP(b.ctx, ordinaryKey(index), caller)
		Expect(err).NotTo(HaveOccurred())
		if started {
			lrp, err = b.store.StartActualLRP(b.ctx, ordinaryKey(index), caller, netInfo, true)
			Expect(err).NotTo(HaveOccurred())
		}
		return lrp
	}
	evacuate := func(index int32, caller models.Caller) (bool, error) {
		return b.store.EvacuateActualLRP(b.ctx, "web", index, caller)
	}
	// expectUnchanged runs call and checks that it wrote and announced
	// nothing; it returns what call returned.
	expectUnchanged := func(call func() (bool, error)) (bool, error) {
		GinkgoHelper()
		before := b.instances("web")
		sink.take()
		keep, err := call()
		after := b.instances("web")
		Expect(after).To(HaveLen(len(before)))
		for i := range before {
			Expect(after[i]).To(EqualProto(before[i]))
		}
		Expect(sink.take()).To(BeEmpty())
		return keep, err
	}
	// unassignedVersion is the ORDINARY row as evacuation leaves it.
	unassignedVersion := func(before *models.ActualLRP) *models.ActualLRP {
		want := proto.Clone(before).(*models.ActualLRP)
		want.State = models.ActualLRP_UNCLAIMED
		want.CellId, want.InstanceGuid, want.NetInfo, want.RoutePorts = "", "", nil, nil
		want.Routable, want.Occupied, want.PlacementError = false, false, ""
		want.Since = b.clock.Now().UnixNano()
		want.ModificationTag.Index++
		return want
	}

	BeforeEach(func() {
		sink = recordEvents(b)
		// The hand-over itself is under test here: a budget of every
		// instance, on present cells, never holds one (the budget's own
		// specs are under "Evacuation within the disruption budget").
		lrp := newLRP("web", "apps", 3)
		lrp.DisruptionBudget = &models.DisruptionBudget{MaxUnavailable: "100%"}
		_, err := b.store.DesireLRP(b.ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		for _, id := range []string{"cell-1", "cell-2"} {
			Expect(b.store.RegisterCell(b.ctx, &models.Cell{CellId: id, RepUrl: "http://" + id, Zone: "z1",
				Capacity: &models.CellCapacity{MemoryMb: 4096, DiskMb: 16384, Instances: 50}}, time.Hour)).To(Succeed())
		}
		b.clock.Advance(time.Second)
	})

	Describe("EvacuateActualLRP", func() {
		It("keeps a RUNNING instance as EVACUATING and gives its index back for placement elsewhere, in one write", func() {
			run(0, rep, true)
			b.exec(`UPDATE actual_lrps SET crash_count = 2, occupied = ? WHERE process_guid = 'web' AND instance_index = 0`, true)
			before := rowOf(ordinaryKey(0))
			b.clock.Advance(time.Second)
			sink.take()

			keep, err := evacuate(0, rep)
			Expect(err).NotTo(HaveOccurred())
			Expect(keep).To(BeTrue())

			evacuating := rowOf(evacuatingKey(0))
			Expect(evacuating).NotTo(BeNil())
			copied := proto.Clone(before).(*models.ActualLRP)
			copied.Presence = models.ActualLRP_EVACUATING
			copied.ModificationTag = evacuating.ModificationTag
			Expect(evacuating).To(EqualProto(copied), "a copy of the running instance: cell, instance, net info, routable, definition, since")
			Expect(evacuating.ModificationTag.Epoch).NotTo(Equal(before.ModificationTag.Epoch))
			Expect(evacuating.Routable).To(BeTrue())

			ordinary := rowOf(ordinaryKey(0))
			Expect(ordinary).To(EqualProto(unassignedVersion(before)))
			Expect(ordinary.CrashCount).To(BeEquivalentTo(2), "the crash count is kept")

			events := sink.take()
			Expect(eventTypes(events)).To(Equal([]string{"actual_lrp_created", "actual_lrp_changed"}))
			expectEvent(events[0], "actual_lrp_created", "web", &models.ActualLRPCreatedEvent{ActualLrp: evacuating})
			expectEvent(events[1], "actual_lrp_changed", "web", &models.ActualLRPChangedEvent{Before: before, After: ordinary})
		})

		It("answers a repeat with keep_running and writes nothing, whatever became of the index since", func() {
			run(0, rep, true)
			_, err := evacuate(0, rep)
			Expect(err).NotTo(HaveOccurred())

			keep, err := expectUnchanged(func() (bool, error) { return evacuate(0, rep) })
			Expect(err).NotTo(HaveOccurred())
			Expect(keep).To(BeTrue())

			run(0, models.Caller{InstanceGuid: "ig-new", CellID: "cell-2"}, true)
			keep, err = expectUnchanged(func() (bool, error) { return evacuate(0, rep) })
			Expect(err).NotTo(HaveOccurred())
			Expect(keep).To(BeTrue(), "the replacement runs, but the rep learns that from its bulk report")
		})

		It("gives a CLAIMED instance back for placement elsewhere; nothing keeps running", func() {
			before := run(1, models.Caller{InstanceGuid: "ig-1", CellID: "cell-1"}, false)
			sink.take()

			keep, err := evacuate(1, models.Caller{InstanceGuid: "ig-1", CellID: "cell-1"})
			Expect(err).NotTo(HaveOccurred())
			Expect(keep).To(BeFalse())
			Expect(rowOf(evacuatingKey(1))).To(BeNil())
			after := rowOf(ordinaryKey(1))
			Expect(after).To(EqualProto(unassignedVersion(before)))
			events := sink.take()
			Expect(events).To(HaveLen(1))
			expectEvent(events[0], "actual_lrp_changed", "web", &models.ActualLRPChangedEvent{Before: before, After: after})
		})

		It("gives an UNCLAIMED instance placed on the caller's cell back for placement elsewhere", func() {
			place(2, "cell-1")
			before := rowOf(ordinaryKey(2))

			keep, err := evacuate(2, models.Caller{InstanceGuid: "ig-2", CellID: "cell-1"})
			Expect(err).NotTo(HaveOccurred())
			Expect(keep).To(BeFalse())
			Expect(rowOf(ordinaryKey(2))).To(EqualProto(unassignedVersion(before)))
		})

		It("writes nothing for an instance that is not the caller's, not running or not there", func() {
			run(0, rep, true)
			run(1, models.Caller{InstanceGuid: "ig-1", CellID: "cell-1"}, true)
			_, err := b.store.CrashActualLRP(b.ctx, ordinaryKey(1), models.Caller{InstanceGuid: "ig-1", CellID: "cell-1"}, "exit 1")
			Expect(err).NotTo(HaveOccurred())
			place(2, "cell-2")

			for _, c := range []struct {
				index  int32
				caller models.Caller
			}{
				{0, models.Caller{InstanceGuid: "ig-other", CellID: "cell-1"}}, // another instance
				{0, models.Caller{InstanceGuid: "ig-other", CellID: "cell-2"}}, // another instance, on another cell
				{1, models.Caller{InstanceGuid: "ig-1", CellID: "cell-1"}},     // crashed
				{2, models.Caller{InstanceGuid: "ig-2", CellID: "cell-1"}},     // placed elsewhere
				{7, rep}, // no row
			} {
				keep, err := expectUnchanged(func() (bool, error) { return evacuate(c.index, c.caller) })
				Expect(err).NotTo(HaveOccurred(), "web/%d by %+v", c.index, c.caller)
				Expect(keep).To(BeFalse(), "web/%d by %+v", c.index, c.caller)
			}
		})

		// Issue 26: naming another cell's instance was answered as if
		// nothing were wrong (keep_running false, nothing written).
		It("refuses a call naming another cell's instance, ORDINARY or EVACUATING, and writes nothing", func() {
			run(0, rep, true)
			owner1 := models.Caller{InstanceGuid: "ig-1", CellID: "cell-1"}
			run(1, owner1, true)
			_, err := evacuate(1, owner1)
			Expect(err).NotTo(HaveOccurred())

			for _, c := range []struct {
				index int32
				guid  string
				want  string
			}{
				{0, "ig-0", `cannot evacuate actual LRP web/0 (ORDINARY): instance "ig-0" runs on cell "cell-1", not on cell "cell-2"`},
				{1, "ig-1", `cannot evacuate actual LRP web/1 (EVACUATING): instance "ig-1" runs on cell "cell-1", not on cell "cell-2"`},
			} {
				_, err := expectUnchanged(func() (bool, error) {
					return evacuate(c.index, models.Caller{InstanceGuid: c.guid, CellID: "cell-2"})
				})
				Expect(err).To(HaveErrorType(models.Error_InvalidStateTransition))
				Expect(err.Error()).To(ContainSubstring(c.want))
			}
		})

		It("refuses an instance a rolling update made RETIRING, asked to stop or not, and writes nothing: its rep follows the RETIRING row", func() {
			running := run(0, rep, true)
			_, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{
				Retire: []convergence.Retirement{{Row: versionOf(running)}},
				Create: []convergence.NewActualLRP{{ProcessGuid: "web", Index: 0, Domain: "apps", DefinitionID: running.DefinitionId, CellID: "cell-2"}},
			})
			Expect(err).NotTo(HaveOccurred())
			retiringKey := ordinaryKey(0)
			retiringKey.Presence = models.ActualLRP_RETIRING
			Expect(rowOf(retiringKey).GetInstanceGuid()).To(Equal(rep.InstanceGuid))

			_, err = expectUnchanged(func() (bool, error) { return evacuate(0, rep) })
			Expect(err).To(HaveErrorType(models.Error_ResourceConflict))
			Expect(err.Error()).To(ContainSubstring(`instance "` + rep.InstanceGuid + `" is RETIRING`))

			_, err = b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{RequestStop: []convergence.RowVersion{versionOf(rowOf(retiringKey))}})
			Expect(err).NotTo(HaveOccurred())
			_, err = expectUnchanged(func() (bool, error) { return evacuate(0, rep) })
			Expect(err).To(HaveErrorType(models.Error_ResourceConflict))
		})

		It("makes a running instance wait while an earlier evacuation of its index is not over", func() {
			run(0, rep, true)
			_, err := evacuate(0, rep)
			Expect(err).NotTo(HaveOccurred())
			next := models.Caller{InstanceGuid: "ig-next", CellID: "cell-2"}
			run(0, next, true)

			_, err = expectUnchanged(func() (bool, error) { return evacuate(0, next) })
			Expect(err).To(HaveErrorType(models.Error_ResourceConflict))

			Expect(b.store.RemoveActualLRP(b.ctx, evacuatingKey(0), rep)).To(Succeed())
			keep, err := evacuate(0, next)
			Expect(err).NotTo(HaveOccurred())
			Expect(keep).To(BeTrue())
			Expect(rowOf(evacuatingKey(0)).InstanceGuid).To(Equal("ig-next"))
		})

		It("refuses a call without an instance or cell", func() {
			_, err := b.store.EvacuateActualLRP(b.ctx, "web", 0, models.Caller{CellID: "cell-1"})
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			_, err = b.store.EvacuateActualLRP(b.ctx, "", 0, rep)
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
		})
	})

	Describe("the evacuating instance's own calls", func() {
		BeforeEach(func() {
			run(0, rep, true)
			_, err := evacuate(0, rep)
			Expect(err).NotTo(HaveOccurred())
			sink.take()
		})

		It("lets the owner mark it unroutable (RUNNING stays RUNNING) and then remove it", func() {
			before := rowOf(evacuatingKey(0))
			after, err := b.store.StartActualLRP(b.ctx, evacuatingKey(0), rep, netInfo, false)
			Expect(err).NotTo(HaveOccurred())
			Expect(after.State).To(Equal(models.ActualLRP_RUNNING))
			Expect(after.Routable).To(BeFalse())
			Expect(after.Since).To(Equal(before.Since))
			Expect(rowOf(evacuatingKey(0))).To(EqualProto(after))
			events := sink.take()
			Expect(events).To(HaveLen(1))
			expectEvent(events[0], "actual_lrp_changed", "web", &models.ActualLRPChangedEvent{Before: before, After: after})

			Expect(b.store.RemoveActualLRP(b.ctx, evacuatingKey(0), rep)).To(Succeed())
			Expect(rowOf(evacuatingKey(0))).To(BeNil())
			Expect(eventTypes(sink.take())).To(Equal([]string{"actual_lrp_removed"}))
		})

		It("refuses another cell's or instance's calls on it", func() {
			other := models.Caller{InstanceGuid: "ig-0", CellID: "cell-2"}
			_, err := b.store.StartActualLRP(b.ctx, evacuatingKey(0), other, netInfo, false)
			Expect(err).To(HaveErrorType(models.Error_InvalidStateTransition))
			Expect(b.store.RemoveActualLRP(b.ctx, evacuatingKey(0), other)).To(HaveErrorType(models.Error_InvalidStateTransition))
			Expect(rowOf(evacuatingKey(0)).Routable).To(BeTrue())
			Expect(sink.take()).To(BeEmpty())
		})

		It("never starts a row other than ORDINARY that is not RUNNING", func() {
			b.exec(`UPDATE actual_lrps SET state = 'CLAIMED' WHERE presence = 'EVACUATING'`)
			_, err := b.store.StartActualLRP(b.ctx, evacuatingKey(0), rep, netInfo, true)
			Expect(err).To(HaveErrorType(models.Error_InvalidStateTransition))
		})
	})

	Describe("BulkReport of evacuating instances", func() {
		reportedEvacuating := func(routable bool) *models.ReportedInstance {
			return &models.ReportedInstance{
				ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_EVACUATING, InstanceGuid: "ig-0",
				DefinitionId: "v1", State: models.ActualLRP_RUNNING, NetInfo: netInfo, Routable: routable,
			}
		}
		report := func(instances ...*models.ReportedInstance) *db.BulkReportResult {
			GinkgoHelper()
			result, err := b.store.BulkReport(b.ctx, "cell-1", instances)
			Expect(err).NotTo(HaveOccurred())
			return result
		}
		replacement := models.Caller{InstanceGuid: "ig-r", CellID: "cell-2"}

		BeforeEach(func() {
			run(0, rep, true)
			_, err := evacuate(0, rep)
			Expect(err).NotTo(HaveOccurred())
			sink.take()
		})

		It("keeps it while the replacement is unclaimed or starting, and brings the row in line with the report", func() {
			Expect(report(reportedEvacuating(true)).Stop).To(BeEmpty())
			Expect(sink.take()).To(BeEmpty())

			run(0, replacement, false)
			sink.take()
			before := rowOf(evacuatingKey(0))
			result := report(reportedEvacuating(false))
			Expect(result.Stop).To(BeEmpty())
			Expect(result.Assigned).To(BeEmpty())
			after := rowOf(evacuatingKey(0))
			Expect(after.Routable).To(BeFalse(), "the rep marked it unroutable")
			events := sink.take()
			Expect(events).To(HaveLen(1))
			expectEvent(events[0], "actual_lrp_changed", "web", &models.ActualLRPChangedEvent{Before: before, After: after})
		})

		It("puts it in Stop once the replacement runs, on any cell", func() {
			run(0, replacement, true)
			sink.take()
			evacuating := reportedEvacuating(true)
			result := report(evacuating)
			Expect(result.Stop).To(HaveLen(1))
			Expect(result.Stop[0]).To(EqualProto(evacuating))
			Expect(rowOf(evacuatingKey(0))).NotTo(BeNil(), "the rep removes the row once it has stopped the instance")
			Expect(sink.take()).To(BeEmpty())
		})

		It("puts it in Stop when the ORDINARY row or its own row is gone", func() {
			b.exec(`DELETE FROM actual_lrps WHERE presence = 'ORDINARY' AND instance_index = 0`)
			Expect(report(reportedEvacuating(true)).Stop).To(HaveLen(1))

			_, err := b.store.DesireLRP(b.ctx, newLRP("api", "apps", 1))
			Expect(err).NotTo(HaveOccurred())
			gone := reportedEvacuating(true)
			gone.ProcessGuid = "api"
			Expect(report(gone).Stop).To(HaveLen(1), "api/0 has an ORDINARY row but no EVACUATING one")
		})
	})

	Describe("convergence passes", func() {
		pass := func() *convergence.Plan {
			GinkgoHelper()
			snapshot, err := b.store.ConvergenceSnapshot(b.ctx, nil)
			Expect(err).NotTo(HaveOccurred())
			cfg := convergence.DefaultConfig()
			cfg.EvacuationGrace = time.Minute
			plan := convergence.Compute(snapshot, b.clock.Now(), cfg)
			_, err = b.store.ApplyConvergence(b.ctx, &plan.Writes)
			Expect(err).NotTo(HaveOccurred())
			return plan
		}

		It("place the replacement off the draining cell, and delete the EVACUATING row once the replacement has run past the grace", func() {
			for _, id := range []string{"cell-1", "cell-2"} {
				Expect(b.store.RegisterCell(b.ctx, &models.Cell{
					CellId: id, RepUrl: "http://10.0.0.5:1800", Zone: "z1", PlacementTags: []string{"ssd", "zone-a"},
					Capacity: &models.CellCapacity{MemoryMb: 1 << 20, DiskMb: 1 << 20, Instances: 100},
				}, time.Hour)).To(Succeed())
			}
			Expect(b.store.UpsertDomain(b.ctx, "apps", 0)).To(Succeed())
			run(0, rep, true)
			Expect(b.store.DrainCell(b.ctx, "cell-1")).To(Succeed())
			_, err := evacuate(0, rep)
			Expect(err).NotTo(HaveOccurred())

			pass()
			Expect(rowOf(ordinaryKey(0)).CellId).To(Equal("cell-2"), "never the draining cell")
			Expect(rowOf(evacuatingKey(0))).NotTo(BeNil())

			replacement := models.Caller{InstanceGuid: "ig-r", CellID: "cell-2"}
			_, err = b.store.ClaimActualLRP(b.ctx, ordinaryKey(0), replacement)
			Expect(err).NotTo(HaveOccurred())
			_, err = b.store.StartActualLRP(b.ctx, ordinaryKey(0), replacement, netInfo, true)
			Expect(err).NotTo(HaveOccurred())
			b.clock.Advance(59 * time.Second)
			pass()
			Expect(rowOf(evacuatingKey(0))).NotTo(BeNil(), "within the grace")

			b.clock.Advance(time.Second)
			sink.take()
			plan := pass()
			Expect(plan.Writes.Delete).To(HaveLen(1))
			Expect(rowOf(evacuatingKey(0))).To(BeNil())
			Expect(eventTypes(sink.take())).To(ContainElement("actual_lrp_removed"))
		})
	})

	Describe("BulkReport of occupancy", func() {
		reportedRunning := func(occupied bool) *models.ReportedInstance {
			return &models.ReportedInstance{
				ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY, InstanceGuid: "ig-0",
				DefinitionId: "v1", State: models.ActualLRP_RUNNING, NetInfo: netInfo, Routable: true, Occupied: occupied,
			}
		}

		It("writes occupied on a matched RUNNING row, only when it changes", func() {
			run(0, rep, true)
			sink.take()
			before := rowOf(ordinaryKey(0))
			Expect(before.Occupied).To(BeFalse())

			_, err := b.store.BulkReport(b.ctx, "cell-1", []*models.ReportedInstance{reportedRunning(true)})
			Expect(err).NotTo(HaveOccurred())
			after := rowOf(ordinaryKey(0))
			Expect(after.Occupied).To(BeTrue())
			events := sink.take()
			Expect(events).To(HaveLen(1))
			expectEvent(events[0], "actual_lrp_changed", "web", &models.ActualLRPChangedEvent{Before: before, After: after})

			_, err = b.store.BulkReport(b.ctx, "cell-1", []*models.ReportedInstance{reportedRunning(true)})
			Expect(err).NotTo(HaveOccurred())
			Expect(sink.take()).To(BeEmpty(), "unchanged")

			_, err = b.store.BulkReport(b.ctx, "cell-1", []*models.ReportedInstance{reportedRunning(false)})
			Expect(err).NotTo(HaveOccurred())
			Expect(rowOf(ordinaryKey(0)).Occupied).To(BeFalse())
		})

		It("never stores a starting or crashed instance as occupied", func() {
			run(0, rep, false)
			starting := reportedRunning(true)
			starting.State, starting.NetInfo, starting.Routable = models.ActualLRP_CLAIMED, nil, false
			_, err := b.store.BulkReport(b.ctx, "cell-1", []*models.ReportedInstance{starting})
			Expect(err).NotTo(HaveOccurred())
			Expect(rowOf(ordinaryKey(0)).Occupied).To(BeFalse())

			_, err = b.store.BulkReport(b.ctx, "cell-1", []*models.ReportedInstance{reportedRunning(true)})
			Expect(err).NotTo(HaveOccurred())
			Expect(rowOf(ordinaryKey(0)).Occupied).To(BeTrue())
			crashed, err := b.store.CrashActualLRP(b.ctx, ordinaryKey(0), rep, "exit 1")
			Expect(err).NotTo(HaveOccurred())
			Expect(crashed.Occupied).To(BeFalse())
			Expect(rowOf(ordinaryKey(0)).Occupied).To(BeFalse())
		})
	})
})
