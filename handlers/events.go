package handlers

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/internal/admission"
	"github.com/corkboard/corkboard/models"
)

// ContentTypeEventStream is the type of an event stream answer.
const ContentTypeEventStream = "text/event-stream"

// LastEventIDHeader resumes an event stream after the event with that id.
const LastEventIDHeader = "Last-Event-ID"

// eventData is how event payloads are written as JSON: like every JSON
// answer, with the proto field names.
var eventData = protojson.MarshalOptions{UseProtoNames: true}

// serveEvents streams events as Server-Sent Events. The request is an
// EventsRequest like any other body; a bad one, one the caller may not
// make, or a bad Last-Event-ID header, is answered with an ordinary error
// response (its `error` in field 1) and no stream; so is a subscriber
// beyond WithMaxEventSubscribers, with HTTP 503. Otherwise the answer is text/event-stream:
//
//	id: 18342
//	event: actual_lrp_changed
//	data: {"before":{...},"after":{...}}
//
// id is the event's position in the event log the database keeps, the
// same on every board: a client resumes on any board with the last id it
// saw. data is protojson, or base64 protobuf when the request asks for it.
// events_lost carries no id, so that a client's Last-Event-ID stays the last
// real event it saw. The stream is flushed whenever no further event is
// waiting, carries a ": heartbeat" comment when idle, and ends when the
// client goes away, when a write blocks longer than the write timeout, or
// when the subscription ends (the board shuts down, or the event log could
// not be read), after a ": closed: <reason>" comment.
func (a *api) serveEvents(o options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := a.begin(w, r, models.RouteEvents)
		// The body first, so that one still arriving holds no
		// subscriber's place. A subscriber holds its place for as long as
		// its stream lasts; the request that would be one too many is
		// refused before anything else. 503, not 200: a 200 would say a
		// stream follows.
		if !call.readBodyFirst(w, r, http.StatusServiceUnavailable, errorOnlyResponse) {
			return
		}
		// The client's own cap first: one client that opens streams and
		// never reads them takes its share, not the board's.
		streaming, refused := a.admissions.take(admission.EventStream, call.client, call.class, false)
		if refused != nil {
			call.fail(w, requestCodec(r), http.StatusServiceUnavailable, errorOnlyResponse, refused)
			return
		}
		defer streaming.release()
		if !a.subscribers.acquire(call.class) {
			call.fail(w, requestCodec(r), http.StatusServiceUnavailable, errorOnlyResponse, a.subscribers.exhausted())
			return
		}
		defer a.subscribers.release(call.class)

		req := &models.EventsRequest{}
		cd, ok := call.decode(w, r, req, errorOnlyResponse)
		if !ok {
			return
		}
		if !call.authorize(call.context(r), w, cd, req, errorOnlyResponse) {
			return
		}
		lastEventID, err := parseLastEventID(r.Header.Get(LastEventIDHeader))
		if err != nil {
			call.fail(w, cd, http.StatusOK, errorOnlyResponse, err)
			return
		}
		if o.hub == nil {
			unavailable := models.NewError(models.Error_Unavailable, "events: this board streams no events")
			call.fail(w, cd, http.StatusOK, errorOnlyResponse, unavailable)
			return
		}

		// Subscribe before the headers go out: a client that has them
		// misses nothing published after. A cell sees only what concerns
		// it, as it lists only its own rows.
		filter := events.Filter{Types: req.GetTypes()}
		if call.who.checked && call.who.identity.Role == models.RoleCell {
			filter.CellID = call.who.identity.CellID
		}
		sub := o.hub.Subscribe(lastEventID, filter)
		defer sub.Close()

		stream := newEventStream(w, req.GetProtobuf(), o.eventsWriteTimeout)
		defer stream.clearDeadline()
		w.Header().Set("Content-Type", ContentTypeEventStream)
		w.Header().Set("Cache-Control", "no-cache")
		// Tells nginx-style proxies not to hold events back in a buffer.
		w.Header().Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)

		sent, ended := stream.run(r, sub, o.eventsHeartbeat)
		call.record(http.StatusOK, nil, lager.Data{"events_sent": sent, "ended": ended, "last_event_id": lastEventID})
	})
}

