package handlers_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// frame is one thing read off an event stream: an event (id, event, data)
// or a comment.
type frame struct {
	hasID   bool
	id      uint64
	event   string
	data    string
	comment string
}

// sseStream reads an event stream in the background, frame by frame.
type sseStream struct {
	resp   *http.Response
	frames chan frame
	ended  chan struct{}
	cancel context.CancelFunc
}

// openEvents posts request to the board's events route and returns the
// stream; the answer must be an event stream.
func (b *board) openEvents(request *models.EventsRequest, lastEventID string) *sseStream {
	GinkgoHelper()
	resp, cancel := b.postEvents(request, lastEventID)
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	Expect(resp.Header.Get("Content-Type")).To(Equal("text/event-stream"))
	s := &sseStream{resp: resp, frames: make(chan frame, 10000), ended: make(chan struct{}), cancel: cancel}
	go s.read()
	DeferCleanup(s.close)
	return s
}

// postEvents opens the events route without reading the answer.
func (b *board) postEvents(request *models.EventsRequest, lastEventID string) (*http.Response, context.CancelFunc) {
	GinkgoHelper()
	body, err := b.wire.marshal(request)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.server.URL+models.RouteEvents, bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", b.wire.contentType)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := b.client.Do(req)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		cancel()
		resp.Body.Close()
	})
	return resp, cancel
}

func (s *sseStream) read() {
	defer GinkgoRecover()
	defer close(s.ended)
	defer close(s.frames)
	lines := bufio.NewScanner(s.resp.Body)
	lines.Buffer(nil, 1<<20)
	var f frame
	var inEvent bool
	for lines.Scan() {
		line := lines.Text()
		switch {
		case line == "":
			if inEvent {
				s.frames <- f
			}
			f, inEvent = frame{}, false
		case strings.HasPrefix(line, ":"):
			s.frames <- frame{comment: strings.TrimPrefix(line, ": ")}
		case strings.HasPrefix(line, "id: "):
			id, err := strconv.ParseUint(strings.TrimPrefix(line, "id: "), 10, 64)
			Expect(err).NotTo(HaveOccurred())
			f.hasID, f.id, inEvent = true, id, true
		case strings.HasPrefix(line, "event: "):
			f.event, inEvent = strings.TrimPrefix(line, "event: "), true
		case strings.HasPrefix(line, "data: "):
			Expect(f.data).To(BeEmpty(), "one data line per event")
			f.data, inEvent = strings.TrimPrefix(line, "data: "), true
		default:
			Fail("unexpected line on the event stream: " + line)
		}
	}
}

