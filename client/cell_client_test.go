package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// validating is a request message that checks itself.
type validating interface {
	proto.Message
	Validate() error
}

// cellBoard stands in for the board's cell side. It decodes every request
// as the board does, refuses one that fails Validate as the board would,
// records it, and answers what the spec set for the route.
type cellBoard struct {
	mu       sync.Mutex
	requests map[string][]proto.Message
	answers  map[string]proto.Message
}

var cellRoutes = map[string]func() validating{
	models.RouteRegisterCell:      func() validating { return &models.RegisterCellRequest{} },
	models.RouteCells:             func() validating { return &models.CellsRequest{} },
	models.RouteClaimActualLRP:    func() validating { return &models.ClaimActualLRPRequest{} },
	models.RouteStartActualLRP:    func() validating { return &models.StartActualLRPRequest{} },
	models.RouteCrashActualLRP:    func() validating { return &models.CrashActualLRPRequest{} },
	models.RouteFailActualLRP:     func() validating { return &models.FailActualLRPRequest{} },
	models.RouteRemoveActualLRP:   func() validating { return &models.RemoveActualLRPRequest{} },
	models.RouteBulkReport:        func() validating { return &models.BulkReportRequest{} },
	models.RouteEvacuateActualLRP: func() validating { return &models.EvacuateActualLRPRequest{} },
	models.RouteReportOccupancy:   func() validating { return &models.ReportOccupancyRequest{} },
	models.RouteReportHealth:      func() validating { return &models.ReportHealthRequest{} },
}

func newCellBoard() *cellBoard {
	return &cellBoard{requests: map[string][]proto.Message{}, answers: map[string]proto.Message{}}
}

func (b *cellBoard) answer(route string, response proto.Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.answers[route] = response
}

func (b *cellBoard) received(route string) []proto.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests[route]
}

func (b *cellBoard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer GinkgoRecover()
	newRequest, ok := cellRoutes[r.URL.Path]
	Expect(ok).To(BeTrue(), "no stand-in for %s", r.URL.Path)
	body, err := io.ReadAll(r.Body)
	Expect(err).NotTo(HaveOccurred())
	req := newRequest()
	Expect(proto.Unmarshal(body, req)).To(Succeed())

	b.mu.Lock()
	b.requests[r.URL.Path] = append(b.requests[r.URL.Path], req)
	response := b.answers[r.URL.Path]
	b.mu.Unlock()
	if err := req.Validate(); err != nil {
		response = &models.PingResponse{Error: models.ConvertError(err)}
	}
	if response == nil {
		response = &models.ActualLRPLifecycleResponse{}
	}
	encoded, err := proto.Marshal(response)
	Expect(err).NotTo(HaveOccurred())
	w.Header().Set("Content-Type", models.ContentTypeProtobuf)
	w.Write(encoded)
}

func expectSent(got []proto.Message, want ...proto.Message) {
	GinkgoHelper()
	Expect(got).To(HaveLen(len(want)))
	for i := range want {
		Expect(proto.Equal(got[i], want[i])).To(BeTrue(), "request %d:\ngot  %v\nwant %v", i, got[i], want[i])
	}
}

