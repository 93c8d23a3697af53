package handlers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

const (
	instanceGuid = "5d9c1a6e-6f0e-4b7a-9d3c-2b1f0e8a7c65"
	cellID       = "cell-z1-0"
)

func registerRequest() *models.RegisterCellRequest {
	return &models.RegisterCellRequest{Cell: &models.Cell{
		CellId:        cellID,
		RepUrl:        "http://10.0.0.5:1800",
		Zone:          "z1",
		Capacity:      &models.CellCapacity{MemoryMb: 4096, DiskMb: 8192, Instances: 100},
		PlacementTags: []string{"linux"},
	}}
}

func netInfo() *models.NetInfo {
	return &models.NetInfo{Address: "10.0.0.5", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}
}

func reported(guid string, index int32, state models.ActualLRP_State) *models.ReportedInstance {
	r := &models.ReportedInstance{
		ProcessGuid: guid, Index: index, Presence: models.ActualLRP_ORDINARY,
		InstanceGuid: instanceGuid, DefinitionId: "v1", State: state, Routable: true,
	}
	if state == models.ActualLRP_RUNNING {
		r.NetInfo = netInfo()
	}
	return r
}

// TEMPORARY, with handlers.WithoutCellSide: until db/sqldb stores cells,
// the board answers the cell routes Unavailable, typed like any refusal.
var _ = Describe("A store without the cell side", func() {
	It("answers Unavailable on every cell route", func() {
		b := newBoard(stores[testdb.SQLite], jsonWire)
		for route, request := range map[string]proto.Message{
			models.RouteRegisterCell:    registerRequest(),
			models.RouteCells:           &models.CellsRequest{},
			models.RouteClaimActualLRP:  &models.ClaimActualLRPRequest{ProcessGuid: "web", InstanceGuid: instanceGuid, CellId: cellID},
			models.RouteStartActualLRP:  &models.StartActualLRPRequest{ProcessGuid: "web", InstanceGuid: instanceGuid, CellId: cellID, NetInfo: netInfo()},
			models.RouteCrashActualLRP:  &models.CrashActualLRPRequest{ProcessGuid: "web", InstanceGuid: instanceGuid, CellId: cellID},
			models.RouteFailActualLRP:   &models.FailActualLRPRequest{ProcessGuid: "web", CellId: cellID, PlacementError: "no"},
			models.RouteRemoveActualLRP: &models.RemoveActualLRPRequest{ProcessGuid: "web", Presence: models.ActualLRP_ORDINARY, InstanceGuid: instanceGuid, CellId: cellID},
			models.RouteBulkReport:      &models.BulkReportRequest{CellId: cellID},
		} {
			resp := &models.PingResponse{}
			b.call(route, request, resp)
			Expect(resp.GetError().GetType()).To(Equal(models.Error_Unavailable), route)
			Expect(resp.GetError().GetMessage()).To(Equal("cells: this board does not store cells yet"))
		}
	})
})

