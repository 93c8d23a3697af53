// Package events is the board's in-process event hub. Writers publish
// events after their change commits; subscribers (the SSE handler, one per
// stream) read them in publish order.
//
// The hub keeps the last events it published in a ring, the history, and
// that ring is also every subscriber's buffer: a subscriber is a cursor
// into it, moved on by its own goroutine. Publishing therefore costs a
// slot in the ring and a wake-up per subscriber, whatever the subscribers
// do. A subscriber that falls so far behind that the events it has not
// read yet are overwritten is cut off: its channel closes and Err says
// why. A reconnecting client resumes from the id it saw last, for as long
// as the history still holds what follows; otherwise its stream starts
// with events_lost, so it knows to re-read the state it follows.
package events

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/corkboard/corkboard/models"
)

// DefaultHistory is how many events a hub keeps when not told otherwise.
const DefaultHistory = 10000

// subscriberBuffer is how many events a subscriber's channel holds, so
// that a reader can take several at once; the history is the real buffer.
const subscriberBuffer = 64

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

// Filter narrows a subscription; zero values match everything.
// events_lost is always delivered.
type Filter struct {
	// Types are the event types wanted.
	Types []string
	// CellID keeps only the events about that cell
	// (models.Event.ConcernsCell): what a cell's rep may see.
	CellID string
}

func (f Filter) matches(e *Event) bool {
	typeWanted := len(f.Types) == 0 || e.Type == models.EventEventsLost || slices.Contains(f.Types, e.Type)
	return typeWanted && (f.CellID == "" || e.ConcernsCell(f.CellID))
}

// Hub fans published events out to subscribers. It implements
// models.EventSink. It is safe for concurrent use.
type Hub struct {
	mu sync.RWMutex
	// ring holds the ids [oldest, next), the event with id n in slot
	// n % len(ring).
	ring        []Event
	oldest      uint64
	next        uint64
	subscribers map[*Subscription]struct{}
	closed      bool
	// done is closed with the hub, releasing every subscriber.
	done chan struct{}
}

var _ models.EventSink = (*Hub)(nil)

// Option configures a Hub.
type Option func(*Hub)

// WithHistory sets how many events the hub keeps for resuming and for
// subscribers that read behind; at least 1.
func WithHistory(events int) Option {
	return func(h *Hub) { h.ring = make([]Event, max(events, 1)) }
}

// NewHub returns a hub with an empty history.
//
// Ids start at the current time in microseconds rather than at 1, so that
// they keep growing across board restarts: a client resuming with an id
// from before a restart is told it lost events instead of waiting for ids
// the new hub will not reach for a long time, or replaying the wrong ones.
func NewHub(opts ...Option) *Hub {
	h := &Hub{
		subscribers: map[*Subscription]struct{}{},
		done:        make(chan struct{}),
	}
	for _, opt := range opts {
		opt(h)
	}
	if h.ring == nil {
		h.ring = make([]Event, DefaultHistory)
	}
	first := uint64(max(time.Now().UnixMicro(), 1))
	h.oldest, h.next = first, first
	return h
}

// Publish gives each event the next id, keeps it in the history and wakes
// every subscriber. It never waits for a subscriber, so it may be called
// while holding a writer's ordering lock. The hub keeps the payloads:
// callers must not change them afterwards. After Close it drops events.
func (h *Hub) Publish(events ...models.Event) {
	if len(events) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	size := uint64(len(h.ring))
	for _, e := range events {
		h.ring[h.next%size] = Event{ID: h.next, Event: e}
		h.next++
	}
	if h.next-h.oldest > size {
		h.oldest = h.next - size
	}
	for s := range h.subscribers {
		s.wakeUp()
	}
}

// LastID is the id of the newest event published, or the id before the
// first one when nothing was published yet.
func (h *Hub) LastID() uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.next - 1
}

// Subscribe starts a subscription. With lastEventID 0 it delivers the
// events published from now on. Otherwise it first replays the events
// after lastEventID that the history keeps; when that id is older than the
// history (or unknown to this hub, e.g. from before a restart), the first
// event is events_lost (id 0, not part of the sequence) and the stream
// goes on with the oldest event kept. The caller must Close it.
func (h *Hub) Subscribe(lastEventID uint64, filter Filter) *Subscription {
	s := &Subscription{
		hub:    h,
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
	switch {
	case lastEventID == 0:
		s.cursor = h.next
	case lastEventID+1 >= h.oldest && lastEventID < h.next:
		s.cursor = lastEventID + 1
	default:
		s.cursor = h.oldest
		lost = &Event{Event: models.Event{
			Type:    models.EventEventsLost,
			Payload: &models.EventsLostEvent{LastEventId: lastEventID, OldestKeptId: h.oldest},
		}}
	}
	h.subscribers[s] = struct{}{}
	h.mu.Unlock()

	go s.feed(lost)
	return s
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

// read copies up to cap(batch) events at or after *cursor that pass the
// filter, and moves the cursor past every event it looked at.
func (h *Hub) read(cursor *uint64, filter Filter, batch []Event) ([]Event, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return batch, ErrHubClosed
	}
	if *cursor < h.oldest {
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
