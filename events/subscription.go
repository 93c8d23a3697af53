package events

import (
	"context"
	"sync"
)

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
// events were lost) when the subscriber fell behind the history of a hub
// without a log, the error of a log that could not be read, ErrHubClosed
// when the hub closed, nil after Close or while it is open.
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

// feed moves events from the hub's history, or from its log when the
// cursor is behind the history, to the channel until the subscription or
// the hub ends, or it cannot go on (the subscriber fell behind a hub
// without a log; the log could not be read). askLog says the cursor came
// from a Last-Event-ID, to be checked against the log first.
func (s *Subscription) feed(first *Event, askLog bool) {
	defer close(s.events)
	defer s.hub.unsubscribe(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.done:
		case <-s.hub.done:
		case <-ctx.Done():
		}
		cancel()
	}()

	if askLog {
		logFirst, logLast, err := s.hub.log.EventLogBounds(ctx)
		if err != nil {
			s.fail(err)
			return
		}
		switch {
		case s.cursor < logFirst:
			// Trimmed from the log: the stream goes on with the log's
			// oldest event, whatever this board's history still holds,
			// so every board answers a resume alike.
			first = lostEvent(s.cursor-1, logFirst)
			s.cursor = logFirst
		case s.cursor-1 > logLast:
			first = s.hub.lostFrom(&s.cursor)
		}
	}
	if first != nil && !s.send(*first) {
		return
	}
	batch := make([]kept, 0, subscriberBuffer)
	for {
		var err error
		from := s.cursor
		batch, err = s.hub.read(&s.cursor, s.filter, batch[:0])
		if err == errBehindHistory {
			batch, err = s.readLog(ctx, batch[:0])
		}
		for _, k := range batch {
			e, decodeErr := s.hub.decode(k)
			if decodeErr != nil {
				s.fail(decodeErr)
				return
			}
			if !s.send(e) {
				return
			}
		}
		if err != nil {
			s.fail(err)
			return
		}
		// A read that moved the cursor may have more behind it, though
		// the filter took none of what it read: a stream of one type,
		// resumed from the log, skips batches of the others (a wait here
		// would last until the next append).
		if len(batch) > 0 || s.cursor != from {
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

// readLog reads the next events from the log into batch, as the history
// keeps them (feed decodes those it sends), moving the cursor past them.
// When the log no longer keeps the event at the cursor (trimmed while the
// subscriber read), batch starts with events_lost and the cursor moves to
// the oldest event of the history.
func (s *Subscription) readLog(ctx context.Context, batch []kept) ([]kept, error) {
	logged, err := s.hub.log.ReadLogged(ctx, s.cursor-1, cap(batch))
	if err != nil {
		return batch, err
	}
	if len(logged) == 0 || logged[0].ID != s.cursor {
		return append(batch, keepEvent(*s.hub.lostFrom(&s.cursor))), nil
	}
	for _, l := range logged {
		k, err := s.hub.keepLogged(l)
		if err != nil {
			return batch, err
		}
		if s.filter.matches(&k) {
			batch = append(batch, k)
		}
		s.cursor = l.ID + 1
	}
	return batch, nil
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
