package handlers_test

import (
	"io"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// inUse is corkboard_http_limit_in_use{limit}, summed over the classes.
func (b *board) inUse(limit string) float64 {
	GinkgoHelper()
	sum := 0.0
	for _, m := range b.metricFamily("corkboard_http_limit_in_use") {
		if label(m, "limit") == limit {
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

// limitRejections is corkboard_http_limit_rejections_total{limit}, summed
// over the classes.
func (b *board) limitRejections(limit string) float64 {
	GinkgoHelper()
	return b.limitRejectionsOf(limit, "")
}

// limitRejectionsOf is corkboard_http_limit_rejections_total{limit,
// class}; every class when class is "".
func (b *board) limitRejectionsOf(limit, class string) float64 {
	GinkgoHelper()
	sum := 0.0
	for _, m := range b.metricFamily("corkboard_http_limit_rejections_total") {
		if label(m, "limit") == limit && (class == "" || label(m, "class") == class) {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// heldRequest is a request whose body the client has not finished
// sending: the board holds one of the client's body-reader places for it
// (never a place in flight) until the body ends or its timeout passes.
type heldRequest struct {
	body *io.PipeWriter
	done chan *http.Response
}

// hold starts a request to route whose body stays open until release.
func (b *board) hold(route string) *heldRequest {
	GinkgoHelper()
	return b.holdAs(route, models.ContentTypeJSON)
}

// holdAs is hold with the Content-Type given.
func (b *board) holdAs(route, contentType string) *heldRequest {
	GinkgoHelper()
	reader, writer := io.Pipe()
	req, err := http.NewRequest(http.MethodPost, b.server.URL+route, reader)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", contentType)
	held := &heldRequest{body: writer, done: make(chan *http.Response, 1)}
	go func() {
		defer GinkgoRecover()
		resp, err := b.client.Do(req)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		held.done <- resp
	}()
	DeferCleanup(func() { writer.Close() })
	return held
}

// release sends the rest of the body, `{}`, and waits for the answer.
func (h *heldRequest) release() *http.Response {
	GinkgoHelper()
	_, err := h.body.Write([]byte("{}"))
	Expect(err).NotTo(HaveOccurred())
	Expect(h.body.Close()).To(Succeed())
	var resp *http.Response
	Eventually(h.done).Should(Receive(&resp))
	return resp
}

var _ = Describe("Limits", func() {
	Describe("on requests in flight", func() {
		for _, wire := range wires {
			It("answers a call beyond the limit at once with ResourceExhausted naming it, in "+wire.name, func() {
				store := newGatedStore(stores[testdb.SQLite])
				b := newBoardWith(store, wire, handlers.WithMaxRequestsInFlight(2))
				first := b.holdCall(store, randomName("web"))
				second := b.holdCall(store, randomName("web"))
				Expect(b.inUse("requests_in_flight")).To(BeEquivalentTo(2))

				resp := &models.DesiredLRPResponse{}
				b.call(models.RouteDesiredLRPByProcessGuid, &models.DesiredLRPByProcessGuidRequest{ProcessGuid: randomName("web")}, resp)
				Expect(resp.GetError().GetType()).To(Equal(models.Error_ResourceExhausted))
				Expect(resp.GetError().GetMessage()).To(Equal("requests_in_flight: the board serves at most 2 requests (event streams aside) at once; retry later"))
				Expect(b.limitRejections("requests_in_flight")).To(BeEquivalentTo(1))
				Expect(b.limitRejectionsOf("requests_in_flight", "anonymous")).To(BeEquivalentTo(1))
				Expect(b.counter(models.RouteDesiredLRPByProcessGuid, "ResourceExhausted")).To(BeEquivalentTo(1))

				By("serving calls again once those in flight are done")
				store.open()
				Eventually(first).Should(Receive(HaveField("Error.Type", models.Error_ResourceNotFound)))
				Eventually(second).Should(Receive(HaveField("Error.Type", models.Error_ResourceNotFound)))
				// The place is given back just after the answer went out.
				Eventually(func() float64 { return b.inUse("requests_in_flight") }).Should(BeZero())
				b.call(models.RouteDesiredLRPByProcessGuid, &models.DesiredLRPByProcessGuidRequest{ProcessGuid: randomName("web")}, resp)
				Expect(resp.GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
			})
		}

		It("does not count event streams, which have a limit of their own", func() {
			b := newBoardWith(stores[testdb.SQLite], jsonWire, handlers.WithMaxRequestsInFlight(1), handlers.WithEvents(newHub()))
			b.openEvents(&models.EventsRequest{}, "")
			b.openEvents(&models.EventsRequest{}, "")
			ping := &models.PingResponse{}
			b.call(models.RoutePing, &models.PingRequest{}, ping)
			Expect(ping.GetError()).To(BeNil())
			Expect(b.inUse("event_subscribers")).To(BeEquivalentTo(2))
		})
	})

	Describe("on event subscribers", func() {
		It("keeps a fifth of the streams for cells' reps", func() {
			b := newTLSBoard(authStore, jsonWire, handlers.WithMaxEventSubscribers(5), handlers.WithEvents(newHub()))
			client := b.asIdentity(asAPIClient)
			for range 4 {
				client.openEvents(&models.EventsRequest{}, "")
			}
			resp, _ := client.postEvents(&models.EventsRequest{}, "")
			Expect(resp.StatusCode).To(Equal(http.StatusServiceUnavailable))
			body, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(body)).To(ContainSubstring("event_subscribers: the board serves at most 5 event streams at once, 1 of them only to cells' reps; retry later"))

			b.asIdentity(asCell1).openEvents(&models.EventsRequest{}, "")
			Expect(b.inUse("event_subscribers")).To(BeEquivalentTo(5))
			resp, _ = b.asIdentity(asCell2).postEvents(&models.EventsRequest{}, "")
			Expect(resp.StatusCode).To(Equal(http.StatusServiceUnavailable), "every place is taken")
		})

		for _, wire := range wires {
			It("answers one subscriber too many at once with 503 and a ResourceExhausted naming the limit, in "+wire.name, func() {
				b := newBoardWith(stores[testdb.SQLite], wire, handlers.WithMaxEventSubscribers(2), handlers.WithEvents(newHub()))
				first := b.openEvents(&models.EventsRequest{}, "")
				b.openEvents(&models.EventsRequest{}, "")

				resp, _ := b.postEvents(&models.EventsRequest{}, "")
				Expect(resp.StatusCode).To(Equal(http.StatusServiceUnavailable))
				Expect(resp.Header.Get("Content-Type")).To(Equal(wire.contentType))
				body, err := io.ReadAll(resp.Body)
				Expect(err).NotTo(HaveOccurred())
				refusal := &models.PingResponse{}
				Expect(wire.unmarshal(body, refusal)).To(Succeed(), "body: %q", body)
				Expect(refusal.GetError().GetType()).To(Equal(models.Error_ResourceExhausted))
				Expect(refusal.GetError().GetMessage()).To(Equal("event_subscribers: the board serves at most 2 event streams at once; retry later"))
				Expect(b.limitRejections("event_subscribers")).To(BeEquivalentTo(1))
				Expect(b.counter(models.RouteEvents, "ResourceExhausted")).To(BeEquivalentTo(1))
				refused := logsWith(b.logger.Logs(), "request_id", resp.Header.Get(handlers.RequestIDHeader))
				Expect(refused).To(HaveLen(1))
				Expect(refused[0].Data).To(HaveKeyWithValue("status", BeEquivalentTo(http.StatusServiceUnavailable)))
				Expect(refused[0].Data).To(HaveKeyWithValue("outcome", "ResourceExhausted"))

				By("taking a subscriber again once one has gone")
				first.close()
				Eventually(func() float64 { return b.inUse("event_subscribers") }).Should(BeEquivalentTo(1))
				b.openEvents(&models.EventsRequest{}, "")
				Expect(b.inUse("event_subscribers")).To(BeEquivalentTo(2))
			})
		}
	})

	Describe("on one client's event streams", func() {
		It("refuses a client's stream past its cap with 503 naming the limit, while another client still subscribes", func() {
			b := newBoardWith(stores[testdb.SQLite], jsonWire, handlers.WithMaxEventStreamsPerClient(2), handlers.WithEvents(newHub()))
			first := b.openEvents(&models.EventsRequest{}, "")
			b.openEvents(&models.EventsRequest{}, "")

			resp, _ := b.postEvents(&models.EventsRequest{}, "")
			Expect(resp.StatusCode).To(Equal(http.StatusServiceUnavailable))
			body, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			refusal := &models.PingResponse{}
			Expect(jsonWire.unmarshal(body, refusal)).To(Succeed(), "body: %q", body)
			Expect(refusal.GetError().GetType()).To(Equal(models.Error_ResourceExhausted))
			Expect(refusal.GetError().GetMessage()).To(Equal("event_streams_per_client: the board serves at most 2 event streams at once to one client; retry later"))
			Expect(b.limitRejections("event_streams_per_client")).To(BeEquivalentTo(1))
			Expect(b.inUse("event_subscribers")).To(BeEquivalentTo(2), "the refused one took no place of the board's")

			b.as(clientFrom("127.0.0.2")).openEvents(&models.EventsRequest{}, "")
			Expect(b.inUse("event_streams")).To(BeEquivalentTo(3))

			By("taking a stream again once one of the client's has gone")
			first.close()
			Eventually(func() float64 { return b.inUse("event_streams") }).Should(BeEquivalentTo(2))
			b.openEvents(&models.EventsRequest{}, "")
		})
	})

	It("keeps the defaults for values that are not positive", func() {
		b := newBoardWith(stores[testdb.SQLite], jsonWire, handlers.WithMaxRequestsInFlight(0), handlers.WithMaxEventSubscribers(-1), handlers.WithEvents(newHub()))
		b.openEvents(&models.EventsRequest{}, "")
		resp, _ := b.postRaw(models.RoutePing, models.ContentTypeJSON, []byte("{}"))
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(handlers.DefaultMaxRequestsInFlight).To(Equal(1000))
		Expect(handlers.DefaultMaxEventSubscribers).To(Equal(1000))
	})
})