// The cell side is served from a fake store for now (see fakeCellStore):
// these specs are about the handlers — what they pass on, what they
// answer, what they refuse — and run once per wire encoding.
var _ = Describe("The cell side", func() {
	for _, wire := range wires {
		Describe("with "+wire.name+" bodies", func() {
			var (
				fake *fakeCellStore
				b    *board
				lrp  *models.ActualLRP
			)

			BeforeEach(func() {
				lrp = &models.ActualLRP{
					ProcessGuid: "web", Index: 2, Presence: models.ActualLRP_ORDINARY, State: models.ActualLRP_CLAIMED,
					InstanceGuid: instanceGuid, CellId: cellID, DefinitionId: "v1",
					ModificationTag: &models.ModificationTag{Epoch: "e", Index: 3},
				}
				fake = &fakeCellStore{lrp: lrp}
				b = newBoardWith(storeWithFakeCells{DB: stores[testdb.SQLite], fakeCellStore: fake}, wire,
					handlers.WithPresenceTTL(45*time.Second))
			})

			Describe("registering a cell", func() {
				It("passes the cell and the board's presence TTL on, and tells the rep the TTL", func() {
					req := registerRequest()
					req.Cell.ExpiresAt = 12345
					req.Cell.Present = true
					req.Cell.Free = &models.CellCapacity{MemoryMb: 1}
					resp := &models.RegisterCellResponse{}
					b.call(models.RouteRegisterCell, req, resp)

					Expect(resp.GetError()).To(BeNil())
					Expect(resp.GetPresenceTtlMs()).To(BeEquivalentTo(45000))
					calls := fake.recorded()
					Expect(calls).To(HaveLen(1))
					Expect(calls[0].method).To(Equal("RegisterCell"))
					Expect(calls[0].ttl).To(Equal(45 * time.Second))
					want := registerRequest().GetCell()
					Expect(proto.Equal(calls[0].cell, want)).To(BeTrue(), "the fields the board owns are cleared: %v", calls[0].cell)
				})

				It("uses a 30 s presence TTL by default", func() {
					plain := newBoardWith(storeWithFakeCells{DB: stores[testdb.SQLite], fakeCellStore: fake}, wire)
					resp := &models.RegisterCellResponse{}
					plain.call(models.RouteRegisterCell, registerRequest(), resp)
					Expect(resp.GetPresenceTtlMs()).To(BeEquivalentTo(30000))
					Expect(fake.recorded()[0].ttl).To(Equal(handlers.DefaultPresenceTTL))
				})
			})

			It("lists the cells the store has", func() {
				fake.cells = []*models.Cell{
					{CellId: "a", Zone: "z1", Present: true, Free: &models.CellCapacity{MemoryMb: 10}},
					{CellId: "b", Zone: "z2"},
				}
				resp := &models.CellsResponse{}
				b.call(models.RouteCells, &models.CellsRequest{}, resp)
				Expect(resp.GetError()).To(BeNil())
				Expect(resp.GetCells()).To(HaveLen(2))
				Expect(proto.Equal(resp.GetCells()[0], fake.cells[0])).To(BeTrue())
				Expect(resp.GetCells()[1].GetCellId()).To(Equal("b"))
			})

			Describe("lifecycle calls", func() {
				ordinary := db.ActualLRPKey{ProcessGuid: "web", Index: 2, Presence: models.ActualLRP_ORDINARY}
				caller := db.Caller{InstanceGuid: instanceGuid, CellID: cellID}

				It("claims the ORDINARY row for the calling instance and answers the row", func() {
					resp := &models.ActualLRPLifecycleResponse{}
					b.call(models.RouteClaimActualLRP, &models.ClaimActualLRPRequest{ProcessGuid: "web", Index: 2, InstanceGuid: instanceGuid, CellId: cellID}, resp)
					Expect(resp.GetError()).To(BeNil())
					Expect(proto.Equal(resp.GetActualLrp(), lrp)).To(BeTrue())
					Expect(fake.recorded()).To(Equal([]storeCall{{method: "ClaimActualLRP", key: ordinary, caller: caller}}))
				})

				It("starts with the net info, routable unless the request says otherwise", func() {
					resp := &models.ActualLRPLifecycleResponse{}
					b.call(models.RouteStartActualLRP, &models.StartActualLRPRequest{ProcessGuid: "web", Index: 2, InstanceGuid: instanceGuid, CellId: cellID, NetInfo: netInfo()}, resp)
					Expect(resp.GetError()).To(BeNil())
					b.call(models.RouteStartActualLRP, &models.StartActualLRPRequest{ProcessGuid: "web", Index: 2, InstanceGuid: instanceGuid, CellId: cellID, NetInfo: netInfo(), Routable: proto.Bool(false)}, resp)
					b.call(models.RouteStartActualLRP, &models.StartActualLRPRequest{ProcessGuid: "web", Index: 2, InstanceGuid: instanceGuid, CellId: cellID, NetInfo: netInfo(), Routable: proto.Bool(true)}, resp)

					calls := fake.recorded()
					Expect(calls).To(HaveLen(3))
					Expect(calls[0].key).To(Equal(ordinary))
					Expect(calls[0].caller).To(Equal(caller))
					Expect(proto.Equal(calls[0].netInfo, netInfo())).To(BeTrue())
					Expect([]bool{calls[0].routable, calls[1].routable, calls[2].routable}).To(Equal([]bool{true, false, true}))
				})

				It("crashes with the reason", func() {
					resp := &models.ActualLRPLifecycleResponse{}
					b.call(models.RouteCrashActualLRP, &models.CrashActualLRPRequest{ProcessGuid: "web", Index: 2, InstanceGuid: instanceGuid, CellId: cellID, CrashReason: "exit status 1"}, resp)
					Expect(resp.GetError()).To(BeNil())
					Expect(fake.recorded()).To(Equal([]storeCall{{method: "CrashActualLRP", key: ordinary, caller: caller, reason: "exit status 1"}}))
				})

				It("fails a placement with the cell and the placement error", func() {
					resp := &models.ActualLRPLifecycleResponse{}
					b.call(models.RouteFailActualLRP, &models.FailActualLRPRequest{ProcessGuid: "web", Index: 2, CellId: cellID, PlacementError: "out of disk"}, resp)
					Expect(resp.GetError()).To(BeNil())
					Expect(fake.recorded()).To(Equal([]storeCall{{method: "FailActualLRP", key: ordinary, cellID: cellID, reason: "out of disk"}}))
				})

				It("removes the row of the presence named, answering no row", func() {
					resp := &models.ActualLRPLifecycleResponse{}
					b.call(models.RouteRemoveActualLRP, &models.RemoveActualLRPRequest{ProcessGuid: "web", Index: 2, Presence: models.ActualLRP_SUSPECT, InstanceGuid: instanceGuid, CellId: cellID}, resp)
					Expect(resp.GetError()).To(BeNil())
					Expect(resp.GetActualLrp()).To(BeNil())
					suspect := ordinary
					suspect.Presence = models.ActualLRP_SUSPECT
					Expect(fake.recorded()).To(Equal([]storeCall{{method: "RemoveActualLRP", key: suspect, caller: caller}}))
				})

				It("passes the store's typed refusal on, with no row", func() {
					fake.err = models.NewError(models.Error_InvalidStateTransition, "cannot move actual LRP web/2 from UNCLAIMED to CLAIMED: placed on cell %q, not %q", "cell-b", cellID)
					resp := &models.ActualLRPLifecycleResponse{}
					b.call(models.RouteClaimActualLRP, &models.ClaimActualLRPRequest{ProcessGuid: "web", Index: 2, InstanceGuid: instanceGuid, CellId: cellID}, resp)
					Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidStateTransition))
					Expect(resp.GetError().GetMessage()).To(ContainSubstring(`placed on cell "cell-b", not "cell-z1-0"`))
					Expect(resp.GetActualLrp()).To(BeNil())
					Expect(b.counter(models.RouteClaimActualLRP, "InvalidStateTransition")).To(BeEquivalentTo(1))

					fake.err = models.NewError(models.Error_ResourceNotFound, "actual LRP web/2 not found")
					b.call(models.RouteStartActualLRP, &models.StartActualLRPRequest{ProcessGuid: "web", Index: 2, InstanceGuid: instanceGuid, CellId: cellID, NetInfo: netInfo()}, resp)
					Expect(resp.GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
				})
			})

			It("bulk reports what the cell runs and answers what to stop and what to claim", func() {
				stop := reported("gone", 0, models.ActualLRP_RUNNING)
				assigned := &models.ActualLRP{ProcessGuid: "new", Index: 1, Presence: models.ActualLRP_ORDINARY, State: models.ActualLRP_UNCLAIMED, CellId: cellID}
				fake.report = &db.BulkReportResult{Stop: []*models.ReportedInstance{stop}, Assigned: []*models.ActualLRP{assigned}}

				instances := []*models.ReportedInstance{reported("web", 0, models.ActualLRP_RUNNING), reported("gone", 0, models.ActualLRP_RUNNING), reported("web", 1, models.ActualLRP_CLAIMED)}
				resp := &models.BulkReportResponse{}
				b.call(models.RouteBulkReport, &models.BulkReportRequest{CellId: cellID, Instances: instances}, resp)

				Expect(resp.GetError()).To(BeNil())
				Expect(resp.GetStop()).To(HaveLen(1))
				Expect(proto.Equal(resp.GetStop()[0], stop)).To(BeTrue())
				Expect(resp.GetAssigned()).To(HaveLen(1))
				Expect(proto.Equal(resp.GetAssigned()[0], assigned)).To(BeTrue())

				calls := fake.recorded()
				Expect(calls).To(HaveLen(1))
				Expect(calls[0].cellID).To(Equal(cellID))
				Expect(calls[0].instances).To(HaveLen(3))
				for i := range instances {
					Expect(proto.Equal(calls[0].instances[i], instances[i])).To(BeTrue(), "instance %d", i)
				}
			})

			DescribeTable("bad input is InvalidRequest naming the field, and the store is not called",
				func(route string, request proto.Message, field string) {
					resp := &models.ActualLRPLifecycleResponse{}
					b.call(route, request, resp)
					Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest), "error: %v", resp.GetError())
					Expect(resp.GetError().GetMessage()).To(namesField(field))
					Expect(fake.recorded()).To(BeEmpty())
					Expect(b.counter(route, "InvalidRequest")).To(BeEquivalentTo(1))
				},
				Entry("a registration without a cell", models.RouteRegisterCell, &models.RegisterCellRequest{}, "cell"),
				Entry("a registration with a relative rep_url", models.RouteRegisterCell, func() proto.Message {
					r := registerRequest()
					r.Cell.RepUrl = "/rep"
					return r
				}(), "cell.rep_url"),
				Entry("a registration without memory", models.RouteRegisterCell, func() proto.Message {
					r := registerRequest()
					r.Cell.Capacity.MemoryMb = 0
					return r
				}(), "cell.capacity.memory_mb"),
				Entry("a claim without an instance guid", models.RouteClaimActualLRP,
					&models.ClaimActualLRPRequest{ProcessGuid: "web", CellId: cellID}, "instance_guid"),
				Entry("a claim with a negative index", models.RouteClaimActualLRP,
					&models.ClaimActualLRPRequest{ProcessGuid: "web", Index: -1, InstanceGuid: instanceGuid, CellId: cellID}, "index"),
				Entry("a start without net info", models.RouteStartActualLRP,
					&models.StartActualLRPRequest{ProcessGuid: "web", InstanceGuid: instanceGuid, CellId: cellID}, "net_info"),
				Entry("a start with port 0", models.RouteStartActualLRP,
					&models.StartActualLRPRequest{ProcessGuid: "web", InstanceGuid: instanceGuid, CellId: cellID,
						NetInfo: &models.NetInfo{Address: "10.0.0.5", Ports: []*models.PortMapping{{ContainerPort: 8080}}}}, "net_info.ports[0].host_port"),
				Entry("a crash without a cell", models.RouteCrashActualLRP,
					&models.CrashActualLRPRequest{ProcessGuid: "web", InstanceGuid: instanceGuid}, "cell_id"),
				Entry("a fail without a placement error", models.RouteFailActualLRP,
					&models.FailActualLRPRequest{ProcessGuid: "web", CellId: cellID}, "placement_error"),
				Entry("a remove without a presence", models.RouteRemoveActualLRP,
					&models.RemoveActualLRPRequest{ProcessGuid: "web", InstanceGuid: instanceGuid, CellId: cellID}, "presence"),
				Entry("a report naming one row twice", models.RouteBulkReport,
					&models.BulkReportRequest{CellId: cellID, Instances: []*models.ReportedInstance{
						reported("web", 0, models.ActualLRP_RUNNING), reported("web", 0, models.ActualLRP_CLAIMED),
					}}, "instances[1]"),
				Entry("a report of an UNCLAIMED instance", models.RouteBulkReport,
					&models.BulkReportRequest{CellId: cellID, Instances: []*models.ReportedInstance{reported("web", 0, models.ActualLRP_UNCLAIMED)}},
					"instances[0].state"),
			)
		})
	}
})
