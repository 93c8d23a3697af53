package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// ErrStreamEnded is returned by EventStream.Next when the board ended the
// stream or the connection broke; the error says why when the board said.
// Open a new stream with the stream's LastEventID to resume.
var ErrStreamEnded = errors.New("event stream ended")

// maxErrorAnswer bounds how much of a refusal to open a stream is read.
const maxErrorAnswer = 1 << 20

// EventsOptions says which events to stream and from where.
type EventsOptions struct {
	// Types narrows the stream to these event types (models.EventCellChanged
	// and so on); empty means every type.
	Types []string
	// LastEventID resumes after the event with this id; 0 starts with the
	// next event published. When the board no longer keeps what followed
	// that id, the stream starts with an events_lost event.
	LastEventID uint64
	// IdleTimeout, when above 0, takes a stream on which nothing at all
	// arrives for this long (no event, not even the heartbeat comment a
	// board sends an idle stream every 15 s by default) for broken: Next
	// then returns ErrStreamEnded. A connection can die without either end
	// learning of it (a cut network path, a stalled proxy), and a stream
	// that only waits would wait forever. Set it to a few heartbeats.
	IdleTimeout time.Duration
}

// errStreamIdle is why a stream past its IdleTimeout ends.
type errStreamIdle struct{ timeout time.Duration }

func (e errStreamIdle) Error() string {
	return fmt.Sprintf("nothing arrived for %s, not even a heartbeat", e.timeout)
}

// Event is one event from the board.
type Event struct {
	// ID orders the events; 0 for events_lost, which is not one of them.
	ID uint64
	// Type is the event type, e.g. models.EventActualLRPChanged.
	Type string
	// Payload is the decoded payload, of the type models.NewEventPayload
	// gives for Type (e.g. *models.ActualLRPChangedEvent); nil for a type
	// this client does not know, from a newer board.
	Payload proto.Message
}

// EventStream is an open event stream. Read it with Next; Close it when
// done. It is not safe for concurrent use.
type EventStream struct {
	body   io.ReadCloser
	lines  *bufio.Reader
	ctx    context.Context
	cancel context.CancelCauseFunc
	lastID uint64
	// idle cuts the stream once nothing arrived for idleTimeout; nil
	// without an IdleTimeout.
	idle        *time.Timer
	idleTimeout time.Duration
	// reason is what the board said when it ended the stream.
	reason string
}

