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
	"github.com/corkboard/corkboard/internal/recent"
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
		if !call.authorizeRoute(w, r, errorOnlyResponse) {
			return
		}
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
		cell := call.who.isCell()
		if !a.subscribers.acquire(call.class, cell) {
			call.fail(w, requestCodec(r), http.StatusServiceUnavailable, errorOnlyResponse, a.subscribers.exhausted(cell))
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
		// Its client's turns at reading the log: one client's streams catching
		// up take turns, other clients' go on (events.logTurn).
		sub := o.hub.SubscribeAs(call.client, lastEventID, filter)
		defer sub.Close()

		stream := newEventStream(w, req.GetProtobuf(), o.eventsWriteTimeout, a.encodedEvents)
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
	encoded      *encodedEvents
	// armed says the write deadline is set for what is being written
	// since the last flush.
	armed bool
}

func newEventStream(w http.ResponseWriter, protobuf bool, writeTimeout time.Duration, encoded *encodedEvents) *eventStream {
	return &eventStream{w: w, controller: http.NewResponseController(w), protobuf: protobuf, writeTimeout: writeTimeout, encoded: encoded}
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
			if err := s.comment("heartbeat"); err != nil {
				return sent, err.Error()
			}

		case e, ok := <-sub.Events():
			if !ok {
				reason := "subscription ended"
				if err := sub.Err(); err != nil {
					reason = err.Error()
				}
				return sent, s.end(reason)
			}
			if err := s.event(e); err != nil {
				return sent, s.ended(err)
			}
			sent++
			// Take what else is ready, then flush once for all of it.
			for waiting := len(sub.Events()); waiting > 0; waiting-- {
				e, ok := <-sub.Events()
				if !ok {
					break
				}
				if err := s.event(e); err != nil {
					return sent, s.ended(err)
				}
				sent++
			}
		}
		if err := s.flush(); err != nil {
			return sent, "write failed: " + err.Error()
		}
	}
}

// errWrite marks a failed write to the client, which ends the stream
// without a comment (it could not be written either).
type errWrite struct{ err error }

func (e errWrite) Error() string { return "write failed: " + e.err.Error() }

// ended is the reason a stream ends on err: a failed write as it is, any
// other (an event that cannot be encoded) after its comment (end).
func (s *eventStream) ended(err error) string {
	var failed errWrite
	if errors.As(err, &failed) {
		return failed.Error()
	}
	return s.end(err.Error())
}

// end ends the stream as every ending does: what was written before (the
// events taken before it) is flushed, then the ": closed: <reason>"
// comment, so a subscriber resumes after the last event it got and knows
// why it must. It returns the reason.
func (s *eventStream) end(reason string) string {
	if s.comment("closed: "+reason) == nil {
		s.flush() //nolint:errcheck // ending anyway
	}
	return reason
}

// event writes one event's frame. Its data, encoded once for every stream
// of this encoding (encodedEvents), goes to the connection as it is rather
// than copied into a buffer of the stream's own: a subscriber that stops
// reading holds a reference to the shared bytes while its write waits for
// the write timeout, not a copy of each event it was sent.
func (s *eventStream) event(e events.Event) error {
	data, err := s.encode(e)
	if err != nil {
		return errors.New("encode " + e.Type + " event: " + err.Error())
	}
	head := make([]byte, 0, 64)
	if e.ID != 0 {
		head = append(head, "id: "...)
		head = strconv.AppendUint(head, e.ID, 10)
		head = append(head, '\n')
	}
	head = append(head, "event: "...)
	head = append(head, e.Type...)
	head = append(head, "\ndata: "...)
	if err := s.write(head); err != nil {
		return err
	}
	if err := s.write(data); err != nil {
		return err
	}
	return s.write(frameEnd)
}

var frameEnd = []byte("\n\n")

// encode renders a payload on one line: single-line protojson (it escapes
// every newline inside strings), or base64; an event of the log is
// encoded once for all the streams that send it (encodedEvents).
func (s *eventStream) encode(e events.Event) ([]byte, error) {
	if e.ID != 0 {
		if data, ok := s.encoded.Get(encodedKey{e.ID, s.protobuf}); ok {
			return data, nil
		}
	}
	var data []byte
	if !s.protobuf {
		var err error
		if data, err = eventData.Marshal(e.Payload); err != nil {
			return nil, err
		}
	} else {
		raw, err := proto.Marshal(e.Payload)
		if err != nil {
			return nil, err
		}
		data = base64.StdEncoding.AppendEncode(nil, raw)
	}
	if e.ID != 0 {
		s.encoded.Put(encodedKey{e.ID, s.protobuf}, data)
	}
	return data, nil
}

func (s *eventStream) comment(text string) error {
	return s.write([]byte(": " + text + "\n\n"))
}

// write writes p to the response, the write deadline set for it when it
// is the first since the last flush.
func (s *eventStream) write(p []byte) error {
	if !s.armed {
		if err := s.controller.SetWriteDeadline(time.Now().Add(s.writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return errWrite{err}
		}
		s.armed = true
	}
	if _, err := s.w.Write(p); err != nil {
		return errWrite{err}
	}
	return nil
}

// flush pushes what was written to the client. A client that does not
// read lets a write or the flush block until the write timeout, which ends
// the stream: the board never waits long on a subscriber.
func (s *eventStream) flush() error {
	if !s.armed {
		if err := s.controller.SetWriteDeadline(time.Now().Add(s.writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
	}
	s.armed = false
	return s.controller.Flush()
}

// sharedEncodings is how many encoded events encodedEvents keeps: enough
// for the streams following live to find the newest ones.
const sharedEncodings = 256

// encodedEvents are the frames' data of the last events encoded, by id
// and encoding, shared by every stream: an event of the log is the same
// for every subscriber, so a few hundred streams encode it once (protojson
// of a desired LRP change with large routes took milliseconds each).
// The bytes are never changed once kept.
type encodedEvents = recent.Map[encodedKey, []byte]

type encodedKey struct {
	id       uint64
	protobuf bool
}

func newEncodedEvents() *encodedEvents {
	return recent.New[encodedKey, []byte](sharedEncodings)
}

// clearDeadline leaves the connection as it found it, for the next request
// on it.
func (s *eventStream) clearDeadline() {
	s.controller.SetWriteDeadline(time.Time{}) //nolint:errcheck // best effort
}
