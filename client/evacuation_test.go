package client_test

import (
	"context"
	"database/sql"
	"net/http/httptest"
	"time"

	"code.cloudfoundry.org/lager/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Draining and evacuation against a real board", func() {
	const cellID = "cell-z1-0"
	var (
		ctx    context.Context
		store  *sqldb.SQLDB
		api    *client.Client
		rep    *client.CellClient
		cell   *models.Cell
		placed client.Instance
	)

	BeforeEach(func() {
		ctx = context.Background()
		database, err := testdb.Create(testdb.SQLite)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(database.Drop)
		conn, err := sqldb.Open(ctx, database.Dialect, database.DSN)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(conn *sql.DB) { Expect(conn.Close()).To(Succeed()) }, conn)
		Expect(migrations.Up(ctx, conn, database.Dialect)).To(Succeed())
		store = sqldb.New(conn, database.Dialect)
		server := httptest.NewServer(handlers.New(lager.NewLogger("client-test"), store, prometheus.NewRegistry()))
		DeferCleanup(server.Close)

		api = client.New(server.URL)
		rep = client.NewCellClient(server.URL, cellID)
		cell = &models.Cell{
			CellId: cellID, RepUrl: "http://127.0.0.1:1800", Zone: "z1",
			Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Instances: 10},
		}
		placed = client.Instance{ProcessGuid: "hello", Index: 0, InstanceGuid: "ig-0"}
	})

	cellListed := func() *models.Cell {
		GinkgoHelper()
		cells, err := api.Cells(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(cells).To(HaveLen(1))
		return cells[0]
	}
	// budget is hello's disruption budget: index 1 never runs here, so the
	// default (0) would hold index 0's hand-over; "100%" lets it go.
	budget := "100%"
	// runPlaced desires hello, places index 0 on the cell as convergence
	// would, and claims and starts it through the rep's client.
	runPlaced := func() *models.NetInfo {
		GinkgoHelper()
		lrp := helloLRP("hello")
		lrp.DisruptionBudget = &models.DisruptionBudget{MaxUnavailable: budget}
		_, err := api.DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		rows, err := store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: "hello", Index: proto.Int32(0)})
		Expect(err).NotTo(HaveOccurred())
		_, err = store.ApplyConvergence(ctx, &convergence.ConvergenceWrites{Place: []convergence.Placement{{
			Row: convergence.RowVersion{
				Key:   models.ActualLRPKey{ProcessGuid: "hello", Index: 0, Presence: models.ActualLRP_ORDINARY},
				State: rows[0].GetState(), ModificationIndex: int64(rows[0].GetModificationTag().GetIndex()),
			},
			CellID: cellID,
		}}})
		Expect(err).NotTo(HaveOccurred())
		_, err = rep.ClaimActualLRP(ctx, placed)
		Expect(err).NotTo(HaveOccurred())
		netInfo := &models.NetInfo{Address: "127.0.0.1", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}
		_, err = rep.StartActualLRP(ctx, placed, netInfo, true)
		Expect(err).NotTo(HaveOccurred())
		return netInfo
	}
	rowOf := func(presence models.ActualLRP_Presence) *models.ActualLRP {
		GinkgoHelper()
		rows, err := api.ActualLRPs(ctx, client.ActualLRPFilter{ProcessGuid: "hello", Index: proto.Int32(0)})
		Expect(err).NotTo(HaveOccurred())
		for _, row := range rows {
			if row.GetPresence() == presence {
				return row
			}
		}
		return nil
	}

	It("drains a cell with Client.DrainCell, which the rep's Heartbeat reports until a fresh start", func() {
		result, err := rep.Heartbeat(ctx, cell, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(result.PresenceTTL).To(Equal(30 * time.Second))
		Expect(result.Draining).To(BeFalse())

		Expect(api.DrainCell(ctx, cellID)).To(Succeed())
		Expect(cellListed().GetDraining()).To(BeTrue())
		result, err = rep.Heartbeat(ctx, cell, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Draining).To(BeTrue())
		ttl, err := rep.RegisterCell(ctx, cell)
		Expect(err).NotTo(HaveOccurred())
		Expect(ttl).To(Equal(30 * time.Second))
		Expect(cellListed().GetDraining()).To(BeTrue(), "RegisterCell keeps the flag")

		result, err = rep.Heartbeat(ctx, cell, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Draining).To(BeFalse())
		Expect(cellListed().GetDraining()).To(BeFalse())
	})

	It("answers ResourceNotFound for draining an unknown cell", func() {
		Expect(api.DrainCell(ctx, "cell-nope")).To(errorOfType(models.Error_ResourceNotFound))
		Expect(api.DrainCell(ctx, "")).To(errorOfType(models.Error_InvalidRequest))
	})

	It("refuses a heartbeat for another cell before sending it", func() {
		other := proto.Clone(cell).(*models.Cell)
		other.CellId = "cell-other"
		_, err := rep.Heartbeat(ctx, other, true)
		Expect(err).To(MatchError(ContainSubstring("not this client's cell")))
	})

	It("holds a hand-over the disruption budget does not allow, names the blocker in the drain status, and lets it go at the deadline", func() {
		budget = ""
		DeferCleanup(func() { budget = "100%" })
		_, err := rep.Heartbeat(ctx, cell, true)
		Expect(err).NotTo(HaveOccurred())
		runPlaced()
		Expect(api.DrainCellBy(ctx, cellID, time.Hour)).To(Succeed())

		_, err = rep.EvacuateActualLRP(ctx, placed)
		Expect(err).To(MatchError(ContainSubstring("budget_exhausted: hello's disruption budget: budget 0, spent 1: 0 leaving (evacuating or told to stop), 1 down")))
		Expect(rowOf(models.ActualLRP_EVACUATING)).To(BeNil())
		status, err := api.DrainStatus(ctx, cellID)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.GetWaiting()).To(BeEquivalentTo(1))
		Expect(status.GetBlocked()).To(HaveLen(1))
		Expect(status.GetBlocked()[0].GetProcessGuid()).To(Equal("hello"))
		Expect(status.GetBlocked()[0].GetBlockedBy().GetReason()).To(Equal(models.BlockedBudgetExhausted))
		Expect(status.GetBlocked()[0].GetBlockedBy().GetEstimate()).To(Equal(status.GetCell().GetDrainDeadline()))

		By("a deadline that has passed lets it go, and the cell records it")
		Expect(api.DrainCellBy(ctx, cellID, time.Millisecond)).To(Succeed())
		time.Sleep(5 * time.Millisecond)
		keep, err := rep.EvacuateActualLRP(ctx, placed)
		Expect(err).NotTo(HaveOccurred())
		Expect(keep).To(BeTrue())
		Expect(cellListed().GetDrainOverdueAt()).NotTo(BeZero())
	})

	It("evacuates a running instance, marks the evacuating one unroutable and removes it", func() {
		_, err := rep.Heartbeat(ctx, cell, true)
		Expect(err).NotTo(HaveOccurred())
		netInfo := runPlaced()
		definition := rowOf(models.ActualLRP_ORDINARY).GetDefinitionId()
		Expect(api.DrainCell(ctx, cellID)).To(Succeed())

		keep, err := rep.EvacuateActualLRP(ctx, placed)
		Expect(err).NotTo(HaveOccurred())
		Expect(keep).To(BeTrue())
		Expect(rowOf(models.ActualLRP_EVACUATING).GetRoutable()).To(BeTrue())
		Expect(rowOf(models.ActualLRP_ORDINARY).GetState()).To(Equal(models.ActualLRP_UNCLAIMED))
		keep, err = rep.EvacuateActualLRP(ctx, placed)
		Expect(err).NotTo(HaveOccurred())
		Expect(keep).To(BeTrue(), "a repeat answers the same")

		report, err := rep.BulkReport(ctx, []*models.ReportedInstance{{
			ProcessGuid: "hello", Index: 0, Presence: models.ActualLRP_EVACUATING, InstanceGuid: placed.InstanceGuid,
			DefinitionId: definition, State: models.ActualLRP_RUNNING, NetInfo: netInfo, Routable: true,
		}})
		Expect(err).NotTo(HaveOccurred())
		Expect(report.Stop).To(BeEmpty(), "its replacement is not running yet")

		row, err := rep.SetRoutable(ctx, placed, models.ActualLRP_EVACUATING, netInfo, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(row.GetPresence()).To(Equal(models.ActualLRP_EVACUATING))
		Expect(row.GetState()).To(Equal(models.ActualLRP_RUNNING))
		Expect(row.GetRoutable()).To(BeFalse())

		Expect(rep.RemoveActualLRP(ctx, placed, models.ActualLRP_EVACUATING)).To(Succeed())
		Expect(rowOf(models.ActualLRP_EVACUATING)).To(BeNil())
		keep, err = rep.EvacuateActualLRP(ctx, placed)
		Expect(err).NotTo(HaveOccurred())
		Expect(keep).To(BeFalse())
	})

	It("reports occupancy in the bulk report", func() {
		_, err := rep.Heartbeat(ctx, cell, true)
		Expect(err).NotTo(HaveOccurred())
		netInfo := runPlaced()
		report, err := rep.BulkReport(ctx, []*models.ReportedInstance{{
			ProcessGuid: "hello", Index: 0, Presence: models.ActualLRP_ORDINARY, InstanceGuid: placed.InstanceGuid,
			DefinitionId: rowOf(models.ActualLRP_ORDINARY).GetDefinitionId(), State: models.ActualLRP_RUNNING, NetInfo: netInfo, Routable: true, Occupied: true,
		}})
		Expect(err).NotTo(HaveOccurred())
		Expect(report.Stop).To(BeEmpty())
		Expect(rowOf(models.ActualLRP_ORDINARY).GetOccupied()).To(BeTrue())
	})
})

