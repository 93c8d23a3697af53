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

var _ = Describe("Convergence triggers", func() {
	It("name the LRP after each successful desire, update and remove, after a cell's crash, fail and remove, and after a bulk or occupancy report that changes an instance's occupancy; never after a refusal", func() {
		var (
			mu        sync.Mutex
			triggered []string
		)
		taken := func() []string {
			mu.Lock()
			defer mu.Unlock()
			out := triggered
			triggered = nil
			return out
		}
		store := stores[testdb.SQLite]
		b := newBoardWith(store, jsonWire, handlers.WithConvergenceTrigger(func(guid string) {
			mu.Lock()
			defer mu.Unlock()
			triggered = append(triggered, guid)
		}))
		guid, domain, cell := randomName("web"), randomName("domain"), randomName("cell")

		b.mustDesire(newLRP(guid, domain, 2))
		Expect(taken()).To(Equal([]string{guid}))
		Expect(b.desire(newLRP(guid, domain, 2)).GetError().GetType()).To(Equal(models.Error_ResourceExists))
		Expect(b.update(guid, &models.DesiredLRPUpdate{Instances: proto.Int32(3)}).GetError()).To(BeNil())
		Expect(b.update(randomName("missing"), &models.DesiredLRPUpdate{Instances: proto.Int32(3)}).GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
		Expect(taken()).To(Equal([]string{guid}), "the refused desire and update triggered nothing")

		register := &models.RegisterCellResponse{}
		b.call(models.RouteRegisterCell, registerRequest(cell), register)
		Expect(register.GetError()).To(BeNil())
		lifecycle := func(route string, req proto.Message) {
			GinkgoHelper()
			resp := &models.ActualLRPLifecycleResponse{}
			b.call(route, req, resp)
			Expect(resp.GetError()).To(BeNil())
		}
		first := models.ActualLRPKey{ProcessGuid: guid, Index: 0, Presence: models.ActualLRP_ORDINARY}
		second := models.ActualLRPKey{ProcessGuid: guid, Index: 1, Presence: models.ActualLRP_ORDINARY}

		place(store, first, cell)
		lifecycle(models.RouteClaimActualLRP, &models.ClaimActualLRPRequest{ProcessGuid: guid, InstanceGuid: instanceGuid, CellId: cell})
		lifecycle(models.RouteStartActualLRP, &models.StartActualLRPRequest{ProcessGuid: guid, InstanceGuid: instanceGuid, CellId: cell, NetInfo: netInfo()})
		Expect(taken()).To(BeEmpty(), "claims and starts leave nothing to converge")
		running := b.mustGet(guid)
		report := func(occupied bool) {
			GinkgoHelper()
			resp := &models.BulkReportResponse{}
			b.call(models.RouteBulkReport, &models.BulkReportRequest{CellId: cell, Instances: []*models.ReportedInstance{{
				ProcessGuid: guid, Presence: models.ActualLRP_ORDINARY, InstanceGuid: instanceGuid,
				DefinitionId: running.GetActiveDefinitionId(), State: models.ActualLRP_RUNNING, NetInfo: netInfo(), Routable: true, Occupied: occupied,
			}}}, resp)
			Expect(resp.GetError()).To(BeNil())
		}
		report(false)
		Expect(taken()).To(BeEmpty(), "a report that changes nothing leaves nothing to converge")
		report(true)
		Expect(taken()).To(Equal([]string{guid}), "an occupancy change is worth a pass: an autoscaled count follows it")
		report(true)
		Expect(taken()).To(BeEmpty())
		occupancy := func(occupied bool) int32 {
			GinkgoHelper()
			resp := &models.ReportOccupancyResponse{}
			b.call(models.RouteReportOccupancy, &models.ReportOccupancyRequest{CellId: cell, Changes: []*models.OccupancyChange{{
				ProcessGuid: guid, Presence: models.ActualLRP_ORDINARY, InstanceGuid: instanceGuid, Occupied: occupied,
			}}}, resp)
			Expect(resp.GetError()).To(BeNil())
			return resp.GetApplied()
		}
		Expect(occupancy(true)).To(BeZero())
		Expect(taken()).To(BeEmpty(), "an occupancy report that changes nothing leaves nothing to converge")
		Expect(occupancy(false)).To(BeEquivalentTo(1))
		Expect(taken()).To(Equal([]string{guid}), "so is an occupancy report's change")
		refusedOccupancy := &models.ReportOccupancyResponse{}
		b.call(models.RouteReportOccupancy, &models.ReportOccupancyRequest{CellId: cell}, refusedOccupancy)
		Expect(refusedOccupancy.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
		Expect(refusedOccupancy.GetError().GetMessage()).To(Equal("changes: required: at least one change"))
		Expect(taken()).To(BeEmpty())
		lifecycle(models.RouteCrashActualLRP, &models.CrashActualLRPRequest{ProcessGuid: guid, InstanceGuid: instanceGuid, CellId: cell, CrashReason: "exit status 1"})
		Expect(taken()).To(Equal([]string{guid}))

		place(store, second, cell)
		lifecycle(models.RouteFailActualLRP, &models.FailActualLRPRequest{ProcessGuid: guid, Index: 1, CellId: cell, PlacementError: "out of disk"})
		Expect(taken()).To(Equal([]string{guid}))
		place(store, second, cell)
		lifecycle(models.RouteClaimActualLRP, &models.ClaimActualLRPRequest{ProcessGuid: guid, Index: 1, InstanceGuid: instanceGuid, CellId: cell})
		lifecycle(models.RouteRemoveActualLRP, &models.RemoveActualLRPRequest{ProcessGuid: guid, Index: 1, Presence: models.ActualLRP_ORDINARY, InstanceGuid: instanceGuid, CellId: cell})
		Expect(taken()).To(Equal([]string{guid}))

		refused := &models.ActualLRPLifecycleResponse{}
		b.call(models.RouteClaimActualLRP, &models.ClaimActualLRPRequest{ProcessGuid: guid, Index: 2, InstanceGuid: instanceGuid, CellId: cell}, refused)
		Expect(refused.GetError()).NotTo(BeNil())
		Expect(taken()).To(BeEmpty())

		removed := &models.RemoveDesiredLRPResponse{}
		b.call(models.RouteRemoveDesiredLRP, &models.RemoveDesiredLRPRequest{ProcessGuid: guid}, removed)
		Expect(removed.GetError()).To(BeNil())
		b.call(models.RouteRemoveDesiredLRP, &models.RemoveDesiredLRPRequest{ProcessGuid: guid}, removed)
		Expect(removed.GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
		Expect(taken()).To(Equal([]string{guid}), "the second remove found nothing and triggered nothing")
	})
})