func parseLastEventID(header string) (uint64, *models.Error) {
	if header == "" {
		return 0, nil
	}
	id, err := strconv.ParseUint(header, 10, 64)
	if err != nil {
		return 0, models.ErrInvalidField(LastEventIDHeader, "must be a decimal event id, got "+strconv.Quote(header))
	}
	return id, nil
}

// eventStream writes SSE frames to one response.
type eventStream struct {
	w            http.ResponseWriter
	controller   *http.ResponseController
	protobuf     bool
	writeTimeout time.Duration
	pending      []byte
}

func newEventStream(w http.ResponseWriter, protobuf bool, writeTimeout time.Duration) *eventStream {
	return &eventStream{w: w, controller: http.NewResponseController(w), protobuf: protobuf, writeTimeout: writeTimeout}
}

// run copies events to the client until the stream ends, and says how
// many it sent and why it ended.
func (s *eventStream) run(r *http.Request, sub *events.Subscription, heartbeatInterval time.Duration) (int, string) {
	if err := s.flush(); err != nil {
		return 0, "write failed: " + err.Error()
	}
	heartbeat := time.NewTicker(heartbeatInterval)
	defer heartbeat.Stop()
	sent := 0
	for {
		select {
		case <-r.Context().Done():
			return sent, "client went away"

		case <-heartbeat.C:
			s.comment("heartbeat")

		case e, ok := <-sub.Events():
			if !ok {
				reason := "subscription ended"
				if err := sub.Err(); err != nil {
					reason = err.Error()
				}
				return sent, s.end(reason)
			}
			if err := s.event(e); err != nil {
				return sent, s.end(err.Error())
			}
			sent++
			// Take what else is ready, then flush once for all of it.
			for waiting := len(sub.Events()); waiting > 0; waiting-- {
				e, ok := <-sub.Events()
				if !ok {
					break
				}
				if err := s.event(e); err != nil {
					return sent, s.end(err.Error())
				}
				sent++
			}
		}
		if err := s.flush(); err != nil {
			return sent, "write failed: " + err.Error()
		}
	}
}

// end ends the stream as every ending does: what is pending (the events
// taken before it) is sent, then the ": closed: <reason>" comment, so a
// subscriber resumes after the last event it got and knows why it must.
// It returns the reason.
func (s *eventStream) end(reason string) string {
	s.comment("closed: " + reason)
	s.flush() //nolint:errcheck // ending anyway
	return reason
}

func (s *eventStream) event(e events.Event) error {
	data, err := s.encode(e.Payload)
	if err != nil {
		return errors.New("encode " + e.Type + " event: " + err.Error())
	}
	if e.ID != 0 {
		s.pending = append(s.pending, "id: "...)
		s.pending = strconv.AppendUint(s.pending, e.ID, 10)
		s.pending = append(s.pending, '\n')
	}
	s.pending = append(s.pending, "event: "...)
	s.pending = append(s.pending, e.Type...)
	s.pending = append(s.pending, "\ndata: "...)
	s.pending = append(s.pending, data...)
	s.pending = append(s.pending, "\n\n"...)
	return nil
}

// encode renders a payload on one line: single-line protojson (it escapes
// every newline inside strings), or base64.
func (s *eventStream) encode(payload proto.Message) ([]byte, error) {
	if !s.protobuf {
		return eventData.Marshal(payload)
	}
	raw, err := proto.Marshal(payload)
	if err != nil {
		return nil, err
	}
	return base64.StdEncoding.AppendEncode(nil, raw), nil
}

func (s *eventStream) comment(text string) {
	s.pending = append(s.pending, ": "...)
	s.pending = append(s.pending, text...)
	s.pending = append(s.pending, "\n\n"...)
}

// flush writes what is pending and pushes it to the client. A client that
// does not read lets the write block until the write timeout, which ends
// the stream: the board never waits long on a subscriber.
func (s *eventStream) flush() error {
	if err := s.controller.SetWriteDeadline(time.Now().Add(s.writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if len(s.pending) > 0 {
		if _, err := s.w.Write(s.pending); err != nil {
			return err
		}
		s.pending = s.pending[:0]
	}
	return s.controller.Flush()
}

// clearDeadline leaves the connection as it found it, for the next request
// on it.
func (s *eventStream) clearDeadline() {
	s.controller.SetWriteDeadline(time.Time{}) //nolint:errcheck // best effort
}
