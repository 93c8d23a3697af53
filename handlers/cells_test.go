package handlers_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

const instanceGuid = "5d9c1a6e-6f0e-4b7a-9d3c-2b1f0e8a7c65"

func registerRequest(cellID string) *models.RegisterCellRequest {
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

// The cell side against the real store, on every dialect and in both
// wire encodings: what the handlers pass on, what they answer and what
// they refuse. The rules themselves (transitions, ownership) are the
// store's and have their own suite in db/sqldb; these specs show that a
// rep's calls reach them and their answers reach the rep.
var _ = Describe("The cell side", func() {
	for _, dialect := range testdb.MustDialects() {
		for _, wire := range wires {
			Describe("on "+dialect+" with "+wire.name+" bodies", func() {
				var (
					store *sqldb.SQLDB
					b     *board
					guid  string
					cell  string
				)

				BeforeEach(func() {
					store = stores[dialect]
					b = newBoardWith(store, wire, handlers.WithPresenceTTL(45*time.Second))
					guid = randomName("web")
					cell = randomName("cell")
				})

				register := func(b *board, cellID string) *models.RegisterCellResponse {
					GinkgoHelper()
					resp := &models.RegisterCellResponse{}
					b.call(models.RouteRegisterCell, registerRequest(cellID), resp)
					Expect(resp.GetError()).To(BeNil())
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

				Describe("registering a cell", func() {
					It("stores the cell for the board's presence TTL and tells the rep the TTL; the fields the board owns are its own", func() {
						req := registerRequest(cell)
						req.Cell.ExpiresAt = 12345
						req.Cell.Present = false
						req.Cell.Free = &models.CellCapacity{MemoryMb: 1}
						before := time.Now()
						resp := &models.RegisterCellResponse{}
						b.call(models.RouteRegisterCell, req, resp)
						after := time.Now()

						Expect(resp.GetError()).To(BeNil())
						Expect(resp.GetPresenceTtlMs()).To(BeEquivalentTo(45000))
						stored := cellNamed(cell)
						Expect(stored).NotTo(BeNil())
						Expect(stored.GetPresent()).To(BeTrue())
						Expect(stored.GetExpiresAt()).To(BeNumerically(">=", before.Add(45*time.Second).UnixNano()))
						Expect(stored.GetExpiresAt()).To(BeNumerically("<=", after.Add(45*time.Second).UnixNano()))
						Expect(proto.Equal(stored.GetFree(), registerRequest(cell).GetCell().GetCapacity())).To(BeTrue(), "free: %v", stored.GetFree())
						Expect(stored.GetZone()).To(Equal("z1"))
						Expect(stored.GetPlacementTags()).To(Equal([]string{"linux"}))
					})

					It("keeps as many placement tags as the API allows, of the longest kind, with multi-byte characters, on every database", func() {
						req := registerRequest(cell)
						req.Cell.PlacementTags = nil
						for i := range models.MaxPlacementTags {
							tag := fmt.Sprintf("tag-%02d-", i)
							req.Cell.PlacementTags = append(req.Cell.PlacementTags, tag+strings.Repeat("é", (models.MaxPlacementTagBytes-len(tag))/2))
						}
						resp := &models.RegisterCellResponse{}
						b.call(models.RouteRegisterCell, req, resp)
						Expect(resp.GetError()).To(BeNil())
						Expect(cellNamed(cell).GetPlacementTags()).To(Equal(req.Cell.PlacementTags))
					})

					It("uses a 30 s presence TTL by default", func() {
						plain := newBoardWith(store, wire)
						before := time.Now()
						Expect(register(plain, cell).GetPresenceTtlMs()).To(BeEquivalentTo(30000))
						Expect(cellNamed(cell).GetExpiresAt()).To(BeNumerically("<", before.Add(31*time.Second).UnixNano()))
					})
				})

				Describe("an instance placed on the calling cell", func() {
					var key models.ActualLRPKey

					BeforeEach(func() {
						register(b, cell)
						b.mustDesire(newLRP(guid, randomName("domain"), 1))
						key = models.ActualLRPKey{ProcessGuid: guid, Index: 0, Presence: models.ActualLRP_ORDINARY}
						place(store, key, cell)
					})

					lifecycle := func(route string, req proto.Message) *models.ActualLRPLifecycleResponse {
						GinkgoHelper()
						resp := &models.ActualLRPLifecycleResponse{}
						b.call(route, req, resp)
						return resp
					}
					claim := func() *models.ActualLRPLifecycleResponse {
						return lifecycle(models.RouteClaimActualLRP, &models.ClaimActualLRPRequest{ProcessGuid: guid, InstanceGuid: instanceGuid, CellId: cell})
					}
					start := func(routable *bool) *models.ActualLRPLifecycleResponse {
						return lifecycle(models.RouteStartActualLRP, &models.StartActualLRPRequest{ProcessGuid: guid, InstanceGuid: instanceGuid, CellId: cell, NetInfo: netInfo(), Routable: routable})
					}

					It("is claimed, started with its net info, routable unless the start says otherwise, and the answer is the row", func() {
						claimed := claim()
						Expect(claimed.GetError()).To(BeNil())
						Expect(claimed.GetActualLrp().GetState()).To(Equal(models.ActualLRP_CLAIMED))
						Expect(claimed.GetActualLrp().GetInstanceGuid()).To(Equal(instanceGuid))
						Expect(cellNamed(cell).GetFree().GetMemoryMb()).To(BeEquivalentTo(4096-256), "the instance's memory is taken")

						started := start(nil)
						Expect(started.GetError()).To(BeNil())
						Expect(started.GetActualLrp().GetState()).To(Equal(models.ActualLRP_RUNNING))
						Expect(proto.Equal(started.GetActualLrp().GetNetInfo(), netInfo())).To(BeTrue())
						Expect(started.GetActualLrp().GetRoutable()).To(BeTrue())
						Expect(start(proto.Bool(false)).GetActualLrp().GetRoutable()).To(BeFalse())
						Expect(start(proto.Bool(true)).GetActualLrp().GetRoutable()).To(BeTrue())

						rows := b.actualLRPs(&models.ActualLRPsRequest{ProcessGuid: guid})
						Expect(rows).To(HaveLen(1))
						Expect(proto.Equal(rows[0], start(proto.Bool(true)).GetActualLrp())).To(BeTrue())
					})

					It("crashes with its reason", func() {
						Expect(claim().GetError()).To(BeNil())
						crashed := lifecycle(models.RouteCrashActualLRP, &models.CrashActualLRPRequest{ProcessGuid: guid, InstanceGuid: instanceGuid, CellId: cell, CrashReason: "exit status 1"})
						Expect(crashed.GetError()).To(BeNil())
						Expect(crashed.GetActualLrp().GetState()).To(Equal(models.ActualLRP_CRASHED))
						Expect(crashed.GetActualLrp().GetCrashCount()).To(BeEquivalentTo(1))
						Expect(crashed.GetActualLrp().GetCrashReason()).To(Equal("exit status 1"))
					})

					It("fails its placement: unplaced again, with the placement error", func() {
						failed := lifecycle(models.RouteFailActualLRP, &models.FailActualLRPRequest{ProcessGuid: guid, CellId: cell, PlacementError: "out of disk"})
						Expect(failed.GetError()).To(BeNil())
						Expect(failed.GetActualLrp().GetState()).To(Equal(models.ActualLRP_UNCLAIMED))
						Expect(failed.GetActualLrp().GetCellId()).To(BeEmpty())
						Expect(failed.GetActualLrp().GetPlacementError()).To(Equal("out of disk"))
					})

					It("is removed by the instance that owns it, answering no row", func() {
						Expect(claim().GetError()).To(BeNil())
						removed := lifecycle(models.RouteRemoveActualLRP, &models.RemoveActualLRPRequest{ProcessGuid: guid, Presence: models.ActualLRP_ORDINARY, InstanceGuid: instanceGuid, CellId: cell})
						Expect(removed.GetError()).To(BeNil())
						Expect(removed.GetActualLrp()).To(BeNil())
						Expect(b.actualLRPs(&models.ActualLRPsRequest{ProcessGuid: guid})).To(BeEmpty())
					})

					It("refuses another cell with a typed error naming both cells, and changes nothing", func() {
						other := randomName("cell")
						register(b, other)
						before := b.snapshot(guid)
						refused := lifecycle(models.RouteClaimActualLRP, &models.ClaimActualLRPRequest{ProcessGuid: guid, InstanceGuid: instanceGuid, CellId: other})
						Expect(refused.GetError().GetType()).To(Equal(models.Error_InvalidStateTransition))
						Expect(refused.GetError().GetMessage()).To(SatisfyAll(ContainSubstring(cell), ContainSubstring(other)))
						Expect(refused.GetActualLrp()).To(BeNil())
						Expect(b.counter(models.RouteClaimActualLRP, "InvalidStateTransition")).To(BeEquivalentTo(1))
						b.expectUnchanged(guid, before)

						missing := lifecycle(models.RouteStartActualLRP, &models.StartActualLRPRequest{ProcessGuid: randomName("gone"), InstanceGuid: instanceGuid, CellId: cell, NetInfo: netInfo()})
						Expect(missing.GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
					})

					It("takes a batch of occupancy changes for the caller's RUNNING row, and refuses one naming another cell's instance", func() {
						Expect(claim().GetError()).To(BeNil())
						Expect(start(nil).GetError()).To(BeNil())
						occupancy := func(cellID string, occupied bool) *models.ReportOccupancyResponse {
							GinkgoHelper()
							resp := &models.ReportOccupancyResponse{}
							b.call(models.RouteReportOccupancy, &models.ReportOccupancyRequest{CellId: cellID, Changes: []*models.OccupancyChange{
								{ProcessGuid: guid, Presence: models.ActualLRP_ORDINARY, InstanceGuid: instanceGuid, Occupied: occupied},
								{ProcessGuid: randomName("gone"), Presence: models.ActualLRP_ORDINARY, InstanceGuid: instanceGuid, Occupied: occupied},
							}}, resp)
							return resp
						}
						other := randomName("cell")
						register(b, other)
						before := b.snapshot(guid)
						refused := occupancy(other, true)
						Expect(refused.GetError().GetType()).To(Equal(models.Error_InvalidStateTransition), "issue 26: it answered success")
						Expect(refused.GetError().GetMessage()).To(SatisfyAll(HavePrefix("changes[0]: "), ContainSubstring(cell), ContainSubstring(other)))
						Expect(refused.GetApplied()).To(BeZero())
						b.expectUnchanged(guid, before)

						Expect(occupancy(cell, true).GetApplied()).To(BeEquivalentTo(1))
						Expect(b.actualLRPs(&models.ActualLRPsRequest{ProcessGuid: guid})[0].GetOccupied()).To(BeTrue())
						Expect(occupancy(cell, true).GetApplied()).To(BeZero(), "a repeat changes nothing")
						Expect(b.counter(models.RouteReportOccupancy, "success")).To(BeEquivalentTo(2))
						Expect(b.counter(models.RouteReportOccupancy, "InvalidStateTransition")).To(BeEquivalentTo(1))
					})

					It("refuses an evacuation naming another cell's instance, and changes nothing", func() {
						Expect(claim().GetError()).To(BeNil())
						Expect(start(nil).GetError()).To(BeNil())
						other := randomName("cell")
						register(b, other)
						before := b.snapshot(guid)
						resp := &models.EvacuateActualLRPResponse{}
						b.call(models.RouteEvacuateActualLRP, &models.EvacuateActualLRPRequest{ProcessGuid: guid, InstanceGuid: instanceGuid, CellId: other}, resp)
						Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidStateTransition), "issue 26: it answered success")
						Expect(resp.GetError().GetMessage()).To(SatisfyAll(ContainSubstring(instanceGuid), ContainSubstring(cell), ContainSubstring(other)))
						Expect(resp.GetKeepRunning()).To(BeFalse())
						b.expectUnchanged(guid, before)
						Expect(b.counter(models.RouteEvacuateActualLRP, "InvalidStateTransition")).To(BeEquivalentTo(1))
					})

					It("comes back in a bulk report as assigned, and what the board has no row for as stop", func() {
						gone := reported(randomName("gone"), 0, models.ActualLRP_RUNNING)
						resp := &models.BulkReportResponse{}
						b.call(models.RouteBulkReport, &models.BulkReportRequest{CellId: cell, Instances: []*models.ReportedInstance{gone}}, resp)

						Expect(resp.GetError()).To(BeNil())
						Expect(resp.GetStop()).To(HaveLen(1))
						Expect(proto.Equal(resp.GetStop()[0], gone)).To(BeTrue())
						Expect(resp.GetAssigned()).To(HaveLen(1))
						Expect(resp.GetAssigned()[0].GetProcessGuid()).To(Equal(guid))
						Expect(resp.GetAssigned()[0].GetCellId()).To(Equal(cell))
					})
				})

				DescribeTable("bad input is InvalidRequest naming the field, and nothing changes",
					func(route string, request func(guid, cell string) proto.Message, field string) {
						register(b, cell)
						b.mustDesire(newLRP(guid, randomName("domain"), 1))
						place(store, models.ActualLRPKey{ProcessGuid: guid, Presence: models.ActualLRP_ORDINARY}, cell)
						before, cellBefore := b.snapshot(guid), cellNamed(cell)

						resp := &models.ActualLRPLifecycleResponse{}
						b.call(route, request(guid, cell), resp)
						Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest), "error: %v", resp.GetError())
						Expect(resp.GetError().GetMessage()).To(namesField(field))
						Expect(b.counter(route, "InvalidRequest")).To(BeEquivalentTo(1))
						b.expectUnchanged(guid, before)
						Expect(proto.Equal(cellNamed(cell), cellBefore)).To(BeTrue(), "the cell changed")
					},
					Entry("a registration without a cell", models.RouteRegisterCell,
						func(_, _ string) proto.Message { return &models.RegisterCellRequest{} }, "cell"),
					Entry("a registration with a relative rep_url", models.RouteRegisterCell, func(_, cell string) proto.Message {
						r := registerRequest(cell)
						r.Cell.RepUrl = "/rep"
						return r
					}, "cell.rep_url"),
					Entry("a registration without memory", models.RouteRegisterCell, func(_, cell string) proto.Message {
						r := registerRequest(cell)
						r.Cell.Capacity.MemoryMb = 0
						return r
					}, "cell.capacity.memory_mb"),
					Entry("a claim without an instance guid", models.RouteClaimActualLRP, func(guid, cell string) proto.Message {
						return &models.ClaimActualLRPRequest{ProcessGuid: guid, CellId: cell}
					}, "instance_guid"),
					Entry("a claim with a negative index", models.RouteClaimActualLRP, func(guid, cell string) proto.Message {
						return &models.ClaimActualLRPRequest{ProcessGuid: guid, Index: -1, InstanceGuid: instanceGuid, CellId: cell}
					}, "index"),
					Entry("a start without net info", models.RouteStartActualLRP, func(guid, cell string) proto.Message {
						return &models.StartActualLRPRequest{ProcessGuid: guid, InstanceGuid: instanceGuid, CellId: cell}
					}, "net_info"),
					Entry("a start with port 0", models.RouteStartActualLRP, func(guid, cell string) proto.Message {
						return &models.StartActualLRPRequest{ProcessGuid: guid, InstanceGuid: instanceGuid, CellId: cell,
							NetInfo: &models.NetInfo{Address: "10.0.0.5", Ports: []*models.PortMapping{{ContainerPort: 8080}}}}
					}, "net_info.ports[0].host_port"),
					Entry("a crash without a cell", models.RouteCrashActualLRP, func(guid, _ string) proto.Message {
						return &models.CrashActualLRPRequest{ProcessGuid: guid, InstanceGuid: instanceGuid}
					}, "cell_id"),
					Entry("a fail without a placement error", models.RouteFailActualLRP, func(guid, cell string) proto.Message {
						return &models.FailActualLRPRequest{ProcessGuid: guid, CellId: cell}
					}, "placement_error"),
					Entry("a remove without a presence", models.RouteRemoveActualLRP, func(guid, cell string) proto.Message {
						return &models.RemoveActualLRPRequest{ProcessGuid: guid, InstanceGuid: instanceGuid, CellId: cell}
					}, "presence"),
					Entry("a report naming one row twice", models.RouteBulkReport, func(guid, cell string) proto.Message {
						return &models.BulkReportRequest{CellId: cell, Instances: []*models.ReportedInstance{
							reported(guid, 0, models.ActualLRP_RUNNING), reported(guid, 0, models.ActualLRP_CLAIMED),
						}}
					}, "instances[1]"),
					Entry("a report of an UNCLAIMED instance", models.RouteBulkReport, func(guid, cell string) proto.Message {
						return &models.BulkReportRequest{CellId: cell, Instances: []*models.ReportedInstance{reported(guid, 0, models.ActualLRP_UNCLAIMED)}}
					}, "instances[0].state"),
					Entry("an occupancy change without an instance guid", models.RouteReportOccupancy, func(guid, cell string) proto.Message {
						return &models.ReportOccupancyRequest{CellId: cell, Changes: []*models.OccupancyChange{
							{ProcessGuid: guid, Presence: models.ActualLRP_ORDINARY, InstanceGuid: instanceGuid, Occupied: true},
							{ProcessGuid: guid, Presence: models.ActualLRP_ORDINARY, Occupied: true},
						}}
					}, "changes[1].instance_guid"),
					Entry("an occupancy report without changes", models.RouteReportOccupancy, func(guid, cell string) proto.Message {
						return &models.ReportOccupancyRequest{CellId: cell}
					}, "changes"),
					Entry("a health report without entries", models.RouteReportHealth, func(guid, cell string) proto.Message {
						return &models.ReportHealthRequest{CellId: cell}
					}, "health"),
					Entry("a health report with latency buckets short of +Inf", models.RouteReportHealth, func(guid, cell string) proto.Message {
						r := healthReport(cell, guid)
						r.Health[0].LatencyBucketCounts = r.Health[0].LatencyBucketCounts[:12]
						return r
					}, "health[0].latency_bucket_counts"),
					Entry("a health report with more failures than checks", models.RouteReportHealth, func(guid, cell string) proto.Message {
						r := healthReport(cell, guid)
						r.Health[0].CheckFailures = 9
						return r
					}, "health[0].check_failures"),
					Entry("a health report with a negative memory count", models.RouteReportHealth, func(guid, cell string) proto.Message {
						r := healthReport(cell, guid)
						r.Health[0].MemoryBucketCounts[3] = -1
						return r
					}, "health[0].memory_bucket_counts[3]"),
					Entry("a health report with an instance without its guid", models.RouteReportHealth, func(guid, cell string) proto.Message {
						r := healthReport(cell, guid)
						r.Health[0].Instances[1].InstanceGuid = ""
						return r
					}, "health[0].instances[1].instance_guid"),
				)
			})
		}
	}
})

// place puts the UNCLAIMED row at key on cellID, as a convergence pass
// would.
func place(store *sqldb.SQLDB, key models.ActualLRPKey, cellID string) {
	GinkgoHelper()
	ctx := context.Background()
	rows, err := store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: key.ProcessGuid, Index: &key.Index})
	Expect(err).NotTo(HaveOccurred())
	Expect(rows).To(HaveLen(1))
	version := convergence.RowVersion{Key: key, State: rows[0].GetState(), ModificationIndex: int64(rows[0].GetModificationTag().GetIndex())}
	result, err := store.ApplyConvergence(ctx, &convergence.ConvergenceWrites{Place: []convergence.Placement{{Row: version, CellID: cellID}}})
	Expect(err).NotTo(HaveOccurred())
	Expect(result.Applied).To(Equal(1))
}
