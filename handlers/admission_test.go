package handlers_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
)

// gatedStore holds every read of one desired LRP, and every page read of
// a streamed list of desired LRPs, until open is called, so that a spec can keep calls in
// flight for as long as it likes.
type gatedStore struct {
	db.DB
	entered  chan struct{}
	gate     chan struct{}
	openOnce sync.Once
}

func newGatedStore(store db.DB) *gatedStore {
	s := &gatedStore{DB: store, entered: make(chan struct{}, 1000), gate: make(chan struct{})}
	DeferCleanup(s.open)
	return s
}

func (s *gatedStore) open() { s.openOnce.Do(func() { close(s.gate) }) }

func (s *gatedStore) wait(ctx context.Context) {
	s.entered <- struct{}{}
	select {
	case <-s.gate:
	case <-ctx.Done():
	}
}

func (s *gatedStore) DesiredLRPByProcessGuid(ctx context.Context, guid string) (*models.DesiredLRP, error) {
	s.wait(ctx)
	return s.DB.DesiredLRPByProcessGuid(ctx, guid)
}

// EachDesiredLRP holds the page reads of a streamed list (a page
// request's reads one item more than its limit).
func (s *gatedStore) EachDesiredLRP(ctx context.Context, filter db.DesiredLRPFilter, fn func(*models.DesiredLRP) error) error {
	if filter.Limit == handlers.StreamPage() {
		s.wait(ctx)
	}
	return s.DB.EachDesiredLRP(ctx, filter, fn)
}

// holdCall starts a get of guid through store, a gatedStore b serves, and
// returns once the call is in the store: in flight until store opens.
func (b *board) holdCall(store *gatedStore, guid string) chan *models.DesiredLRPResponse {
	GinkgoHelper()
	// Before the server closes, which waits for the calls in flight.
	DeferCleanup(store.open)
	done := make(chan *models.DesiredLRPResponse, 1)
	go func() {
		defer GinkgoRecover()
		resp := &models.DesiredLRPResponse{}
		b.call(models.RouteDesiredLRPByProcessGuid, &models.DesiredLRPByProcessGuidRequest{ProcessGuid: guid}, resp)
		done <- resp
	}()
	Eventually(store.entered).Should(Receive())
	return done
}

// clientFrom is an HTTP client whose connections come from the loopback
// address ip (127.0.0.2, ...): another client, on plain HTTP.
func clientFrom(ip string) *http.Client {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	transport := &http.Transport{DialContext: dialer.DialContext}
	DeferCleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: transport}
}

// rawPost sends a request's head (with the Content-Length given) and body
// as they are on a fresh connection, and reads the answer.
func (b *board) rawPost(route string, contentLength int64, body string) (*http.Response, []byte) {
	GinkgoHelper()
	conn, err := net.Dial("tcp", b.server.Listener.Addr().String())
	Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: board\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s", route, models.ContentTypeJSON, contentLength, body)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp, answer
}

