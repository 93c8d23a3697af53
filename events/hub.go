// Package events is the board's event hub. Every change is appended to the
// event log in the database by the transaction that makes it (db/sqldb);
// a Tailer on each board reads the log and appends what it finds to the
// board's hub, and subscribers (the SSE handler, one per stream) read from
// the hub in log order. So any board's stream carries every board's
// writes, numbered by their log positions, and a client resumes on any
// board with the last position it saw.
//
// The hub keeps the newest events in a ring, the history, and that ring is
// also every subscriber's buffer: a subscriber is a cursor into it, moved
// on by its own goroutine. Appending therefore costs a slot in the ring
// and a wake-up per subscriber, whatever the subscribers do. A subscriber
// whose cursor falls behind the ring — it resumed from an older position,
// or read too slowly — reads from the log instead until it catches up. An
// event the log no longer keeps (see TrimEventLog) is lost: such a stream
// starts with events_lost, so the client knows to re-read the state it
// follows.
//
// A hub made without a log (tests, tools) numbers the events published to
// it itself, and cuts off a subscriber that falls behind its ring.
package events

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/internal/recent"
	"github.com/corkboard/corkboard/models"
)

// DefaultHistory is how many events a hub keeps when not told otherwise.
const DefaultHistory = 10000

// subscriberBuffer is how many events a subscriber's channel holds, so
// that a reader can take several at once; the history is the real buffer.
const subscriberBuffer = 64

// DefaultLogReaders is how many subscribers of one client read the log at
// once when the hub is not told otherwise (logTurn): half the cores Go
// runs on, at least one, so that one client's streams catching up leave
// the other half to the board's calls.
func DefaultLogReaders() int {
	return max(runtime.GOMAXPROCS(0)/2, 1)
}

var (
	// ErrSlowSubscriber is why a subscriber that fell behind the history
	// was cut off.
	ErrSlowSubscriber = errors.New("subscriber fell behind")
	// ErrHubClosed ends every subscription when the hub closes.
	ErrHubClosed = errors.New("event hub closed")
)

// Event is a published event with the id the hub gave it.
type Event struct {
	ID uint64
	models.Event
}

// Logged is an event as its log keeps it: its payload still in the log's
// encoding (Log.DecodePayload reads it).
type Logged struct {
	ID        uint64
	Type, Key string
	Stored    []byte
}

// kept is an event as the history keeps it. One from the log keeps its
// payload as the log stored it, packed, and the first subscriber that
// takes it decodes it (the next ones share that payload while it is
// among the last sharedDecoded decoded): a decoded desired LRP change — two LRPs with their routes
// and tags — takes several times the memory of its packed bytes, and a
// board keeps DefaultHistory of them (bbs-load peer, 10,000 LRPs: a ring
// of decoded events was 12.5 MB of the board's 40 MB live heap; kept
// packed, the board's peak RSS went from 111 to 77 MiB). Its cells, which a rep's
// filter reads for every event it passes, are decoded once, as it is
// appended. A published event (a hub without a log) keeps its payload.
type kept struct {
	id        uint64
	eventType string
	key       string
	cells     models.EventCells
	payload   proto.Message
	stored    []byte
}

func keepEvent(e Event) kept {
	return kept{id: e.ID, eventType: e.Type, key: e.Key, cells: e.Cells(), payload: e.Payload}
}

// Filter narrows a subscription; zero values match everything.
// events_lost is always delivered.
type Filter struct {
	// Types are the event types wanted.
	Types []string
	// CellID keeps only the events about that cell
	// (models.Event.ConcernsCell): what a cell's rep may see.
	CellID string
}

func (f Filter) matches(e *kept) bool {
	typeWanted := len(f.Types) == 0 || e.eventType == models.EventEventsLost || slices.Contains(f.Types, e.eventType)
	return typeWanted && (f.CellID == "" || e.cells.Has(f.CellID))
}

// Log is the event log a hub is a window on (sqldb.SQLDB).
type Log interface {
	// SequenceEvents moves up to limit committed events into the log
	// and says how many it moved.
	SequenceEvents(ctx context.Context, limit int) (int, error)
	// ReadLogged returns up to limit events after position after, in
	// order, as the log keeps them.
	ReadLogged(ctx context.Context, after uint64, limit int) ([]Logged, error)
	// DecodePayload returns the payload of an event of eventType from
	// its encoding in the log (Logged.Stored).
	DecodePayload(eventType string, stored []byte) (proto.Message, error)
	// EventLogBounds is the first position the log still keeps and the
	// last one taken (first is last+1 when it keeps nothing).
	EventLogBounds(ctx context.Context) (first, last uint64, err error)
}

