package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/models"
)

// next reads one event, failing the spec if none comes.
func next(stream *client.EventStream) client.Event {
	GinkgoHelper()
	type result struct {
		event client.Event
		err   error
	}
	got := make(chan result, 1)
	go func() {
		e, err := stream.Next()
		got <- result{e, err}
	}()
	var r result
	Eventually(got, 5*time.Second).Should(Receive(&r))
	Expect(r.err).NotTo(HaveOccurred())
	return r.event
}

// nextErr reads until Next fails and returns the error.
func nextErr(stream *client.EventStream) error {
	GinkgoHelper()
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := stream.Next(); err != nil {
				done <- err
				return
			}
		}
	}()
	var err error
	Eventually(done, 5*time.Second).Should(Receive(&err))
	return err
}

func openStream(c *client.Client, opts client.EventsOptions) *client.EventStream {
	GinkgoHelper()
	stream, err := c.Events(context.Background(), opts)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stream.Close)
	return stream
}

func created(guid string, index int32) models.Event {
	return models.ActualLRPCreated(&models.ActualLRP{ProcessGuid: guid, Index: index, State: models.ActualLRP_UNCLAIMED})
}

func createdIndex(e client.Event) int32 {
	GinkgoHelper()
	Expect(e.Payload).To(BeAssignableToTypeOf(&models.ActualLRPCreatedEvent{}))
	return e.Payload.(*models.ActualLRPCreatedEvent).GetActualLrp().GetIndex()
}