func (s *sseStream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// nextEvents returns the next n events, skipping comments.
func (s *sseStream) nextEvents(n int) []frame {
	GinkgoHelper()
	var got []frame
	for len(got) < n {
		var f frame
		Eventually(s.frames, 5*time.Second).Should(Receive(&f), "got %d of %d events", len(got), n)
		if f.comment == "" {
			got = append(got, f)
		}
	}
	return got
}

// untilEnd reads to the end of the stream and returns the comments seen.
func (s *sseStream) untilEnd() []string {
	GinkgoHelper()
	Eventually(s.ended, 5*time.Second).Should(BeClosed(), "the stream did not end")
	var comments []string
	for f := range s.frames {
		if f.comment != "" {
			comments = append(comments, f.comment)
		}
	}
	return comments
}

func expectIDs(frames []frame, first uint64) {
	GinkgoHelper()
	for i, f := range frames {
		Expect(f.hasID).To(BeTrue(), "frame %d has an id", i)
		Expect(f.id).To(Equal(first+uint64(i)), "frame %d", i)
	}
}

func decodeJSON(f frame) proto.Message {
	GinkgoHelper()
	payload := models.NewEventPayload(f.event)
	Expect(payload).NotTo(BeNil(), "unknown event %q", f.event)
	Expect(protojson.Unmarshal([]byte(f.data), payload)).To(Succeed(), f.data)
	return payload
}

// endReasons are the reasons logged for the event streams that ended.
func endReasons(b *board) []string {
	var reasons []string
	for _, l := range logsWith(b.logger.Logs(), "route", models.RouteEvents) {
		if reason, ok := l.Data["ended"].(string); ok {
			reasons = append(reasons, reason)
		}
	}
	return reasons
}

func actualEvent(guid string, index int32) models.Event {
	return models.ActualLRPCreated(&models.ActualLRP{ProcessGuid: guid, Index: index, State: models.ActualLRP_UNCLAIMED})
}

func publishActual(hub *events.Hub, guid string, n int) {
	for i := range n {
		hub.Publish(actualEvent(guid, int32(i)))
	}
}

func indexIn(f frame) int32 {
	GinkgoHelper()
	return decodeJSON(f).(*models.ActualLRPCreatedEvent).GetActualLrp().GetIndex()
}

var _ = Describe("The event stream", func() {
	var hub *events.Hub

	BeforeEach(func() {
		hub = events.NewHub(events.WithHistory(1000))
		DeferCleanup(hub.Close)
	})

	eventsBoard := func(wire wireCodec, opts ...handlers.Option) *board {
		return newBoardWith(stores[testdb.SQLite], wire, append([]handlers.Option{handlers.WithEvents(hub)}, opts...)...)
	}

	for _, wire := range wires {
		Describe("requested in "+wire.name, func() {
			var b *board

			BeforeEach(func() {
				b = eventsBoard(wire)
			})

			It("streams published events with their ids, names and protojson payloads", func() {
				stream := b.openEvents(&models.EventsRequest{}, "")
				Expect(stream.resp.Header.Get("Cache-Control")).To(Equal("no-cache"))
				Expect(stream.resp.Header.Get("X-Request-Id")).NotTo(BeEmpty())

				desired := &models.DesiredLRP{ProcessGuid: "web", Domain: "apps", Instances: 2, Annotation: "line one\nline two"}
				before := &models.ActualLRP{ProcessGuid: "web", Index: 0, State: models.ActualLRP_UNCLAIMED}
				after := &models.ActualLRP{ProcessGuid: "web", Index: 0, State: models.ActualLRP_RUNNING, CellId: "cell-1"}
				cell := &models.Cell{CellId: "cell-1", Zone: "z1", Present: true}
				hub.Publish(models.DesiredLRPCreated(desired), models.ActualLRPChanged(before, after))
				hub.Publish(models.CellChanged(nil, cell))

				got := stream.nextEvents(3)
				expectIDs(got, hub.LastID()-2)
				Expect([]string{got[0].event, got[1].event, got[2].event}).To(Equal([]string{"desired_lrp_created", "actual_lrp_changed", "cell_changed"}))
				Expect(got[0].data).To(ContainSubstring(`"process_guid":`), "proto field names")
				Expect(proto.Equal(decodeJSON(got[0]), &models.DesiredLRPCreatedEvent{DesiredLrp: desired})).To(BeTrue(), "a newline in a string stays inside the one data line")
				Expect(proto.Equal(decodeJSON(got[1]), &models.ActualLRPChangedEvent{Before: before, After: after})).To(BeTrue())
				Expect(proto.Equal(decodeJSON(got[2]), &models.CellChangedEvent{After: cell})).To(BeTrue())
			})

			It("streams only the types asked for", func() {
				stream := b.openEvents(&models.EventsRequest{Types: []string{models.EventCellChanged}}, "")
				hub.Publish(actualEvent("web", 0), models.CellChanged(nil, &models.Cell{CellId: "a"}), actualEvent("web", 1), models.CellChanged(nil, &models.Cell{CellId: "b"}))
				got := stream.nextEvents(2)
				Expect(got[0].event).To(Equal("cell_changed"))
				Expect(got[1].event).To(Equal("cell_changed"))
				Expect(got[1].id).To(Equal(hub.LastID()))
				Expect(got[0].id).To(Equal(hub.LastID() - 2))
			})

			It("sends base64 protobuf payloads when asked", func() {
				stream := b.openEvents(&models.EventsRequest{Protobuf: true}, "")
				lrp := &models.ActualLRP{ProcessGuid: "web", Index: 3, State: models.ActualLRP_CRASHED, CrashCount: 2, CrashReason: "exit 1"}
				hub.Publish(models.ActualLRPCrashed(lrp))

				got := stream.nextEvents(1)[0]
				Expect(got.event).To(Equal("actual_lrp_crashed"))
				raw, err := base64.StdEncoding.DecodeString(got.data)
				Expect(err).NotTo(HaveOccurred(), got.data)
				payload := &models.ActualLRPCrashedEvent{}
				Expect(proto.Unmarshal(raw, payload)).To(Succeed())
				Expect(proto.Equal(payload, &models.ActualLRPCrashedEvent{ActualLrp: lrp, CrashCount: 2, CrashReason: "exit 1"})).To(BeTrue())
			})

			It("resumes after the Last-Event-ID on a reconnect", func() {
				stream := b.openEvents(&models.EventsRequest{}, "")
				publishActual(hub, "web", 5)
				seen := stream.nextEvents(3)
				stream.close()
				hub.Publish(actualEvent("web", 5), actualEvent("web", 6))

				again := b.openEvents(&models.EventsRequest{}, strconv.FormatUint(seen[2].id, 10))
				got := again.nextEvents(4)
				expectIDs(got, seen[2].id+1)
				Expect([]int32{indexIn(got[0]), indexIn(got[1]), indexIn(got[2]), indexIn(got[3])}).To(Equal([]int32{3, 4, 5, 6}))

				hub.Publish(actualEvent("web", 7))
				Expect(indexIn(again.nextEvents(1)[0])).To(BeEquivalentTo(7))
			})

			It("starts with events_lost, without an id, when the Last-Event-ID is older than the history", func() {
				small := events.NewHub(events.WithHistory(5))
				DeferCleanup(small.Close)
				sb := newBoardWith(stores[testdb.SQLite], wire, handlers.WithEvents(small))
				publishActual(small, "web", 10)
				oldest := small.LastID() - 4

				stream := sb.openEvents(&models.EventsRequest{Types: []string{models.EventActualLRPCreated}}, strconv.FormatUint(oldest-3, 10))
				got := stream.nextEvents(6)
				Expect(got[0].event).To(Equal("events_lost"))
				Expect(got[0].hasID).To(BeFalse())
				Expect(proto.Equal(decodeJSON(got[0]), &models.EventsLostEvent{LastEventId: oldest - 3, OldestKeptId: oldest})).To(BeTrue())
				expectIDs(got[1:], oldest)
				Expect(indexIn(got[1])).To(BeEquivalentTo(5))
			})
		})
	}

	It("cuts off a subscriber that falls behind the history, while publishing goes on", func() {
		small := events.NewHub(events.WithHistory(10))
		DeferCleanup(small.Close)
		b := newBoardWith(stores[testdb.SQLite], jsonWire, handlers.WithEvents(small))
		behind := b.openEvents(&models.EventsRequest{}, "")

		burst := make([]models.Event, 1000)
		for i := range burst {
			burst[i] = actualEvent("web", int32(i))
		}
		small.Publish(burst...)

		Expect(behind.untilEnd()).To(ContainElement(HavePrefix("closed: subscriber fell behind: ")))
		Eventually(small.Subscribers).Should(BeZero())

		fresh := b.openEvents(&models.EventsRequest{}, "")
		small.Publish(actualEvent("web", 1000))
		Expect(indexIn(fresh.nextEvents(1)[0])).To(BeEquivalentTo(1000))

		Expect(endReasons(b)).To(ContainElement(HavePrefix("subscriber fell behind: ")))
	})

	It("cuts off a client that stops reading once a write blocks longer than the write timeout", func() {
		b := eventsBoard(jsonWire, handlers.WithEventsWriteTimeout(100*time.Millisecond))
		resp, _ := b.postEvents(&models.EventsRequest{}, "")
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Eventually(hub.Subscribers).Should(Equal(1))

		// The same large event over and over, never read: the connection's
		// buffers fill, a write blocks, and the board gives up on it.
		big := models.DesiredLRPCreated(&models.DesiredLRP{ProcessGuid: "web", Annotation: strings.Repeat("x", 64*1024)})
		Eventually(func() int {
			for range 10 {
				hub.Publish(big)
			}
			return hub.Subscribers()
		}, 20*time.Second, 5*time.Millisecond).Should(BeZero())

		Eventually(func() []string { return endReasons(b) }).Should(ContainElement(HavePrefix("write failed: ")))
	})

	It("sends heartbeat comments while idle", func() {
		b := eventsBoard(jsonWire, handlers.WithEventsHeartbeat(10*time.Millisecond))
		stream := b.openEvents(&models.EventsRequest{}, "")
		Eventually(stream.frames).Should(Receive(Equal(frame{comment: "heartbeat"})))
		Eventually(stream.frames).Should(Receive(Equal(frame{comment: "heartbeat"})))
	})

	It("ends, and unsubscribes, when the client goes away", func() {
		b := eventsBoard(jsonWire)
		stream := b.openEvents(&models.EventsRequest{}, "")
		Eventually(hub.Subscribers).Should(Equal(1))
		stream.close()
		Eventually(hub.Subscribers).Should(BeZero())
		Eventually(func() []string { return endReasons(b) }).Should(ContainElement("client went away"))
	})

	It("sends the events taken before one it cannot encode, then ends with a comment naming it", func() {
		b := eventsBoard(jsonWire)
		stream := b.openEvents(&models.EventsRequest{}, "")
		Eventually(hub.Subscribers).Should(Equal(1))
		// Invalid UTF-8 in a string: no encoding can render it.
		bad := models.ActualLRPCrashed(&models.ActualLRP{ProcessGuid: "web", State: models.ActualLRP_CRASHED, CrashReason: "\xff"})
		hub.Publish(actualEvent("web", 0), actualEvent("web", 1), bad)
		Expect(indexIn(stream.nextEvents(1)[0])).To(BeEquivalentTo(0))
		Expect(indexIn(stream.nextEvents(1)[0])).To(BeEquivalentTo(1))
		Expect(stream.untilEnd()).To(ContainElement(HavePrefix("closed: encode actual_lrp_crashed event: ")))
	})

	It("ends with a comment saying so when the hub closes", func() {
		b := eventsBoard(jsonWire)
		stream := b.openEvents(&models.EventsRequest{}, "")
		hub.Close()
		Expect(stream.untilEnd()).To(ContainElement("closed: event hub closed"))
	})

	It("is counted by outcome, but not timed: a stream's length is no latency", func() {
		b := eventsBoard(jsonWire)
		stream := b.openEvents(&models.EventsRequest{}, "")
		stream.close()
		Eventually(func() float64 { return b.counter(models.RouteEvents, "success") }).Should(BeEquivalentTo(1))
		Expect(b.latencySamples(models.RouteEvents)).To(BeZero())
	})

	Describe("refusals, answered as an error and no stream", func() {
		expectRefused := func(resp *http.Response, want models.Error_Type, field string) {
			GinkgoHelper()
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			Expect(resp.Header.Get("Content-Type")).To(Equal(models.ContentTypeJSON))
			body, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			answer := &models.PingResponse{}
			Expect(protojson.Unmarshal(body, answer)).To(Succeed(), string(body))
			Expect(answer.GetError().GetType()).To(Equal(want))
			Expect(answer.GetError().GetMessage()).To(HavePrefix(field + ": "))
			Expect(hub.Subscribers()).To(BeZero())
		}

		It("refuses an unknown event type naming it", func() {
			b := eventsBoard(jsonWire)
			resp, _ := b.postEvents(&models.EventsRequest{Types: []string{"cell_changed", "lunch_served"}}, "")
			expectRefused(resp, models.Error_InvalidRequest, "types[1]")
			Expect(b.counter(models.RouteEvents, "InvalidRequest")).To(BeEquivalentTo(1))
		})

		It("refuses a Last-Event-ID that is not a number", func() {
			b := eventsBoard(jsonWire)
			resp, _ := b.postEvents(&models.EventsRequest{}, "yesterday")
			expectRefused(resp, models.Error_InvalidRequest, "Last-Event-ID")
		})

		It("is Unavailable on a board without a hub", func() {
			b := newBoardWith(stores[testdb.SQLite], jsonWire)
			resp, _ := b.postEvents(&models.EventsRequest{}, "")
			expectRefused(resp, models.Error_Unavailable, "events")
		})
	})
})