var _ = Describe("CellClient", func() {
	const (
		cellID       = "cell-z1-0"
		instanceGuid = "9a1f4c2e-2b7d-4e3a-8c5f-1d0e9b8a7c6d"
	)
	var (
		ctx      context.Context
		board    *cellBoard
		c        *client.CellClient
		instance client.Instance
		row      *models.ActualLRP
	)

	BeforeEach(func() {
		ctx = context.Background()
		board = newCellBoard()
		server := httptest.NewServer(board)
		DeferCleanup(server.Close)
		c = client.NewCellClient(server.URL, cellID)
		instance = client.Instance{ProcessGuid: "web", Index: 1, InstanceGuid: instanceGuid}
		row = &models.ActualLRP{ProcessGuid: "web", Index: 1, State: models.ActualLRP_CLAIMED, InstanceGuid: instanceGuid, CellId: cellID}
		for _, route := range []string{models.RouteClaimActualLRP, models.RouteStartActualLRP, models.RouteCrashActualLRP, models.RouteFailActualLRP} {
			board.answer(route, &models.ActualLRPLifecycleResponse{ActualLrp: row})
		}
	})

	newCell := func(id string) *models.Cell {
		return &models.Cell{CellId: id, RepUrl: "http://10.0.0.5:1800", Zone: "z1", Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 2048, Instances: 10}}
	}

	It("registers its cell and returns the presence TTL the board gives", func() {
		board.answer(models.RouteRegisterCell, &models.RegisterCellResponse{PresenceTtlMs: 30000})
		ttl, err := c.RegisterCell(ctx, newCell(cellID))
		Expect(err).NotTo(HaveOccurred())
		Expect(ttl).To(Equal(30 * time.Second))
		expectSent(board.received(models.RouteRegisterCell), &models.RegisterCellRequest{Cell: newCell(cellID)})
		Expect(c.CellID()).To(Equal(cellID))
	})

	It("refuses to register another cell, sending nothing", func() {
		_, err := c.RegisterCell(ctx, newCell("cell-other"))
		Expect(err).To(MatchError(`register cell: cell_id "cell-other" is not this client's cell "cell-z1-0"`))
		Expect(board.received(models.RouteRegisterCell)).To(BeEmpty())
	})

	It("claims, starts, crashes, fails and removes as its own cell, answering the row", func() {
		net := &models.NetInfo{Address: "10.0.0.5", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}

		claimed, err := c.ClaimActualLRP(ctx, instance)
		Expect(err).NotTo(HaveOccurred())
		Expect(proto.Equal(claimed, row)).To(BeTrue())
		_, err = c.StartActualLRP(ctx, instance, net, true)
		Expect(err).NotTo(HaveOccurred())
		_, err = c.StartActualLRP(ctx, instance, net, false)
		Expect(err).NotTo(HaveOccurred())
		_, err = c.CrashActualLRP(ctx, instance, "exit status 3")
		Expect(err).NotTo(HaveOccurred())
		_, err = c.FailActualLRP(ctx, "web", 4, "not enough disk")
		Expect(err).NotTo(HaveOccurred())
		Expect(c.RemoveActualLRP(ctx, instance, models.ActualLRP_SUSPECT)).To(Succeed())

		expectSent(board.received(models.RouteClaimActualLRP),
			&models.ClaimActualLRPRequest{ProcessGuid: "web", Index: 1, InstanceGuid: instanceGuid, CellId: cellID})
		expectSent(board.received(models.RouteStartActualLRP),
			&models.StartActualLRPRequest{ProcessGuid: "web", Index: 1, InstanceGuid: instanceGuid, CellId: cellID, NetInfo: net, Routable: proto.Bool(true)},
			&models.StartActualLRPRequest{ProcessGuid: "web", Index: 1, InstanceGuid: instanceGuid, CellId: cellID, NetInfo: net, Routable: proto.Bool(false)})
		expectSent(board.received(models.RouteCrashActualLRP),
			&models.CrashActualLRPRequest{ProcessGuid: "web", Index: 1, InstanceGuid: instanceGuid, CellId: cellID, CrashReason: "exit status 3"})
		expectSent(board.received(models.RouteFailActualLRP),
			&models.FailActualLRPRequest{ProcessGuid: "web", Index: 4, CellId: cellID, PlacementError: "not enough disk"})
		expectSent(board.received(models.RouteRemoveActualLRP),
			&models.RemoveActualLRPRequest{ProcessGuid: "web", Index: 1, Presence: models.ActualLRP_SUSPECT, InstanceGuid: instanceGuid, CellId: cellID})
	})

	It("cuts a crash reason over the limit at a character boundary instead of losing the crash", func() {
		reason := strings.Repeat("a", models.MaxReasonBytes-1) + "é and more"
		_, err := c.CrashActualLRP(ctx, instance, reason)
		Expect(err).NotTo(HaveOccurred(), "the board accepted it")
		sent := board.received(models.RouteCrashActualLRP)[0].(*models.CrashActualLRPRequest).GetCrashReason()
		Expect(sent).To(Equal(strings.Repeat("a", models.MaxReasonBytes-1)))
		Expect(utf8.ValidString(sent)).To(BeTrue())

		_, err = c.FailActualLRP(ctx, "web", 1, strings.Repeat("b", models.MaxReasonBytes+10))
		Expect(err).NotTo(HaveOccurred())
		Expect(board.received(models.RouteFailActualLRP)[0].(*models.FailActualLRPRequest).GetPlacementError()).To(HaveLen(models.MaxReasonBytes))
	})

	It("bulk reports what it runs and returns what to stop and what to claim", func() {
		stop := &models.ReportedInstance{ProcessGuid: "gone", Presence: models.ActualLRP_ORDINARY, InstanceGuid: instanceGuid, DefinitionId: "v1", State: models.ActualLRP_CLAIMED}
		assigned := &models.ActualLRP{ProcessGuid: "new", Index: 2, State: models.ActualLRP_UNCLAIMED, CellId: cellID}
		board.answer(models.RouteBulkReport, &models.BulkReportResponse{Stop: []*models.ReportedInstance{stop}, Assigned: []*models.ActualLRP{assigned}})

		result, err := c.BulkReport(ctx, []*models.ReportedInstance{stop})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Stop).To(HaveLen(1))
		Expect(proto.Equal(result.Stop[0], stop)).To(BeTrue())
		Expect(result.Assigned).To(HaveLen(1))
		Expect(proto.Equal(result.Assigned[0], assigned)).To(BeTrue())
		expectSent(board.received(models.RouteBulkReport), &models.BulkReportRequest{CellId: cellID, Instances: []*models.ReportedInstance{stop}})

		board.answer(models.RouteBulkReport, &models.BulkReportResponse{})
		empty, err := c.BulkReport(ctx, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(empty.Stop).To(BeEmpty())
	})

	It("reports occupancy changes and returns how many rows they changed", func() {
		changes := []*models.OccupancyChange{
			{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY, InstanceGuid: instanceGuid, Occupied: true},
			{ProcessGuid: "web", Index: 1, Presence: models.ActualLRP_EVACUATING, InstanceGuid: instanceGuid},
		}
		board.answer(models.RouteReportOccupancy, &models.ReportOccupancyResponse{Applied: 1})
		applied, err := c.ReportOccupancy(ctx, changes)
		Expect(err).NotTo(HaveOccurred())
		Expect(applied).To(Equal(1))
		expectSent(board.received(models.RouteReportOccupancy), &models.ReportOccupancyRequest{CellId: cellID, Changes: changes})

		_, err = c.ReportOccupancy(ctx, nil)
		Expect(err).To(errorOfType(models.Error_InvalidRequest))
		Expect(err.Error()).To(ContainSubstring("changes: required"))
	})

	It("returns the board's typed errors", func() {
		board.answer(models.RouteClaimActualLRP, &models.ActualLRPLifecycleResponse{
			Error: models.NewError(models.Error_InvalidStateTransition, "placed on cell-b"),
		})
		_, err := c.ClaimActualLRP(ctx, instance)
		Expect(err).To(errorOfType(models.Error_InvalidStateTransition))

		_, err = c.StartActualLRP(ctx, instance, nil, true)
		Expect(err).To(errorOfType(models.Error_InvalidRequest))
		Expect(err.Error()).To(ContainSubstring("net_info: required"))
	})

	It("reports an answer without the row as an error", func() {
		board.answer(models.RouteClaimActualLRP, &models.ActualLRPLifecycleResponse{})
		_, err := c.ClaimActualLRP(ctx, instance)
		Expect(err).To(MatchError(ContainSubstring("board answered without a result")))
	})

	Describe("retries after a dropped connection", func() {
		var (
			listener *droppingListener
			dropNext func(n int32)
		)

		BeforeEach(func() {
			server := httptest.NewUnstartedServer(board)
			listener = &droppingListener{Listener: server.Listener}
			server.Listener = listener
			server.Start()
			DeferCleanup(server.Close)
			transport := http.DefaultTransport.(*http.Transport).Clone()
			DeferCleanup(transport.CloseIdleConnections)
			dropNext = func(n int32) {
				transport.CloseIdleConnections()
				listener.drop.Store(n)
			}
			c = client.NewCellClient(server.URL, cellID,
				client.WithHTTPClient(&http.Client{Transport: transport}), client.WithRetries(2), client.WithRetryBackoff(time.Millisecond))
		})

		It("retries the heartbeat, the bulk report and an occupancy report", func() {
			dropNext(2)
			_, err := c.RegisterCell(ctx, newCell(cellID))
			Expect(err).NotTo(HaveOccurred())
			dropNext(1)
			_, err = c.BulkReport(ctx, nil)
			Expect(err).NotTo(HaveOccurred())
			dropNext(1)
			_, err = c.ReportOccupancy(ctx, []*models.OccupancyChange{
				{ProcessGuid: "web", Presence: models.ActualLRP_ORDINARY, InstanceGuid: instanceGuid, Occupied: true},
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(board.received(models.RouteRegisterCell)).To(HaveLen(1))
			Expect(board.received(models.RouteBulkReport)).To(HaveLen(1))
			Expect(board.received(models.RouteReportOccupancy)).To(HaveLen(1))
			Expect(listener.drop.Load()).To(BeNumerically("<", 0), "every drop was used")
		})

		DescribeTable("sends a lifecycle call once",
			func(route string, send func(*client.CellClient) error) {
				dropNext(1)
				accepted := listener.accepted.Load()
				Expect(send(c)).To(HaveOccurred())
				Expect(listener.accepted.Load() - accepted).To(BeEquivalentTo(1))
				Expect(board.received(route)).To(BeEmpty())
			},
			Entry("claim", models.RouteClaimActualLRP, func(c *client.CellClient) error {
				_, err := c.ClaimActualLRP(context.Background(), client.Instance{ProcessGuid: "web", InstanceGuid: instanceGuid})
				return err
			}),
			Entry("start", models.RouteStartActualLRP, func(c *client.CellClient) error {
				_, err := c.StartActualLRP(context.Background(), client.Instance{ProcessGuid: "web", InstanceGuid: instanceGuid}, &models.NetInfo{Address: "a"}, true)
				return err
			}),
			Entry("crash", models.RouteCrashActualLRP, func(c *client.CellClient) error {
				_, err := c.CrashActualLRP(context.Background(), client.Instance{ProcessGuid: "web", InstanceGuid: instanceGuid}, "boom")
				return err
			}),
			Entry("fail", models.RouteFailActualLRP, func(c *client.CellClient) error {
				_, err := c.FailActualLRP(context.Background(), "web", 0, "no room")
				return err
			}),
			Entry("remove", models.RouteRemoveActualLRP, func(c *client.CellClient) error {
				return c.RemoveActualLRP(context.Background(), client.Instance{ProcessGuid: "web", InstanceGuid: instanceGuid}, models.ActualLRP_ORDINARY)
			}),
		)
	})
})

var _ = Describe("Client.Cells", func() {
	It("lists the cells the board answers with", func() {
		board := newCellBoard()
		cells := []*models.Cell{
			{CellId: "a", Zone: "z1", Present: true, Free: &models.CellCapacity{MemoryMb: 512, DiskMb: 100, Instances: 3}},
			{CellId: "b", Zone: "z2", ExpiresAt: 42},
		}
		board.answer(models.RouteCells, &models.CellsResponse{Cells: cells})
		server := httptest.NewServer(board)
		DeferCleanup(server.Close)

		got, err := client.New(server.URL).Cells(context.Background())
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(HaveLen(2))
		Expect(proto.Equal(got[0], cells[0])).To(BeTrue())
		Expect(proto.Equal(got[1], cells[1])).To(BeTrue())
		Expect(board.received(models.RouteCells)).To(HaveLen(1))
	})
})