var _ = Describe("Events", func() {
	var (
		hub *events.Hub
		c   *client.Client
	)

	startEventsBoard := func(hub *events.Hub) *client.Client {
		server := httptest.NewServer(newBoardHandler(handlers.WithEvents(hub)))
		DeferCleanup(server.Close)
		return client.New(server.URL)
	}

	BeforeEach(func() {
		hub = events.NewHub()
		DeferCleanup(hub.Close)
		c = startEventsBoard(hub)
	})

	It("decodes every kind of event by its type", func() {
		stream := openStream(c, client.EventsOptions{})
		desired := &models.DesiredLRP{ProcessGuid: "web", Domain: "apps", Instances: 2}
		changed := &models.DesiredLRP{ProcessGuid: "web", Domain: "apps", Instances: 3}
		unclaimed := &models.ActualLRP{ProcessGuid: "web", Index: 1, State: models.ActualLRP_UNCLAIMED}
		running := &models.ActualLRP{ProcessGuid: "web", Index: 1, State: models.ActualLRP_RUNNING, CellId: "cell-1",
			NetInfo: &models.NetInfo{Address: "10.0.0.5", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}}
		crashed := &models.ActualLRP{ProcessGuid: "web", Index: 1, State: models.ActualLRP_CRASHED, CrashCount: 4, CrashReason: "exit 2"}
		cell := &models.Cell{CellId: "cell-1", Zone: "z1", Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 2048, Instances: 10}, Present: true}
		published := []models.Event{
			models.DesiredLRPCreated(desired),
			models.DesiredLRPChanged(desired, changed),
			models.ActualLRPCreated(unclaimed),
			models.ActualLRPChanged(unclaimed, running),
			models.ActualLRPCrashed(crashed),
			models.ActualLRPRemoved(running),
			models.CellChanged(nil, cell),
			models.RolloutChanged(&models.RolloutStatus{ProcessGuid: "web", State: models.RolloutStatus_PROGRESSING, ActiveDefinitionId: "v2", OperationId: "0123456789abcdef01234567"}),
			models.OperationChanged(&models.Operation{Id: "0123456789abcdef01234567", ProcessGuid: "web", Sequence: 2, Kind: models.Operation_UPDATE_DEFINITION,
				Status: models.Operation_IN_PROGRESS, History: []*models.OperationEvent{{At: 1, Message: "started"}}}),
			models.DesiredLRPRemoved(changed),
		}
		hub.Publish(published...)

		first := hub.LastID() - uint64(len(published)) + 1
		for i, want := range published {
			got := next(stream)
			Expect(got.ID).To(Equal(first+uint64(i)), want.Type)
			Expect(got.Type).To(Equal(want.Type))
			Expect(proto.Equal(got.Payload, want.Payload)).To(BeTrue(), "%s: got %v, want %v", want.Type, got.Payload, want.Payload)
		}
		Expect(stream.LastEventID()).To(Equal(hub.LastID()))
	})

	It("streams only the types asked for", func() {
		stream := openStream(c, client.EventsOptions{Types: []string{models.EventCellChanged}})
		hub.Publish(created("web", 0), models.CellChanged(nil, &models.Cell{CellId: "a"}), created("web", 1), models.CellChanged(nil, &models.Cell{CellId: "b"}))
		Expect(next(stream).Payload.(*models.CellChangedEvent).GetAfter().GetCellId()).To(Equal("a"))
		Expect(next(stream).Payload.(*models.CellChangedEvent).GetAfter().GetCellId()).To(Equal("b"))
	})

	It("resumes from the stream's last event id on a new stream", func() {
		stream := openStream(c, client.EventsOptions{})
		for i := range int32(5) {
			hub.Publish(created("web", i))
		}
		for range 3 {
			next(stream)
		}
		Expect(stream.Close()).To(Succeed())
		hub.Publish(created("web", 5))

		resumed := openStream(c, client.EventsOptions{LastEventID: stream.LastEventID()})
		Expect(resumed.LastEventID()).To(Equal(stream.LastEventID()), "before reading, a stream resumes where it was opened")
		for i := range int32(3) {
			Expect(createdIndex(next(resumed))).To(Equal(3 + i))
		}
		Expect(resumed.LastEventID()).To(Equal(hub.LastID()))
	})

	It("starts with events_lost, id 0, when the board no longer keeps what followed the id", func() {
		small := events.NewHub(events.WithHistory(3))
		DeferCleanup(small.Close)
		sc := startEventsBoard(small)
		for i := range int32(6) {
			small.Publish(created("web", i))
		}
		tooOld := small.LastID() - 5

		stream := openStream(sc, client.EventsOptions{LastEventID: tooOld})
		lost := next(stream)
		Expect(lost.ID).To(BeZero())
		Expect(lost.Type).To(Equal(models.EventEventsLost))
		Expect(proto.Equal(lost.Payload, &models.EventsLostEvent{LastEventId: tooOld, OldestKeptId: small.LastID() - 2})).To(BeTrue())
		Expect(stream.LastEventID()).To(Equal(tooOld), "events_lost does not move the resume point")
		Expect(createdIndex(next(stream))).To(BeEquivalentTo(3))
	})

	It("ends with ErrStreamEnded and the board's reason when the board cuts the stream off", func() {
		small := events.NewHub(events.WithHistory(5))
		DeferCleanup(small.Close)
		sc := startEventsBoard(small)
		stream := openStream(sc, client.EventsOptions{})

		burst := make([]models.Event, 100)
		for i := range burst {
			burst[i] = created("web", int32(i))
		}
		small.Publish(burst...)

		err := nextErr(stream)
		Expect(err).To(MatchError(client.ErrStreamEnded))
		Expect(err.Error()).To(HavePrefix("event stream ended: subscriber fell behind: "))
	})

	It("ends with the context's error after Close, or when the caller's context ends", func() {
		stream := openStream(c, client.EventsOptions{})
		Expect(stream.Close()).To(Succeed())
		Expect(nextErr(stream)).To(MatchError(context.Canceled))

		ctx, cancel := context.WithCancel(context.Background())
		other, err := c.Events(ctx, client.EventsOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(other.Close)
		cancel()
		Expect(nextErr(other)).To(MatchError(context.Canceled))
		Eventually(hub.Subscribers).Should(BeZero())
	})

	It("keeps a stream open past the per-attempt timeout, which bounds only the opening", func() {
		server := httptest.NewServer(newBoardHandler(handlers.WithEvents(hub)))
		DeferCleanup(server.Close)
		quick := client.New(server.URL, client.WithTimeout(20*time.Millisecond))
		stream := openStream(quick, client.EventsOptions{})
		time.Sleep(100 * time.Millisecond)
		hub.Publish(created("web", 7))
		Expect(createdIndex(next(stream))).To(BeEquivalentTo(7))
	})

	It("retries opening after a dropped connection, like a read", func() {
		server := httptest.NewUnstartedServer(newBoardHandler(handlers.WithEvents(hub)))
		listener := &droppingListener{Listener: server.Listener}
		listener.drop.Store(2)
		server.Listener = listener
		server.Start()
		DeferCleanup(server.Close)
		transport := http.DefaultTransport.(*http.Transport).Clone()
		DeferCleanup(transport.CloseIdleConnections)
		retrying := client.New(server.URL, client.WithHTTPClient(&http.Client{Transport: transport}), client.WithRetryBackoff(time.Millisecond))

		stream := openStream(retrying, client.EventsOptions{})
		Expect(listener.accepted.Load()).To(BeEquivalentTo(3))
		hub.Publish(created("web", 1))
		Expect(createdIndex(next(stream))).To(BeEquivalentTo(1))
	})

	Describe("refusals", func() {
		It("returns the board's typed error for an unknown type", func() {
			_, err := c.Events(context.Background(), client.EventsOptions{Types: []string{"cell_changed", "lunch_served"}})
			Expect(err).To(errorOfType(models.Error_InvalidRequest))
			Expect(err.Error()).To(ContainSubstring("types[1]: unknown event type"))
		})

		It("returns Unavailable from a board without a hub", func() {
			server := httptest.NewServer(newBoardHandler())
			DeferCleanup(server.Close)
			_, err := client.New(server.URL).Events(context.Background(), client.EventsOptions{})
			Expect(err).To(errorOfType(models.Error_Unavailable))
		})

		It("returns an HTTPStatusError from something that is not the board", func() {
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "bad gateway", http.StatusBadGateway)
			}))
			DeferCleanup(server.Close)
			_, err := client.New(server.URL, client.WithRetries(0)).Events(context.Background(), client.EventsOptions{})
			var statusErr *client.HTTPStatusError
			Expect(errors.As(err, &statusErr)).To(BeTrue(), "got %v", err)
			Expect(statusErr.StatusCode).To(Equal(http.StatusBadGateway))
		})

		It("times out opening a stream the board never answers, and says so", func() {
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				<-r.Context().Done()
			}))
			DeferCleanup(server.Close)
			_, err := client.New(server.URL, client.WithTimeout(50*time.Millisecond), client.WithRetries(0)).Events(context.Background(), client.EventsOptions{})
			Expect(err).To(MatchError(context.DeadlineExceeded))
			Expect(err.Error()).To(ContainSubstring("timeout 50ms per attempt"))
		})
	})

	Describe("what a board sends", func() {
		serveStream := func(body string) *client.EventStream {
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer GinkgoRecover()
				Expect(r.Header.Get("Accept")).To(Equal("text/event-stream"))
				w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
				io.WriteString(w, body)
			}))
			DeferCleanup(server.Close)
			return openStream(client.New(server.URL), client.EventsOptions{})
		}

		It("passes an event type it does not know through without a payload, and skips comments", func() {
			stream := serveStream(": hello\n\nid: 41\nevent: lunch_served\ndata: CgJ2Mg==\n\n: heartbeat\n\nid: 42\nevent: cell_changed\ndata: EgMKAWM=\n\n")
			unknown := next(stream)
			Expect(unknown.ID).To(BeEquivalentTo(41))
			Expect(unknown.Type).To(Equal("lunch_served"))
			Expect(unknown.Payload).To(BeNil())
			known := next(stream)
			Expect(known.ID).To(BeEquivalentTo(42))
			Expect(known.Payload.(*models.CellChangedEvent).GetAfter().GetCellId()).To(Equal("c"))
			Expect(nextErr(stream)).To(Equal(client.ErrStreamEnded))
		})

		It("ends a stream on which nothing arrives for IdleTimeout, which heartbeats keep open", func() {
			hung := make(chan struct{})
			DeferCleanup(func() { close(hung) })
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				flusher := w.(http.Flusher)
				// Heartbeats for three idle timeouts, then an event, then
				// silence on a connection that stays open.
				for range 10 {
					io.WriteString(w, ": heartbeat\n\n")
					flusher.Flush()
					time.Sleep(30 * time.Millisecond)
				}
				io.WriteString(w, "id: 9\nevent: cell_changed\ndata: EgMKAWM=\n\n")
				flusher.Flush()
				select {
				case <-hung:
				case <-r.Context().Done():
				}
			}))
			DeferCleanup(server.Close)
			stream := openStream(client.New(server.URL), client.EventsOptions{IdleTimeout: 100 * time.Millisecond})
			Expect(next(stream).ID).To(BeEquivalentTo(9), "heartbeats kept the stream open past its idle timeout")
			err := nextErr(stream)
			Expect(err).To(MatchError(client.ErrStreamEnded))
			Expect(err.Error()).To(Equal("event stream ended: nothing arrived for 100ms, not even a heartbeat"))
			Expect(stream.LastEventID()).To(BeEquivalentTo(9))
		})

		It("reports a payload that does not decode", func() {
			stream := serveStream("id: 7\nevent: cell_changed\ndata: not base64!\n\n")
			_, err := stream.Next()
			Expect(err).To(MatchError(ContainSubstring("cell_changed event 7: data is not base64")))
		})
	})
})
