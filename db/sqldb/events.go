package sqldb

import (
	"database/sql"
	"sync"

	"github.com/corkboard/corkboard/models"
)

// WithEvents sends every committed change to sink (see publishOrder).
func WithEvents(sink models.EventSink) Option {
	return func(s *SQLDB) { s.events = sink }
}

// discardEvents is the sink when none is configured.
type discardEvents struct{}

func (discardEvents) Publish(...models.Event) {}

// publishOrder makes events leave in commit order. Two transactions on one
// LRP are serialized by the database's row locks, but after their commits
// nothing orders the goroutines that publish. So every write takes a
// ticket at a moment its commit order is already settled, and events are
// published in ticket order, whatever order the writers finish in.
//
// A transaction takes its ticket just before COMMIT, holding every row lock
// it will take. A transaction that conflicts with it waits for those locks
// inside one of its statements, so it reaches its own COMMIT, and its
// ticket, only after this one committed: the later commit has the later
// ticket. A single auto-committed statement (publishAfter) has no moment
// between taking its locks and committing, so it takes its ticket before
// it runs and must never wait for a row lock (it locks with NOWAIT and
// leaves a locked row to a transaction): then any writer that conflicts
// with it waits for it, and takes its ticket later.
//
// Example: a start call (a statement) takes ticket 7 and locks web/0; a
// convergence batch that also writes web/0 waits for that lock, is let go
// when the statement commits, and takes ticket 8 at its COMMIT. Should the
// batch's goroutine finish first, its events wait in ready until ticket 7
// is delivered, and leave after the start's.
//
// Unlike a lock held across COMMIT, a ticket never makes a writer wait: a
// slow commit only delays the publishing of the events that follow it.
// Every ticket taken must be delivered, with nil events when the write
// failed, or publishing stops.
type publishOrder struct {
	mu sync.Mutex
	// next is the ticket the next write gets; tickets below published
	// have left.
	next, published uint64
	// ready holds the events of delivered tickets waiting for an earlier
	// one.
	ready map[uint64][]models.Event
}

// take hands out the next ticket.
func (o *publishOrder) take() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.next
	o.next++
	return t
}

// deliver records ticket t's events and publishes, in ticket order, every
// ticket that no earlier one holds back. It publishes under the lock, so
// two deliveries never interleave their events; the sink must not block.
func (o *publishOrder) deliver(sink models.EventSink, t uint64, events []models.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ready == nil {
		o.ready = map[uint64][]models.Event{}
	}
	o.ready[t] = events
	for {
		next, ok := o.ready[o.published]
		if !ok {
			return
		}
		delete(o.ready, o.published)
		o.published++
		if len(next) > 0 {
			sink.Publish(next...)
		}
	}
}

// commitAndPublish commits tx and then publishes events in commit order.
func (s *SQLDB) commitAndPublish(tx *sql.Tx, events []models.Event) error {
	if len(events) == 0 {
		return tx.Commit()
	}
	t := s.order.take()
	if err := tx.Commit(); err != nil {
		s.order.deliver(s.events, t, nil)
		return err
	}
	s.order.deliver(s.events, t, events)
	return nil
}

// publishAfter runs a write that is its own transaction (a single
// auto-committed statement) and publishes the events it returns once it
// succeeded, in commit order. The write must not wait for row locks (see
// publishOrder): a statement that could should lock with NOWAIT and leave
// a locked row to a transaction. On SQLite the write lock is taken first,
// as transactions take it.
func (s *SQLDB) publishAfter(write func() ([]models.Event, error)) error {
	if s.writeLock != nil {
		s.writeLock.Lock()
		defer s.writeLock.Unlock()
	}
	t := s.order.take()
	var events []models.Event
	defer func() { s.order.deliver(s.events, t, events) }()
	written, err := write()
	if err != nil {
		return err
	}
	events = written
	return nil
}