// Hub fans events out to subscribers. It is safe for concurrent use.
type Hub struct {
	mu sync.RWMutex
	// ring holds the ids [oldest, next), the event with id n in slot
	// n % len(ring).
	ring        []kept
	oldest      uint64
	next        uint64
	subscribers map[*Subscription]struct{}
	closed      bool
	// done is closed with the hub, releasing every subscriber.
	done chan struct{}
	// log backs the ring, nil for a hub that numbers events itself.
	log Log
	// advanced is closed, and replaced, whenever events are appended:
	// CatchUp waits on it.
	advanced chan struct{}
	// decoded shares the payloads decoded lately among subscribers, by
	// id; a payload is never changed once decoded (subscribers only read
	// them), so any number may hold it.
	decoded *recent.Map[uint64, proto.Message]
	// turns are each client's turns at reading the log (logTurn), by
	// client, while it has subscribers; readersPerClient is how many each
	// has. reading and waiting count the turns held and the subscribers
	// waiting for one, over all clients.
	turnsMu          sync.Mutex
	turns            map[string]*clientTurns
	readersPerClient int
	reading, waiting atomic.Int64
}

// clientTurns holds a token for each of a client's subscribers reading
// the log; users is how many of its subscribers are open.
type clientTurns struct {
	tokens chan struct{}
	users  int
}

// sharedDecoded is how many decoded payloads the hub keeps for the
// subscribers that take the same events: those following live take the
// newest few, and every one of them then gets the one copy rather than
// decoding its own. Without it, a few hundred subscribers that stop
// reading held a few hundred copies of the same large events (a desired
// LRP with 128 KiB of routes decodes to megabytes), and their decoding
// was most of the board's CPU.
const sharedDecoded = 256

// Option configures a Hub.
type Option func(*Hub)

// WithHistory sets how many events the hub keeps for resuming and for
// subscribers that read behind; at least 1.
func WithHistory(events int) Option {
	return func(h *Hub) { h.ring = make([]kept, max(events, 1)) }
}

// WithLog makes the hub a window on log: its events come from a Tailer,
// numbered by their positions, and subscribers behind the ring read the
// log.
func WithLog(log Log) Option {
	return func(h *Hub) { h.log = log }
}

// WithLogReaders sets how many subscribers of one client behind the
// history read the log at once; the client's others wait their turn
// (logTurn). At least 1.
func WithLogReaders(n int) Option {
	return func(h *Hub) { h.readersPerClient = max(n, 1) }
}

// NewHub returns a hub with an empty history.
//
// Without a log, ids start at the current time in microseconds rather than at 1, so that
// they keep growing across board restarts: a client resuming with an id
// from before a restart is told it lost events instead of waiting for ids
// the new hub will not reach for a long time, or replaying the wrong ones.
func NewHub(opts ...Option) *Hub {
	h := &Hub{
		subscribers: map[*Subscription]struct{}{},
		done:        make(chan struct{}),
		advanced:    make(chan struct{}),
		decoded:     recent.New[uint64, proto.Message](sharedDecoded),
	}
	for _, opt := range opts {
		opt(h)
	}
	if h.ring == nil {
		h.ring = make([]kept, DefaultHistory)
	}
	if h.readersPerClient == 0 {
		h.readersPerClient = DefaultLogReaders()
	}
	h.turns = map[string]*clientTurns{}
	first := uint64(max(time.Now().UnixMicro(), 1))
	h.oldest, h.next = first, first
	return h
}

// Publish gives each event the next id, keeps it in the history and wakes
// every subscriber; it is how a hub without a log is fed. It never waits
// for a subscriber. The hub keeps the payloads: callers must not change
// them afterwards. After Close it drops events.
func (h *Hub) Publish(events ...models.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	numbered := make([]kept, len(events))
	for i, e := range events {
		numbered[i] = keepEvent(Event{ID: h.next + uint64(i), Event: e})
	}
	h.appendLocked(numbered)
}

