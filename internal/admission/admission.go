// Package admission decides whether the board takes on one more request,
// one more whole-list stream, one more event stream or one more body to
// read, given what is in use, who asks and the limits. It holds no state: the handlers count and
// ask; the decision lives here, in one place, with its table test.
//
// The rules:
//   - A caller (one client certificate with TLS, one remote address on
//     plain HTTP) has its own caps on bodies it has arriving, requests it
//     has in flight, whole-list streams and event streams it has open, so
//     that one client cannot take more than its share of the board however
//     many connections it opens (the board's cap on event streams, which
//     every rep needs one of, is the handlers').
//   - Of the board's requests in flight, ReservedForCells are for cell
//     calls only (a rep's registration and heartbeat, bulk report,
//     lifecycle and occupancy calls): no flood of API calls can stop a
//     heartbeat, and so make the board judge a healthy cell lost.
//   - Bodies are read before a request counts as in flight (the handlers
//     do that): a client trickling a body holds only its own body-reader
//     places, never the board's in-flight ones.
package admission

import "fmt"

// Names of the limits, as refusals and metrics name them.
const (
	// RequestsInFlight is the board's bound on the requests it serves at
	// once (event streams aside).
	RequestsInFlight = "requests_in_flight"
	// RequestsPerClient bounds one caller's requests in flight.
	RequestsPerClient = "requests_per_client"
	// ListStreamsPerClient bounds one caller's list calls in flight:
	// whole-list streams and pages alike.
	ListStreamsPerClient = "list_streams_per_client"
	// BodyReadersPerClient bounds one caller's requests whose bodies are
	// still arriving.
	BodyReadersPerClient = "body_readers_per_client"
	// EventStreamsPerClient bounds one caller's open event streams.
	EventStreamsPerClient = "event_streams_per_client"
)

// Defaults a deployment gets unless its config says otherwise.
const (
	DefaultRequestsInFlight = 1000
	// DefaultReservedForCells leaves a fifth of the board to the cells:
	// a rep has one or two calls in flight, so 200 places carry a hundred
	// cells heartbeating and reporting at once while API clients hold
	// every other place.
	DefaultReservedForCells = 200
	// DefaultRequestsPerClient lets one certificate (Cloud Controller's
	// workers share one) use a quarter of the board.
	DefaultRequestsPerClient = 250
	// DefaultListStreamsPerClient: a client syncing lists reads a few at
	// once; each list call holds a page (up to 500 items, or its limit)
	// in memory until the client has read it.
	DefaultListStreamsPerClient = 10
	// DefaultBodyReadersPerClient: bodies are at most 1 MiB and arrive in
	// milliseconds from a healthy client, so 100 at once is a client with
	// 100 requests starting together.
	DefaultBodyReadersPerClient = 100
	// DefaultEventStreamsPerClient: a rep holds one stream, a router or
	// another follower a few; a tenth of the board's 1,000 streams, so
	// that one client that opens and never reads them leaves the rest to
	// the cells and everyone else.
	DefaultEventStreamsPerClient = 100
)

// Limits are the caps the decisions apply. Every value is positive, and
// ReservedForCells is below RequestsInFlight (Check says so).
type Limits struct {
	RequestsInFlight      int
	ReservedForCells      int
	RequestsPerClient     int
	ListStreamsPerClient  int
	BodyReadersPerClient  int
	EventStreamsPerClient int
}

// DefaultLimits are the defaults above.
func DefaultLimits() Limits {
	return Limits{
		RequestsInFlight:      DefaultRequestsInFlight,
		ReservedForCells:      DefaultReservedForCells,
		RequestsPerClient:     DefaultRequestsPerClient,
		ListStreamsPerClient:  DefaultListStreamsPerClient,
		BodyReadersPerClient:  DefaultBodyReadersPerClient,
		EventStreamsPerClient: DefaultEventStreamsPerClient,
	}
}

