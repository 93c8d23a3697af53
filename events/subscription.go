package events

import "sync"

// Subscription is one subscriber's view of the hub: a channel of events in
// publish order, closed when the subscription ends.
type Subscription struct {
	hub    *Hub
	filter Filter
	events chan Event
	// wake has room for one token: a publish while the feeder is busy is
	// remembered, never waited on.
	wake chan struct{}
	// done is closed by Close.
	done      chan struct{}
	closeOnce sync.Once

	// cursor is the id of the next event to look at; only the feeder
	// goroutine touches it once the subscription has started.
	cursor uint64

	mu  sync.Mutex
	err error
}

// Events delivers the events; it is closed when the subscription ends,
// after which Err says why.
func (s *Subscription) Events() <-chan Event {
	return s.events
}

// Err is why the channel closed: ErrSlowSubscriber (wrapped, with how many
// events were lost) when the subscriber fell behind the history,
// ErrHubClosed when the hub closed, nil after Close or while it is open.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the subscription and releases its goroutine. It may be called
// more than once, from any goroutine.
func (s *Subscription) Close() {
	s.closeOnce.Do(func() { close(s.done) })
}

func (s *Subscription) wakeUp() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// feed moves events from the hub's history to the channel until the
// subscription or the hub ends, or the subscriber falls behind.
func (s *Subscription) feed(first *Event) {
	defer close(s.events)
	defer s.hub.unsubscribe(s)

	if first != nil && !s.send(*first) {
		return
	}
	batch := make([]Event, 0, subscriberBuffer)
	for {
		var err error
		batch, err = s.hub.read(&s.cursor, s.filter, batch[:0])
		for _, e := range batch {
			if !s.send(e) {
				return
			}
		}
		if err != nil {
			s.fail(err)
			return
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-s.wake:
		case <-s.done:
			return
		case <-s.hub.done:
			s.fail(ErrHubClosed)
			return
		}
	}
}

// send hands one event to the reader; false when the subscription or the
// hub ended while it waited.
func (s *Subscription) send(e Event) bool {
	select {
	case s.events <- e:
		return true
	case <-s.done:
		return false
	case <-s.hub.done:
		s.fail(ErrHubClosed)
		return false
	}
}

func (s *Subscription) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}