// Events opens the event stream. Opening is retried after a transport
// failure, like a read; the client's timeout bounds each attempt to open,
// not the stream, which lasts until ctx ends or Close. Payloads travel as
// protobuf and are decoded by type.
func (c *Client) Events(ctx context.Context, opts EventsOptions) (*EventStream, error) {
	body, err := proto.Marshal(&models.EventsRequest{Types: opts.Types, Protobuf: true})
	if err != nil {
		return nil, fmt.Errorf("encode %s request: %w", models.RouteEvents, err)
	}
	var stream *EventStream
	err = c.withRetries(ctx, safeToRepeat, func() error {
		var err error
		stream, err = c.openEvents(ctx, body, opts.LastEventID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if opts.IdleTimeout > 0 {
		stream.idleTimeout = opts.IdleTimeout
		stream.idle = time.AfterFunc(opts.IdleTimeout, func() {
			stream.cancel(errStreamIdle{opts.IdleTimeout})
		})
	}
	return stream, nil
}

func (c *transport) openEvents(ctx context.Context, body []byte, lastEventID uint64) (*EventStream, error) {
	route := models.RouteEvents
	streamCtx, cancel := context.WithCancelCause(ctx)
	req, err := http.NewRequestWithContext(streamCtx, http.MethodPost, c.baseURL+route, bytes.NewReader(body))
	if err != nil {
		cancel(nil)
		return nil, fmt.Errorf("build %s request: %w", route, err)
	}
	req.Header.Set("Content-Type", models.ContentTypeProtobuf)
	req.Header.Set("Accept", contentTypeEventStream)
	c.setHeaders(req)
	if lastEventID != 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(lastEventID, 10))
	}

	// The timeout is for the board to answer; the stream itself lasts.
	stopTimer := func() bool { return true }
	if c.timeout > 0 {
		timer := time.AfterFunc(c.timeout, func() {
			cancel(fmt.Errorf("%w (timeout %s per attempt)", context.DeadlineExceeded, c.timeout))
		})
		stopTimer = timer.Stop
	}
	httpResp, err := c.httpClient.Do(req)
	if !stopTimer() && err == nil {
		// The timeout struck just as the answer came: the stream is
		// already cancelled.
		httpResp.Body.Close()
		err = context.Cause(streamCtx)
	}
	if err != nil {
		if cause := context.Cause(streamCtx); ctx.Err() == nil && cause != nil {
			err = cause
		}
		cancel(nil)
		return nil, classify(ctx, err)
	}
	if !isEventStream(httpResp) {
		defer cancel(nil)
		defer httpResp.Body.Close()
		return nil, refusal(route, httpResp)
	}
	return &EventStream{
		body:   httpResp.Body,
		lines:  bufio.NewReader(httpResp.Body),
		ctx:    streamCtx,
		cancel: cancel,
		lastID: lastEventID,
	}, nil
}

const contentTypeEventStream = "text/event-stream"

func isEventStream(resp *http.Response) bool {
	mediaType, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return err == nil && mediaType == contentTypeEventStream && resp.StatusCode == http.StatusOK
}

// refusal reads the board's answer when it did not open a stream: a typed
// error like any call's, or an HTTP status error.
func refusal(route string, httpResp *http.Response) error {
	answer, err := io.ReadAll(io.LimitReader(httpResp.Body, maxErrorAnswer))
	if err != nil {
		return fmt.Errorf("read %s response: %w", route, err)
	}
	// Every answer has its error in field 1; PingResponse is the smallest.
	err = decode(route, httpResp, answer, &models.PingResponse{})
	if err == nil {
		return fmt.Errorf("%s: board answered %s instead of an event stream", route, httpResp.Header.Get("Content-Type"))
	}
	return err
}

// Next blocks until the next event and returns it. When the stream ends it
// returns ErrStreamEnded (wrapped, with the board's reason when it gave
// one, or the IdleTimeout that passed), or the context's error when the
// context ended or Close was called.
func (s *EventStream) Next() (Event, error) {
	var id, eventType string
	var data []string
	for {
		line, err := s.lines.ReadString('\n')
		if err != nil {
			return Event{}, s.ended(err)
		}
		if s.idle != nil {
			s.idle.Reset(s.idleTimeout)
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if eventType == "" && data == nil {
				continue
			}
			return s.event(id, eventType, strings.Join(data, "\n"))
		}
		if comment, ok := strings.CutPrefix(line, ":"); ok {
			if reason, closing := strings.CutPrefix(strings.TrimPrefix(comment, " "), "closed: "); closing {
				s.reason = reason
			}
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			id = value
		case "event":
			eventType = value
		case "data":
			data = append(data, value)
		}
	}
}

func (s *EventStream) event(id, eventType, data string) (Event, error) {
	e := Event{Type: eventType}
	if id != "" {
		parsed, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			return Event{}, fmt.Errorf("event stream: bad id %q: %w", id, err)
		}
		e.ID = parsed
		s.lastID = parsed
	}
	payload := models.NewEventPayload(eventType)
	if payload == nil {
		return e, nil
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return Event{}, fmt.Errorf("event stream: %s event %d: data is not base64: %w", eventType, e.ID, err)
	}
	if err := proto.Unmarshal(raw, payload); err != nil {
		return Event{}, fmt.Errorf("event stream: %s event %d: %w", eventType, e.ID, err)
	}
	e.Payload = payload
	return e, nil
}

func (s *EventStream) ended(err error) error {
	var idle errStreamIdle
	if cause := context.Cause(s.ctx); errors.As(cause, &idle) {
		return fmt.Errorf("%w: %w", ErrStreamEnded, cause)
	}
	if ctxErr := s.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	switch {
	case s.reason != "":
		return fmt.Errorf("%w: %s", ErrStreamEnded, s.reason)
	case errors.Is(err, io.EOF):
		return ErrStreamEnded
	default:
		return fmt.Errorf("%w: %w", ErrStreamEnded, err)
	}
}

// LastEventID is the id of the last event Next returned (events_lost
// aside), or the id the stream was opened with before any; open a new
// stream with it to resume where this one ended.
func (s *EventStream) LastEventID() uint64 {
	return s.lastID
}

// Close ends the stream.
func (s *EventStream) Close() error {
	if s.idle != nil {
		s.idle.Stop()
	}
	s.cancel(nil)
	return s.body.Close()
}