var _ = Describe("Admission", func() {
	Describe("of bodies", func() {
		It("reads a slow body without taking a place in flight", func() {
			b := newBoardWith(stores[testdb.SQLite], jsonWire, handlers.WithMaxRequestsInFlight(1))
			held := b.hold(models.RoutePing)
			Eventually(func() float64 { return b.inUse("body_readers") }).Should(BeEquivalentTo(1))
			Expect(b.inUse("requests_in_flight")).To(BeZero())

			resp := &models.DesiredLRPResponse{}
			b.call(models.RouteDesiredLRPByProcessGuid, &models.DesiredLRPByProcessGuidRequest{ProcessGuid: randomName("web")}, resp)
			Expect(resp.GetError().GetType()).To(Equal(models.Error_ResourceNotFound))

			Expect(held.release().StatusCode).To(Equal(http.StatusOK))
			Expect(b.counter(models.RoutePing, "success")).To(BeEquivalentTo(1))
			Eventually(func() float64 { return b.inUse("body_readers") }).Should(BeZero())
		})

		It("refuses a Content-Length over the cap at once, without reading the body, and closes the connection", func() {
			b := newBoard(stores[testdb.SQLite], jsonWire)
			guid, domain := randomName("web"), randomName("apps")
			body, err := jsonWire.marshal(&models.DesireLRPRequest{DesiredLrp: newLRP(guid, domain, 1)})
			Expect(err).NotTo(HaveOccurred())

			// 10 GiB declared, a whole valid desire sent: were the body
			// read, the LRP would be desired (or the answer wait for the
			// rest).
			resp, answer := b.rawPost(models.RouteDesireDesiredLRP, 10<<30, string(body))
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			Expect(resp.Close).To(BeTrue())
			refusal := &models.DesireLRPResponse{}
			Expect(jsonWire.unmarshal(answer, refusal)).To(Succeed(), "body: %q", answer)
			Expect(refusal.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
			Expect(refusal.GetError().GetMessage()).To(Equal(fmt.Sprintf("request body: larger than the limit of %d bytes", models.MaxRequestBodyBytes)))
			b.expectNothingDesired(guid, domain)
		})

		It("answers a body in an encoding the API does not speak 415 at once, without waiting for it", func() {
			b := newBoardWith(stores[testdb.SQLite], jsonWire, handlers.WithMaxRequestsInFlight(1))
			held := b.holdAs(models.RoutePing, "text/plain")
			var resp *http.Response
			// The body is still open: the answer did not wait for it.
			Eventually(held.done).Should(Receive(&resp))
			Expect(resp.StatusCode).To(Equal(http.StatusUnsupportedMediaType))
			Expect(resp.Close).To(BeTrue())
			Eventually(func() float64 { return b.inUse("requests_in_flight") }).Should(BeZero())
		})

		It("answers a body that does not arrive within the body timeout with InvalidRequest, closes its connection and gives its place back", func() {
			b := newBoardWith(stores[testdb.SQLite], jsonWire, handlers.WithRequestBodyTimeout(200*time.Millisecond))
			conn, err := net.Dial("tcp", b.server.Listener.Addr().String())
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(conn.Close)
			// 4,096 bytes announced, 2 sent, and the connection left open.
			_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: board\r\nContent-Type: %s\r\nContent-Length: 4096\r\n\r\n{ ", models.RoutePing, models.ContentTypeJSON)
			Expect(err).NotTo(HaveOccurred())
			reader := bufio.NewReader(conn)
			resp, err := http.ReadResponse(reader, nil)
			Expect(err).NotTo(HaveOccurred())
			answer, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Close).To(BeTrue())
			Expect(string(answer)).To(ContainSubstring("request body: not received within 200ms"))
			Expect(b.counter(models.RoutePing, "InvalidRequest")).To(BeEquivalentTo(1))
			Eventually(func() float64 { return b.inUse("body_readers") }).Should(BeZero())

			By("closing the connection rather than waiting for the rest of the body")
			// A guard against hanging, not a speed requirement: without
			// the close, the board reads on until the body is complete.
			Expect(conn.SetReadDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
			_, err = reader.ReadByte()
			Expect(err).To(MatchError(io.EOF))
		})
	})

	Describe("of cells' calls", func() {
		It("takes the cells' calls to be exactly the routes only cells may call: presence, report, lifecycle, occupancy, health", func() {
			cellRoutes := handlers.CellsOnlyRoutes()
			Expect(cellRoutes).To(ConsistOf(
				models.RouteRegisterCell, models.RouteBulkReport,
				models.RouteClaimActualLRP, models.RouteStartActualLRP, models.RouteCrashActualLRP,
				models.RouteFailActualLRP, models.RouteRemoveActualLRP, models.RouteEvacuateActualLRP,
				models.RouteReportOccupancy, models.RouteReportHealth,
			))
			Expect(cellRoutes).To(ContainElements(models.RouteRegisterCell, models.RouteBulkReport, models.RouteReportOccupancy))
		})

		It("keeps places for cells that API calls cannot take", func() {
			store := newGatedStore(stores[testdb.SQLite])
			b := newBoardWith(store, jsonWire, handlers.WithMaxRequestsInFlight(5), handlers.WithReservedForCells(2))
			for range 3 {
				b.holdCall(store, randomName("web"))
			}

			By("refusing the API call past the places left to API clients")
			resp := &models.DesiredLRPResponse{}
			b.call(models.RouteDesiredLRPByProcessGuid, &models.DesiredLRPByProcessGuidRequest{ProcessGuid: randomName("web")}, resp)
			Expect(resp.GetError().GetType()).To(Equal(models.Error_ResourceExhausted))
			Expect(resp.GetError().GetMessage()).To(Equal("requests_in_flight: the board serves at most 5 requests (event streams aside) at once, 2 of them kept for cells; retry later"))

			By("admitting a cell's heartbeat and bulk report all the same")
			cellID := randomName("cell")
			register := &models.RegisterCellResponse{}
			b.call(models.RouteRegisterCell, &models.RegisterCellRequest{Cell: &models.Cell{CellId: cellID, Zone: "z1", RepUrl: "http://127.0.0.1:1", Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Instances: 10}}}, register)
			Expect(register.GetError()).To(BeNil(), "%v", register.GetError())
			report := &models.BulkReportResponse{}
			b.call(models.RouteBulkReport, &models.BulkReportRequest{CellId: cellID}, report)
			Expect(report.GetError()).To(BeNil())
		})

		It("keeps them from API clients with certificates, for cells' certificates", func() {
			store := newGatedStore(authStore)
			b := newTLSBoard(store, jsonWire, handlers.WithRequiredClientCertificates(), handlers.WithMaxRequestsInFlight(3), handlers.WithReservedForCells(1))
			api := b.asIdentity(asAPIClient)
			api.holdCall(store, randomName("web"))
			b.asIdentity(asOperator).holdCall(store, randomName("web"))

			resp := &models.DesiredLRPResponse{}
			api.call(models.RouteDesiredLRPByProcessGuid, &models.DesiredLRPByProcessGuidRequest{ProcessGuid: randomName("web")}, resp)
			Expect(resp.GetError().GetType()).To(Equal(models.Error_ResourceExhausted))
			Expect(b.limitRejectionsOf("requests_in_flight", "api-client")).To(BeEquivalentTo(1))

			register := &models.RegisterCellResponse{}
			b.asIdentity(asCell1).call(models.RouteRegisterCell, &models.RegisterCellRequest{Cell: &models.Cell{CellId: "cell-1", Zone: "z1", RepUrl: "http://127.0.0.1:1", Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Instances: 10}}}, register)
			Expect(register.GetError()).To(BeNil(), "%v", register.GetError())
			Expect(b.limitRejectionsOf("requests_in_flight", "cell")).To(BeZero())
		})
	})

	Describe("per client", func() {
		It("caps one client's requests in flight, not another's", func() {
			store := newGatedStore(stores[testdb.SQLite])
			b := newBoardWith(store, jsonWire, handlers.WithMaxRequestsPerClient(2))
			b.holdCall(store, randomName("web"))
			b.holdCall(store, randomName("web"))

			ping := &models.PingResponse{}
			b.call(models.RoutePing, &models.PingRequest{}, ping)
			Expect(ping.GetError().GetType()).To(Equal(models.Error_ResourceExhausted))
			Expect(ping.GetError().GetMessage()).To(Equal("requests_per_client: the board serves at most 2 requests at once to one client; retry later"))
			Expect(b.limitRejectionsOf("requests_per_client", "anonymous")).To(BeEquivalentTo(1))

			b.as(clientFrom("127.0.0.2")).call(models.RoutePing, &models.PingRequest{}, ping)
			Expect(ping.GetError()).To(BeNil())
		})

		It("caps one client's bodies being read, not another's", func() {
			b := newBoardWith(stores[testdb.SQLite], jsonWire, handlers.WithMaxBodyReadersPerClient(1))
			held := b.hold(models.RoutePing)
			Eventually(func() float64 { return b.inUse("body_readers") }).Should(BeEquivalentTo(1))

			ping := &models.PingResponse{}
			b.call(models.RoutePing, &models.PingRequest{}, ping)
			Expect(ping.GetError().GetType()).To(Equal(models.Error_ResourceExhausted))
			Expect(ping.GetError().GetMessage()).To(Equal("body_readers_per_client: the board reads at most 1 request bodies at once from one client; retry later"))
			Expect(b.limitRejections("body_readers_per_client")).To(BeEquivalentTo(1))

			b.as(clientFrom("127.0.0.2")).call(models.RoutePing, &models.PingRequest{}, ping)
			Expect(ping.GetError()).To(BeNil())
			Expect(held.release().StatusCode).To(Equal(http.StatusOK))
		})

		It("caps one client's list calls, whole lists and pages alike, not another's", func() {
			store := newGatedStore(stores[testdb.SQLite])
			b := newBoardWith(store, jsonWire, handlers.WithMaxListStreamsPerClient(1))
			domain := randomName("apps")
			b.mustDesire(newLRP(randomName("web"), domain, 1))
			streamed := make(chan *models.DesiredLRPsResponse, 1)
			go func() {
				defer GinkgoRecover()
				resp := &models.DesiredLRPsResponse{}
				b.call(models.RouteDesiredLRPs, &models.DesiredLRPsRequest{Domain: domain}, resp)
				streamed <- resp
			}()
			DeferCleanup(store.open)
			Eventually(store.entered).Should(Receive())
			Expect(b.inUse("list_streams")).To(BeEquivalentTo(1))

			for _, req := range []*models.DesiredLRPsRequest{{Domain: domain}, {Domain: domain, Limit: 10}} {
				resp := &models.DesiredLRPsResponse{}
				b.call(models.RouteDesiredLRPs, req, resp)
				Expect(resp.GetError().GetType()).To(Equal(models.Error_ResourceExhausted), "limit %d", req.GetLimit())
				Expect(resp.GetError().GetMessage()).To(HavePrefix("list_streams_per_client: the board answers at most 1 list calls (whole lists or pages) at once to one client"))
			}

			store.open()
			resp := &models.DesiredLRPsResponse{}
			b.as(clientFrom("127.0.0.2")).call(models.RouteDesiredLRPs, &models.DesiredLRPsRequest{Domain: domain, Limit: 10}, resp)
			Expect(resp.GetError()).To(BeNil())
			Eventually(streamed).Should(Receive(HaveField("DesiredLrps", HaveLen(1))))
			Eventually(func() float64 { return b.inUse("list_streams") }).Should(BeZero())
			b.call(models.RouteDesiredLRPs, &models.DesiredLRPsRequest{Domain: domain, Limit: 10}, resp)
			Expect(resp.GetError()).To(BeNil(), "its place is back")
			Expect(resp.GetDesiredLrps()).To(HaveLen(1))
		})
	})

	It("ends a streamed list's page at its byte budget, and the list stays whole", func() {
		for _, dialect := range testdb.MustDialects() {
			By(dialect)
			b := newBoard(stores[dialect], protobufWire)
			DeferCleanup(handlers.SetStreamPageBytes(4000))
			domain := randomName("apps")
			var guids []string
			for range 30 {
				lrp := newLRP(randomName("web"), domain, 1)
				lrp.Annotation = strings.Repeat("a", 1000)
				guids = append(guids, b.mustDesire(lrp).GetProcessGuid())
			}
			var got []string
			for _, lrp := range b.list(&models.DesiredLRPsRequest{Domain: domain}) {
				got = append(got, lrp.GetProcessGuid())
			}
			Expect(got).To(ConsistOf(guids))
			served := logsWith(b.logger.Logs(), "route", models.RouteDesiredLRPs)
			Expect(served).NotTo(BeEmpty())
			// At most 4 items of over 1,000 bytes fit 4,000 bytes.
			Expect(served[len(served)-1].Data).To(HaveKeyWithValue("items_sent", BeEquivalentTo(30)))
			Expect(served[len(served)-1].Data).To(HaveKeyWithValue("pages", BeNumerically(">=", 8)))
		}
	})

	Describe("of whole-list streams to slow readers", func() {
		var (
			b      *board
			domain string
			guids  []string
		)
		// A board on a database with one connection, whose sockets
		// buffer little, so that a client that does not read holds the
		// stream up after a few pages.
		// serve starts the board, its store seen through pages when
		// given.
		serve := func(pages *countingPages, opts ...handlers.Option) {
			database, err := testdb.Create(testdb.SQLite)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(database.Drop)
			conn, err := sqldb.Open(context.Background(), testdb.SQLite, database.DSN)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(conn.Close)
			Expect(migrations.Up(context.Background(), conn, testdb.SQLite)).To(Succeed())
			conn.SetMaxOpenConns(1)
			var store db.DB = sqldb.New(conn, testdb.SQLite)
			if pages != nil {
				pages.DB = store
				store = pages
			}
			b = &board{wire: jsonWire, registry: prometheus.NewRegistry(), logger: lagertest.NewTestLogger("handlers-test"), client: http.DefaultClient}
			b.server = httptest.NewUnstartedServer(handlers.New(b.logger, store, b.registry, opts...))
			b.server.Listener = smallBuffers{b.server.Listener}
			b.server.Start()
			DeferCleanup(b.server.Close)
			restore := handlers.SetStreamPage(10)
			DeferCleanup(restore)

			domain = randomName("apps")
			guids = nil
			for range 300 {
				lrp := newLRP(randomName("web"), domain, 1)
				lrp.Annotation = strings.Repeat("a", 1000)
				guids = append(guids, b.mustDesire(lrp).GetProcessGuid())
			}
		}
		// stall opens a whole list and reads only its head.
		stall := func() (*http.Response, net.Conn) {
			conn, err := net.Dial("tcp", b.server.Listener.Addr().String())
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(conn.Close)
			Expect(conn.(*net.TCPConn).SetReadBuffer(4096)).To(Succeed())
			body := fmt.Sprintf(`{"domain": %q}`, domain)
			_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: board\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s", models.RouteDesiredLRPs, models.ContentTypeJSON, len(body), body)
			Expect(err).NotTo(HaveOccurred())
			resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 16), nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			return resp, conn
		}

		It("holds no database connection while its client is slow, and the client gets the whole list", func() {
			serve(nil)
			resp, _ := stall()
			Expect(b.inUse("list_streams")).To(BeEquivalentTo(1))

			By("serving other calls on the one connection meanwhile")
			guid := randomName("web")
			b.mustDesire(newLRP(guid, randomName("apps"), 1))
			Expect(b.mustGet(guid).GetProcessGuid()).To(Equal(guid))
			// Still streaming: the calls were served while it stood.
			Expect(b.inUse("list_streams")).To(BeEquivalentTo(1))

			By("handing the reader every item once it reads")
			answer, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			list := &models.DesiredLRPsResponse{}
			Expect(jsonWire.unmarshal(answer, list)).To(Succeed())
			Expect(list.GetError()).To(BeNil())
			var got []string
			for _, lrp := range list.GetDesiredLrps() {
				got = append(got, lrp.GetProcessGuid())
			}
			Expect(got).To(ConsistOf(guids))
		})

		It("stops reading the list, a page ahead at most, when its client stops taking pages", func() {
			pages := &countingPages{}
			serve(pages)
			stall()
			// The pages written fill the sockets' small buffers, the
			// write of the next one blocks, and the page after it is
			// read meanwhile; then nothing more is read.
			Eventually(pages.settled).Should(BeTrue())
			read := pages.count()
			Consistently(pages.count, time.Second, 50*time.Millisecond).Should(Equal(read))
			Expect(read).To(BeNumerically("<", len(guids)/handlers.StreamPage()), "the whole list was read")
		})

		It("holds only the page read ahead while its client stops taking pages, not the one it writes too", func() {
			pages := &countingPages{watch: true}
			serve(pages)
			stall()
			// The write of a page blocks on the full sockets; the page
			// after it has been read meanwhile. The one being written is
			// in the answer's bytes already: its items must be free.
			Eventually(pages.settled).Should(BeTrue())
			Expect(pages.count()).To(BeNumerically(">=", 3), "pages were written before the stream stood")
			Eventually(pages.held, 5*time.Second, 100*time.Millisecond).Should(BeNumerically("<=", handlers.StreamPage()),
				"LRPs of the list still reachable while it stands (a page is %d)", handlers.StreamPage())
		})

		It("cuts a reader that does not take a page within the write timeout", func() {
			serve(nil, handlers.WithListWriteTimeout(300*time.Millisecond))
			stall()
			Eventually(func() float64 { return b.inUse("list_streams") }).Should(BeZero())
			ended := logsWith(b.logger.Logs(), "route", models.RouteDesiredLRPs)
			Expect(ended).NotTo(BeEmpty())
			Expect(ended[len(ended)-1].Data).To(HaveKeyWithValue("ended", ContainSubstring("write failed")))
		})
	})
})

