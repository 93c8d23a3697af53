package events

import (
	"context"
	"sync"
	"time"
)

// Subscription is one subscriber's view of the hub: a channel of events in
// publish order, closed when the subscription ends.
type Subscription struct {
	hub *Hub
	// client is who subscribed; turns are its turns at reading the log.
	client string
	turns  *clientTurns
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
	defer s.hub.letGoTurns(s.client)
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
	turn := logTurn{s: s}
	defer turn.giveBack()
	batch := make([]kept, 0, subscriberBuffer)
	for {
		var err error
		from := s.cursor
		batch, err = s.hub.read(&s.cursor, s.filter, batch[:0])
		if err == errBehindHistory {
			if !turn.take() {
				return
			}
			batch, err = s.readLog(ctx, batch[:0])
		} else {
			turn.giveBack()
		}
		for _, k := range batch {
			e, decodeErr := s.hub.decode(k)
			if decodeErr != nil {
				s.fail(decodeErr)
				return
			}
			if !turn.send(e) {
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

// logTurnGrace is how long a subscriber reading the log keeps its turn
// while its client takes nothing (logTurn).
const logTurnGrace = 250 * time.Millisecond

// logTurn is a subscriber's turn at reading the log. A subscriber behind
// the history reads the log a page at a time and hands each page to its
// client; reading, decoding and encoding the whole log is the dearest
// thing a stream can ask of the board, and one client may ask it of 100
// streams at once. So each client's subscribers read the log a few at a
// time (WithLogReaders), one at a time per turn:
//
//  1. A client's 100 streams resume from position 1 at once; the log
//     holds 200,000 events, the hub's history the newest 10,000.
//  2. One takes one of the client's turns (DefaultLogReaders on 2 cores);
//     its other 99 wait, holding nothing but their place: they get
//     heartbeats. Another client's stream resuming meanwhile takes a turn
//     of its own client's, at once.
//  3. A stream with a turn reads a page, hands it to its client, reads
//     the next, and keeps its turn while its client takes what it is
//     sent.
//  4. It gives the turn back when it reaches the history (and goes on from
//     memory, which costs no turn), when its client has taken nothing
//     for logTurnGrace (a client that reads slowly or not at all holds
//     up none of its streams), or when it ends. A waiting stream of the
//     same client takes it.
//
// Turns are per client, not for the whole board: a thousand reps
// resuming after a board restarted each catch up at once, as before, and
// share the payloads they decode (Hub.decode) rather than reading the log
// one after another.
//
// Without turns, those 100 streams (one client's, within its cap) made
// another client's gets and updates on a SQLite board of 200,000 events
// take p50 32–35 ms and p99 195–203 ms (2 cores): every stream read the
// log and encoded what it read, all at once. With one turn, p50 1.1 ms
// and p99 9–10 ms (1.0 and 3–3.5 ms with no stream), the streams as a
// whole catching up at 0.7× the rate (docs/security.md).
type logTurn struct {
	s    *Subscription
	held bool
	// grace times a wait for the client while the turn is held; one per
	// subscriber, reset at each wait (a page of 64 events may wait 64
	// times).
	grace *time.Timer
}

// take waits for a turn unless the subscriber holds one already; false
// when the subscription or the hub ended meanwhile.
func (t *logTurn) take() bool {
	if t.held {
		return true
	}
	t.s.hub.waiting.Add(1)
	defer t.s.hub.waiting.Add(-1)
	select {
	case t.s.turns.tokens <- struct{}{}:
		t.held = true
		t.s.hub.reading.Add(1)
		return true
	case <-t.s.done:
		return false
	case <-t.s.hub.done:
		t.s.fail(ErrHubClosed)
		return false
	}
}

// giveBack lets the next subscriber read the log, if this one held a turn.
func (t *logTurn) giveBack() {
	if t.held {
		t.held = false
		t.s.hub.reading.Add(-1)
		<-t.s.turns.tokens
	}
}

// send hands an event to the client, giving the turn back once the
// client has taken nothing for logTurnGrace.
func (t *logTurn) send(e Event) bool {
	if !t.held {
		return t.s.send(e)
	}
	select {
	case t.s.events <- e:
		return true
	default:
	}
	if t.grace == nil {
		t.grace = time.NewTimer(logTurnGrace)
	} else {
		t.grace.Reset(logTurnGrace)
	}
	defer t.grace.Stop()
	select {
	case t.s.events <- e:
		return true
	case <-t.grace.C:
		t.giveBack()
		return t.s.send(e)
	case <-t.s.done:
		return false
	case <-t.s.hub.done:
		t.s.fail(ErrHubClosed)
		return false
	}
}

func (s *Subscription) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}