// Append keeps events of the hub's log, numbered by their log positions,
// in the history and wakes every subscriber. Ids must grow: one at or
// below the newest kept is a repeat and dropped. An id beyond the next one
// expected empties the history and goes on from there (the tailer gave up
// waiting for a hole); subscribers behind it read the log. It appends
// nothing and fails when an event that can concern a cell cannot be
// decoded (kept).
func (h *Hub) Append(logged ...Logged) error {
	entries := make([]kept, len(logged))
	for i, l := range logged {
		var err error
		if entries[i], err = h.keepLogged(l); err != nil {
			return err
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.appendLocked(entries)
	return nil
}

// keepLogged is an event of the log as the hub keeps it: packed, with its
// cells decoded when it can concern one (kept).
func (h *Hub) keepLogged(l Logged) (kept, error) {
	k := kept{id: l.ID, eventType: l.Type, key: l.Key, stored: l.Stored}
	if !models.EventTypeConcernsCells(l.Type) {
		return k, nil
	}
	e, err := h.decode(k)
	if err != nil {
		return kept{}, err
	}
	k.cells = e.Cells()
	return k, nil
}

// decode returns a kept event with its payload, decoding what the log
// stored, or taking the payload another subscriber had decoded of it
// (Hub.decoded).
func (h *Hub) decode(k kept) (Event, error) {
	e := Event{ID: k.id, Event: models.Event{Type: k.eventType, Key: k.key, Payload: k.payload}}
	if e.Payload != nil || h.log == nil {
		return e, nil
	}
	if shared, ok := h.decoded.Get(k.id); ok {
		e.Payload = shared
		return e, nil
	}
	payload, err := h.log.DecodePayload(k.eventType, k.stored)
	if err != nil {
		return Event{}, fmt.Errorf("decode %s event at %d: %w", k.eventType, k.id, err)
	}
	h.decoded.Put(k.id, payload)
	e.Payload = payload
	return e, nil
}

func (h *Hub) appendLocked(events []kept) {
	if len(events) == 0 || h.closed {
		return
	}
	size := uint64(len(h.ring))
	for _, e := range events {
		if e.id < h.next {
			continue
		}
		if e.id > h.next {
			h.oldest, h.next = e.id, e.id
		}
		h.ring[h.next%size] = e
		h.next++
	}
	if h.next-h.oldest > size {
		h.oldest = h.next - size
	}
	for s := range h.subscribers {
		s.wakeUp()
	}
	close(h.advanced)
	h.advanced = make(chan struct{})
}

// CatchUp returns once the hub has published every event its log held
// when it was called — so every subscriber of this board has it queued —
// or ctx's error. A hub without a log publishes as it is told: nothing to
// wait for. The board answers a call that makes an instance unroutable
// only after it (see handlers' startActualLRP): a database that freezes
// between the write and the tailer's read must not leave this board's
// routers sending requests to an instance its rep already stops.
func (h *Hub) CatchUp(ctx context.Context) error {
	if h.log == nil {
		return nil
	}
	_, last, err := h.log.EventLogBounds(ctx)
	if err != nil {
		return err
	}
	for {
		h.mu.RLock()
		published, advanced := h.next-1, h.advanced
		h.mu.RUnlock()
		if published >= last {
			return nil
		}
		select {
		case <-advanced:
		case <-h.done:
			return errors.New("the event hub is closed")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// startAt empties the history so that the next event expected is next.
func (h *Hub) startAt(next uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.oldest, h.next = next, next
}

// LastID is the id of the newest event published, or the id before the
// first one when nothing was published yet.
func (h *Hub) LastID() uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.next - 1
}

// Subscribe starts a subscription. With lastEventID 0 it delivers the
// events appended from now on. Otherwise it first replays the events
// after lastEventID — from the history, or from the log when the history
// no longer holds them — and goes on live. When those events are kept
// nowhere (older than the log keeps, or an id the log never gave, e.g.
// from before the log existed), the first event is events_lost (id 0, not
// part of the sequence) and the stream goes on with the oldest event of
// the history. The caller must Close it.
func (h *Hub) Subscribe(lastEventID uint64, filter Filter) *Subscription {
	return h.SubscribeAs("", lastEventID, filter)
}

// SubscribeAs is Subscribe for a subscriber of client (a certificate, an
// address: see handlers), which reads the log in the client's turns
// (WithLogReaders); "" is the board's own.
func (h *Hub) SubscribeAs(client string, lastEventID uint64, filter Filter) *Subscription {
	// Each type once: a subscriber matches every event against them,
	// and a request may repeat a type as often as its body has room for.
	filter.Types = slices.Compact(slices.Sorted(slices.Values(filter.Types)))
	s := &Subscription{
		hub:    h,
		client: client,
		filter: filter,
		events: make(chan Event, subscriberBuffer),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		s.err = ErrHubClosed
		close(s.events)
		return s
	}
	var lost *Event
	askLog := false
	switch {
	case lastEventID == 0:
		s.cursor = h.next
	case lastEventID == math.MaxUint64:
		// No log gives it, and the event after it would wrap to 0,
		// before the log's first: one the log never gave.
		s.cursor = h.oldest
		lost = h.lostLocked(lastEventID)
	case h.log != nil:
		// The log knows whether the id was ever given and what follows
		// it is still kept (a board's history may hold events the log
		// trimmed, or not yet the newest).
		s.cursor = lastEventID + 1
		askLog = true
	case lastEventID+1 >= h.oldest && lastEventID < h.next:
		s.cursor = lastEventID + 1
	default:
		s.cursor = h.oldest
		lost = h.lostLocked(lastEventID)
	}
	h.subscribers[s] = struct{}{}
	h.mu.Unlock()

	s.turns = h.turnsOf(client)
	go s.feed(lost, askLog)
	return s
}

// lostLocked is the events_lost event for a resume after lastEventID.
func (h *Hub) lostLocked(lastEventID uint64) *Event {
	return lostEvent(lastEventID, h.oldest)
}

// lostEvent is the events_lost event of a stream resumed after
// lastEventID that goes on with oldestKept.
func lostEvent(lastEventID, oldestKept uint64) *Event {
	return &Event{Event: models.Event{
		Type:    models.EventEventsLost,
		Payload: &models.EventsLostEvent{LastEventId: lastEventID, OldestKeptId: oldestKept},
	}}
}

// lostFrom moves a subscriber whose events are lost to the oldest event of
// the history and returns the events_lost event it is to receive first.
func (h *Hub) lostFrom(cursor *uint64) *Event {
	h.mu.RLock()
	defer h.mu.RUnlock()
	lost := h.lostLocked(*cursor - 1)
	*cursor = h.oldest
	return lost
}

// LogReaders is how many subscribers read the log now, and how many wait
// for their turn to (logTurn), over all clients.
func (h *Hub) LogReaders() (reading, waiting int) {
	return int(h.reading.Load()), int(h.waiting.Load())
}

// turnsOf is client's turns, shared by its open subscribers; each takes
// them once and lets go with letGoTurns.
func (h *Hub) turnsOf(client string) *clientTurns {
	h.turnsMu.Lock()
	defer h.turnsMu.Unlock()
	t := h.turns[client]
	if t == nil {
		t = &clientTurns{tokens: make(chan struct{}, h.readersPerClient)}
		h.turns[client] = t
	}
	t.users++
	return t
}

func (h *Hub) letGoTurns(client string) {
	h.turnsMu.Lock()
	defer h.turnsMu.Unlock()
	if t := h.turns[client]; t != nil {
		if t.users--; t.users <= 0 {
			delete(h.turns, client)
		}
	}
}

// Subscribers is how many subscriptions are open.
func (h *Hub) Subscribers() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.subscribers)
}

// Close ends every subscription with ErrHubClosed; later subscriptions
// end at once and later events are dropped. A server closes its hub when
// it shuts down, so that open streams end and the shutdown can finish.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
}

// errBehindHistory says the cursor is older than the history, and the
// subscriber must read the log.
var errBehindHistory = errors.New("behind the history")

// read copies up to cap(batch) events at or after *cursor that pass the
// filter, and moves the cursor past every event it looked at. The caller
// decodes them, after the lock is let go.
func (h *Hub) read(cursor *uint64, filter Filter, batch []kept) ([]kept, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return batch, ErrHubClosed
	}
	if *cursor < h.oldest {
		if h.log != nil {
			return batch, errBehindHistory
		}
		return batch, fmt.Errorf("%w: %d events it had not read were dropped from the history of %d",
			ErrSlowSubscriber, h.oldest-*cursor, len(h.ring))
	}
	size := uint64(len(h.ring))
	for ; *cursor < h.next && len(batch) < cap(batch); *cursor++ {
		e := &h.ring[*cursor%size]
		if filter.matches(e) {
			batch = append(batch, *e)
		}
	}
	return batch, nil
}

func (h *Hub) unsubscribe(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subscribers, s)
}