// countingPages counts the page reads of streamed lists of desired LRPs;
// with watch set, it also counts the LRPs it hands out and, by a
// finalizer on each, those the collector has freed since.
type countingPages struct {
	db.DB
	reads            atomic.Int64
	watch            bool
	handed, released atomic.Int64
}

func (s *countingPages) EachDesiredLRP(ctx context.Context, filter db.DesiredLRPFilter, fn func(*models.DesiredLRP) error) error {
	s.reads.Add(1)
	if !s.watch {
		return s.DB.EachDesiredLRP(ctx, filter, fn)
	}
	return s.DB.EachDesiredLRP(ctx, filter, func(lrp *models.DesiredLRP) error {
		s.handed.Add(1)
		runtime.SetFinalizer(lrp, func(*models.DesiredLRP) { s.released.Add(1) })
		return fn(lrp)
	})
}

// held is how many LRPs handed out are still reachable, after a
// collection (finalizers run after the collection that finds their
// object unreachable, in a goroutine of their own).
func (s *countingPages) held() int64 {
	runtime.GC()
	runtime.GC()
	return s.handed.Load() - s.released.Load()
}

func (s *countingPages) count() int64 { return s.reads.Load() }

// settled says no page was read for 200 ms.
func (s *countingPages) settled() bool {
	before := s.count()
	time.Sleep(200 * time.Millisecond)
	return s.count() == before
}

// smallBuffers gives every connection it accepts a small send buffer.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err == nil {
		err = conn.(*net.TCPConn).SetWriteBuffer(4096)
	}
	return conn, err
}