var _ = Describe("CellClient requests for draining and evacuation", func() {
	var (
		ctx      context.Context
		board    *cellBoard
		c        *client.CellClient
		instance client.Instance
	)

	BeforeEach(func() {
		ctx = context.Background()
		board = newCellBoard()
		server := httptest.NewServer(board)
		DeferCleanup(server.Close)
		c = client.NewCellClient(server.URL, "cell-1")
		instance = client.Instance{ProcessGuid: "web", Index: 2, InstanceGuid: "ig-2"}
	})

	It("sends fresh_start with a heartbeat and reads draining and the TTL from the answer", func() {
		board.answer(models.RouteRegisterCell, &models.RegisterCellResponse{PresenceTtlMs: 45000, Draining: true})
		cell := &models.Cell{CellId: "cell-1", RepUrl: "http://10.0.0.5:1800", Zone: "z1",
			Capacity: &models.CellCapacity{MemoryMb: 1, DiskMb: 1, Instances: 1}}
		result, err := c.Heartbeat(ctx, cell, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(*result).To(Equal(client.HeartbeatResult{PresenceTTL: 45 * time.Second, Draining: true}))
		_, err = c.Heartbeat(ctx, cell, false)
		Expect(err).NotTo(HaveOccurred())
		expectSent(board.received(models.RouteRegisterCell),
			&models.RegisterCellRequest{Cell: cell, FreshStart: true},
			&models.RegisterCellRequest{Cell: cell})
	})

	It("sets routable by re-starting the named row", func() {
		netInfo := &models.NetInfo{Address: "10.0.0.5", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}
		board.answer(models.RouteStartActualLRP, &models.ActualLRPLifecycleResponse{ActualLrp: &models.ActualLRP{ProcessGuid: "web"}})
		_, err := c.SetRoutable(ctx, instance, models.ActualLRP_EVACUATING, netInfo, false)
		Expect(err).NotTo(HaveOccurred())
		expectSent(board.received(models.RouteStartActualLRP), &models.StartActualLRPRequest{
			ProcessGuid: "web", Index: 2, InstanceGuid: "ig-2", CellId: "cell-1",
			NetInfo: netInfo, Routable: proto.Bool(false), Presence: models.ActualLRP_EVACUATING,
		})
	})

	It("asks to evacuate the instance on its own cell and reads keep_running", func() {
		board.answer(models.RouteEvacuateActualLRP, &models.EvacuateActualLRPResponse{KeepRunning: true})
		keep, err := c.EvacuateActualLRP(ctx, instance)
		Expect(err).NotTo(HaveOccurred())
		Expect(keep).To(BeTrue())
		expectSent(board.received(models.RouteEvacuateActualLRP), &models.EvacuateActualLRPRequest{
			ProcessGuid: "web", Index: 2, InstanceGuid: "ig-2", CellId: "cell-1",
		})
	})
})
