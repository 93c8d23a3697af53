package handlers_test

import (
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// Draining a cell and evacuating its instances, through the HTTP API on
// every dialect and in both wire encodings. The rules are the store's
// (db/sqldb/evacuation_test.go); these specs show the calls reach it and
// the answers reach the caller.
var _ = Describe("Draining and evacuation", func() {
	for _, dialect := range testdb.MustDialects() {
		for _, wire := range wires {
			Describe("on "+dialect+" with "+wire.name+" bodies", func() {
				var (
					b         *board
					guid      string
					cell      string
					mu        sync.Mutex
					triggered []string
				)

				BeforeEach(func() {
					store := stores[dialect]
					mu.Lock()
					triggered = nil
					mu.Unlock()
					b = newBoardWith(store, wire, handlers.WithConvergenceTrigger(func(guid string) {
						mu.Lock()
						defer mu.Unlock()
						triggered = append(triggered, guid)
					}))
					guid = randomName("web")
					cell = randomName("cell")
				})
				taken := func() []string {
					mu.Lock()
					defer mu.Unlock()
					out := triggered
					triggered = nil
					return out
				}
				register := func(req *models.RegisterCellRequest) *models.RegisterCellResponse {
					GinkgoHelper()
					resp := &models.RegisterCellResponse{}
					b.call(models.RouteRegisterCell, req, resp)
					Expect(resp.GetError()).To(BeNil())
					return resp
				}
				drain := func(cellID string) *models.DrainCellResponse {
					GinkgoHelper()
					resp := &models.DrainCellResponse{}
					b.call(models.RouteDrainCell, &models.DrainCellRequest{CellId: cellID}, resp)
					return resp
				}
				cellNamed := func(id string) *models.Cell {
					GinkgoHelper()
					resp := &models.CellsResponse{}
					b.call(models.RouteCells, &models.CellsRequest{}, resp)
					Expect(resp.GetError()).To(BeNil())
					for _, c := range resp.GetCells() {
						if c.GetCellId() == id {
							return c
						}
					}
					return nil
				}
				rowOf := func(presence models.ActualLRP_Presence) *models.ActualLRP {
					GinkgoHelper()
					for _, lrp := range b.actualLRPs(&models.ActualLRPsRequest{ProcessGuid: guid}) {
						if lrp.GetPresence() == presence {
							return lrp
						}
					}
					return nil
				}

				It("drains a cell; heartbeats say so until the rep starts afresh", func() {
					Expect(register(registerRequest(cell)).GetDraining()).To(BeFalse())
					Expect(drain(cell).GetError()).To(BeNil())
					Expect(cellNamed(cell).GetDraining()).To(BeTrue())
					Expect(cellNamed(cell).GetPresent()).To(BeTrue())

					Expect(register(registerRequest(cell)).GetDraining()).To(BeTrue(), "a heartbeat keeps the flag")
					asked := registerRequest(cell)
					asked.Cell.Draining = false
					Expect(register(asked).GetDraining()).To(BeTrue(), "draining in the request is the board's, not the rep's")

					fresh := registerRequest(cell)
					fresh.FreshStart = true
					Expect(register(fresh).GetDraining()).To(BeFalse())
					Expect(cellNamed(cell).GetDraining()).To(BeFalse())
					Expect(taken()).To(BeEmpty(), "draining needs no convergence pass of its own")
				})

				It("answers ResourceNotFound for an unknown cell and InvalidRequest without a cell id", func() {
					Expect(drain(randomName("gone")).GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
					refused := drain("")
					Expect(refused.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
					Expect(refused.GetError().GetMessage()).To(namesField("cell_id"))
				})

				It("evacuates a running instance: kept as EVACUATING, its index placed anew at once; the rep then marks it unroutable and removes it", func() {
					register(registerRequest(cell))
					b.mustDesire(newLRP(guid, randomName("domain"), 1))
					place(stores[dialect], models.ActualLRPKey{ProcessGuid: guid, Presence: models.ActualLRP_ORDINARY}, cell)
					lifecycle := func(route string, req proto.Message) *models.ActualLRPLifecycleResponse {
						GinkgoHelper()
						resp := &models.ActualLRPLifecycleResponse{}
						b.call(route, req, resp)
						Expect(resp.GetError()).To(BeNil())
						return resp
					}
					lifecycle(models.RouteClaimActualLRP, &models.ClaimActualLRPRequest{ProcessGuid: guid, InstanceGuid: instanceGuid, CellId: cell})
					lifecycle(models.RouteStartActualLRP, &models.StartActualLRPRequest{ProcessGuid: guid, InstanceGuid: instanceGuid, CellId: cell, NetInfo: netInfo()})
					Expect(drain(cell).GetError()).To(BeNil())
					taken()

					evacuate := &models.EvacuateActualLRPRequest{ProcessGuid: guid, InstanceGuid: instanceGuid, CellId: cell}
					resp := &models.EvacuateActualLRPResponse{}
					b.call(models.RouteEvacuateActualLRP, evacuate, resp)
					Expect(resp.GetError()).To(BeNil())
					Expect(resp.GetKeepRunning()).To(BeTrue())
					Expect(taken()).To(Equal([]string{guid}), "the replacement is placed at once")

					evacuating := rowOf(models.ActualLRP_EVACUATING)
					Expect(evacuating.GetState()).To(Equal(models.ActualLRP_RUNNING))
					Expect(evacuating.GetCellId()).To(Equal(cell))
					Expect(evacuating.GetRoutable()).To(BeTrue())
					Expect(rowOf(models.ActualLRP_ORDINARY).GetState()).To(Equal(models.ActualLRP_UNCLAIMED))
					Expect(rowOf(models.ActualLRP_ORDINARY).GetCellId()).To(BeEmpty())

					unroutable := lifecycle(models.RouteStartActualLRP, &models.StartActualLRPRequest{
						ProcessGuid: guid, InstanceGuid: instanceGuid, CellId: cell, NetInfo: netInfo(),
						Routable: proto.Bool(false), Presence: models.ActualLRP_EVACUATING,
					})
					Expect(unroutable.GetActualLrp().GetPresence()).To(Equal(models.ActualLRP_EVACUATING))
					Expect(unroutable.GetActualLrp().GetRoutable()).To(BeFalse())
					Expect(rowOf(models.ActualLRP_EVACUATING).GetRoutable()).To(BeFalse())

					lifecycle(models.RouteRemoveActualLRP, &models.RemoveActualLRPRequest{ProcessGuid: guid, Presence: models.ActualLRP_EVACUATING, InstanceGuid: instanceGuid, CellId: cell})
					Expect(rowOf(models.ActualLRP_EVACUATING)).To(BeNil())

					b.call(models.RouteEvacuateActualLRP, evacuate, resp)
					Expect(resp.GetError()).To(BeNil())
					Expect(resp.GetKeepRunning()).To(BeFalse(), "nothing of it is left to keep")
				})

				DescribeTable("bad input is InvalidRequest naming the field",
					func(route string, request proto.Message, response interface {
						proto.Message
						GetError() *models.Error
					}, field string) {
						b.call(route, request, response)
						Expect(response.GetError().GetType()).To(Equal(models.Error_InvalidRequest), "error: %v", response.GetError())
						Expect(response.GetError().GetMessage()).To(namesField(field))
					},
					Entry("an evacuation without an instance guid", models.RouteEvacuateActualLRP,
						&models.EvacuateActualLRPRequest{ProcessGuid: "web", CellId: "cell-1"}, &models.EvacuateActualLRPResponse{}, "instance_guid"),
					Entry("an evacuation without a cell", models.RouteEvacuateActualLRP,
						&models.EvacuateActualLRPRequest{ProcessGuid: "web", InstanceGuid: instanceGuid}, &models.EvacuateActualLRPResponse{}, "cell_id"),
					Entry("an evacuation of a negative index", models.RouteEvacuateActualLRP,
						&models.EvacuateActualLRPRequest{ProcessGuid: "web", Index: -1, InstanceGuid: instanceGuid, CellId: "cell-1"}, &models.EvacuateActualLRPResponse{}, "index"),
					Entry("a start with an unknown presence", models.RouteStartActualLRP,
						&models.StartActualLRPRequest{ProcessGuid: "web", InstanceGuid: instanceGuid, CellId: "cell-1", NetInfo: netInfo(), Presence: 9},
						&models.ActualLRPLifecycleResponse{}, "presence"),
				)
			})
		}
	}
})