// Check says what is wrong with l, naming the field, or nil.
func (l Limits) Check() error {
	switch {
	case l.RequestsInFlight < 1:
		return fmt.Errorf("RequestsInFlight: must be at least 1, got %d", l.RequestsInFlight)
	case l.ReservedForCells < 0 || l.ReservedForCells >= l.RequestsInFlight:
		return fmt.Errorf("ReservedForCells: must be from 0 to RequestsInFlight-1 (%d), got %d", l.RequestsInFlight-1, l.ReservedForCells)
	case l.RequestsPerClient < 1:
		return fmt.Errorf("RequestsPerClient: must be at least 1, got %d", l.RequestsPerClient)
	case l.ListStreamsPerClient < 1:
		return fmt.Errorf("ListStreamsPerClient: must be at least 1, got %d", l.ListStreamsPerClient)
	case l.BodyReadersPerClient < 1:
		return fmt.Errorf("BodyReadersPerClient: must be at least 1, got %d", l.BodyReadersPerClient)
	case l.EventStreamsPerClient < 1:
		return fmt.Errorf("EventStreamsPerClient: must be at least 1, got %d", l.EventStreamsPerClient)
	}
	return nil
}

// Stage is what a caller asks a place for.
type Stage int

const (
	// Body: reading a request's body.
	Body Stage = iota
	// Request: serving a request whose body has been read.
	Request
	// ListStream: answering a list call, a whole list or a page, on top
	// of the request's place.
	ListStream
	// EventStream: serving an event stream, for as long as it lasts.
	EventStream
)

// InUse is what is taken, before the place asked for: on the whole board
// and by the caller asking.
type InUse struct {
	Board  int
	Client int
}

// Decide says whether a caller may take one more place of stage, and
// when not, the name of the limit that refuses it ("" admits). cellCall
// says the request is a cell's own call (see the package comment), which
// may use the places reserved for cells.
func Decide(l Limits, stage Stage, cellCall bool, used InUse) string {
	switch stage {
	case Body:
		if used.Client >= l.BodyReadersPerClient {
			return BodyReadersPerClient
		}
	case Request:
		if used.Client >= l.RequestsPerClient {
			return RequestsPerClient
		}
		capacity := l.RequestsInFlight
		if !cellCall {
			capacity -= l.ReservedForCells
		}
		if used.Board >= capacity {
			return RequestsInFlight
		}
	case ListStream:
		if used.Client >= l.ListStreamsPerClient {
			return ListStreamsPerClient
		}
	case EventStream:
		if used.Client >= l.EventStreamsPerClient {
			return EventStreamsPerClient
		}
	}
	return ""
}

// Refusal is the message of a ResourceExhausted answer for limit, which
// Decide returned, naming it and its value.
func Refusal(l Limits, limit string, cellCall bool) string {
	switch limit {
	case RequestsInFlight:
		if cellCall || l.ReservedForCells == 0 {
			return fmt.Sprintf("%s: the board serves at most %d requests (event streams aside) at once; retry later", limit, l.RequestsInFlight)
		}
		return fmt.Sprintf("%s: the board serves at most %d requests (event streams aside) at once, %d of them kept for cells; retry later", limit, l.RequestsInFlight, l.ReservedForCells)
	case RequestsPerClient:
		return fmt.Sprintf("%s: the board serves at most %d requests at once to one client; retry later", limit, l.RequestsPerClient)
	case ListStreamsPerClient:
		return fmt.Sprintf("%s: the board answers at most %d list calls (whole lists or pages) at once to one client; retry once one has been read", limit, l.ListStreamsPerClient)
	case BodyReadersPerClient:
		return fmt.Sprintf("%s: the board reads at most %d request bodies at once from one client; retry later", limit, l.BodyReadersPerClient)
	case EventStreamsPerClient:
		return fmt.Sprintf("%s: the board serves at most %d event streams at once to one client; retry later", limit, l.EventStreamsPerClient)
	}
	return limit + ": limit reached; retry later"
}
