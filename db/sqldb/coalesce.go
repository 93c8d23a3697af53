package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/corkboard/corkboard/models"
)

// Coalesced writes (group commit). An API write on one LRP — a desire, an
// update, a removal, a lifecycle call from a cell — is a handful of small
// statements; on its own it also pays a BEGIN, an event-log append, a
// COMMIT (a disk flush) and, afterwards, a sequencer run moving its events.
// Writes that arrive while others are being written share those: they run
// one after the other in one transaction, which appends all their events
// in one statement and commits once. Each still gets its own result and
// its own error:
//
//  1. Writes are queued on a lane chosen by their LRP's process guid, so
//     the writes of one LRP always queue on the same lane, in arrival
//     order, and two lanes never wait for each other's row locks on one
//     LRP. A lane writes one group at a time.
//  2. A write that finds its lane idle runs alone at once, as it would
//     without coalescing (its own transaction, its one-statement form where
//     the driver has one), so an idle board answers as fast as it did. It
//     holds the lane while it runs: writes arriving meanwhile queue. Then
//     the lane takes everything queued (up to maxCoalesced) as one group,
//     and so on until the queue is empty; a group of one runs alone too.
//  3. A group of several runs in one transaction: each write's statements,
//     in queue order, then one append of all their events, then COMMIT. A
//     later write in the group sees what the earlier ones wrote, as it
//     would had they committed before it started.
//  4. A write that fails in the group (a stale modification tag, an
//     invalid request, a lost race, a deadlock) rolls the group back. That
//     write is run alone — its own transaction, with the usual retries —
//     so that the error it reports is its own, and the rest of the group
//     runs again as a group. After maxGroupAttempts runs, or when BEGIN,
//     the events' append or COMMIT fail, every write left runs alone.
//  5. After COMMIT the tailer is woken, once, and then every write of the
//     group is told it is durable.
//
// Worked example: on a lane idle at first, update A arrives and runs
// alone (2); while it runs, updates B, C and D of other LRPs arrive and
// queue. When A is done the lane takes [B C D]. C carries a stale tag:
// its check fails after B's statements ran (4). The group rolls back, C
// runs alone and is told ResourceConflict, and [B D] runs again and
// commits (3); B and D are told they succeeded, in one commit.
type coalescer struct {
	s     *SQLDB
	seed  maphash.Seed
	lanes []*lane

	// Counters since start (CoalescedWrites).
	groups  atomic.Int64 // groups of several committed together
	grouped atomic.Int64 // writes committed in those groups
	alone   atomic.Int64 // writes run alone: groups of one, and those a group's failure sent alone
}

// maxGroupAttempts bounds how often a group runs: each write that fails
// in it costs the writes before it one more run, so after this many
// failures the rest run alone.
const maxGroupAttempts = 4

// maxCoalesced bounds a group, so that one commit never waits on an
// unbounded queue and a group that must run again stays cheap.
const maxCoalesced = 64

// lane queues the writes of the LRPs hashed to it (coalescer, 1).
type lane struct {
	mu      sync.Mutex
	queue   []*coalescedWrite
	writing bool
}

// coalescedWrite is one API write waiting on a lane.
type coalescedWrite struct {
	ctx context.Context
	// grouped runs the write's statements in a group's transaction and
	// returns its events.
	grouped func(tx *sql.Tx) ([]models.Event, error)
	// alone runs the write in a transaction of its own (2, 4).
	alone func() error
	done  chan error
}

// WithCoalescing sets how many lanes coalesce concurrent API writes
// (coalesce.go); 0 turns coalescing off, every write then running in a
// transaction of its own. The default is defaultLanes.
func WithCoalescing(lanes int) Option {
	return func(s *SQLDB) {
		s.coalescer = newCoalescer(s, lanes)
	}
}

func newCoalescer(s *SQLDB, lanes int) *coalescer {
	if lanes <= 0 {
		return nil
	}
	c := &coalescer{s: s, seed: maphash.MakeSeed(), lanes: make([]*lane, lanes)}
	for i := range c.lanes {
		c.lanes[i] = &lane{}
	}
	return c
}

// defaultLanes is the coalescer's lanes on a database (WithCoalescing):
// one on SQLite, none (coalescing off) on the server databases.
//
// A lane writes in arrival order, so a write that waits for a row lock
// holds up every write queued behind it on its lane. On SQLite that costs
// nothing: it writes one transaction at a time, and every write waits for
// the one in progress anyway. On Postgres and MySQL writes of different
// LRPs run side by side, and a lane would make an update of one LRP wait
// for a desire of another that waits for a lock some other transaction
// holds — and for ever, should that transaction wait for the update. So
// there coalescing is the operator's choice (write_lanes), for write loads
// that hold few locks long; on this repository's 2-core benchmark it
// changed neither throughput nor CPU per write measurably.
func defaultLanes(d driver) int {
	if d.oneWriter() {
		return 1
	}
	return 0
}

// OneWriter reports whether the named database writes one transaction at
// a time (SQLite): every API write and every convergence pass then wait
// for the same writer, which the board's defaults for that database
// (coalescing here, the spacing of triggered passes in cmd/bbs) allow for.
func OneWriter(driverName string) bool {
	d, err := newDriver(driverName)
	return err == nil && d.oneWriter()
}

// writeCoalesced runs an API write on the LRP key: grouped with others
// when some are queued with it, else alone (see coalescer). It returns the
// write's own error.
func (s *SQLDB) writeCoalesced(ctx context.Context, key string, grouped func(tx *sql.Tx) ([]models.Event, error), alone func() error) error {
	if s.coalescer == nil {
		return alone()
	}
	c := s.coalescer
	l := c.lanes[maphash.String(c.seed, key)%uint64(len(c.lanes))]
	l.mu.Lock()
	if !l.writing {
		// An idle lane: the write runs alone at once, in its caller's
		// goroutine, holding the lane so that writes arriving meanwhile
		// queue (coalescer, 2).
		l.writing = true
		l.mu.Unlock()
		c.alone.Add(1)
		err := alone()
		c.release(l)
		return err
	}
	w := &coalescedWrite{ctx: ctx, grouped: grouped, alone: alone, done: make(chan error, 1)}
	l.queue = append(l.queue, w)
	l.mu.Unlock()
	err := <-w.done
	if errors.Is(err, errRunAlone) {
		return alone()
	}
	return err
}

// release lets go of a lane a write held while it ran alone: the lane
// writes what queued meanwhile, or is idle.
func (c *coalescer) release(l *lane) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		l.writing = false
		return
	}
	go c.drain(l)
}

// CoalescedWrites counts, since the store was made, the groups of several
// API writes committed together, the writes in them, and the writes that
// ran alone (coalesce.go). All are 0 when coalescing is off.
func (s *SQLDB) CoalescedWrites() (groups, grouped, alone int64) {
	if s.coalescer == nil {
		return 0, 0, 0
	}
	c := s.coalescer
	return c.groups.Load(), c.grouped.Load(), c.alone.Load()
}

// errRunAlone tells a write its group did not commit it: it runs alone.
var errRunAlone = errors.New("run alone")

// drain writes the lane's queue, one group at a time, until it is empty.
func (c *coalescer) drain(l *lane) {
	for {
		l.mu.Lock()
		n := min(len(l.queue), maxCoalesced)
		if n == 0 {
			l.writing = false
			l.mu.Unlock()
			return
		}
		group := l.queue[:n:n]
		l.queue = l.queue[n:]
		if len(l.queue) == 0 {
			l.queue = nil
		}
		l.mu.Unlock()
		c.write(group)
	}
}

// write writes one group (coalescer, 2–5).
func (c *coalescer) write(group []*coalescedWrite) {
	var live []*coalescedWrite
	for _, w := range group {
		if w.ctx.Err() != nil {
			// It runs alone and reports its context's error there.
			w.done <- errRunAlone
			continue
		}
		live = append(live, w)
	}
	for attempt := 1; len(live) > 1 && attempt <= maxGroupAttempts; attempt++ {
		failed, err := c.commit(live, attempt == 1)
		if err == nil {
			// The tailer is told before the writers, as a write alone
			// tells it before it returns.
			c.s.eventsCommitted()
			c.groups.Add(1)
			c.grouped.Add(int64(len(live)))
			for _, w := range live {
				w.done <- nil
			}
			return
		}
		if failed < 0 {
			break
		}
		c.alone.Add(1)
		live[failed].done <- errRunAlone
		live = slices.Delete(live, failed, failed+1)
	}
	if len(live) == 1 {
		c.alone.Add(1)
		live[0].done <- live[0].alone()
		return
	}
	c.alone.Add(int64(len(live)))
	for _, w := range live {
		w.done <- errRunAlone
	}
}

// commit runs the group in one transaction and commits it with all its
// events. On failure it rolls back and says which write failed (-1 for the
// transaction itself: BEGIN, the events' append or COMMIT).
func (c *coalescer) commit(group []*coalescedWrite, firstAttempt bool) (int, error) {
	s := c.s
	if s.writeLock != nil {
		s.writeLock.Lock()
		defer s.writeLock.Unlock()
	}
	// The group's transaction outlives no write of it: each statement runs
	// under its own write's context, and a write whose context ends fails
	// the group like any other failure.
	tx, err := s.beginWrite(context.Background())
	if err != nil {
		return -1, err
	}
	var events []models.Event
	for i, w := range group {
		written, err := w.grouped(tx)
		if err != nil {
			tx.Rollback()
			return i, err
		}
		events = append(events, written...)
	}
	if err := s.commit(context.Background(), tx, events, firstAttempt); err != nil {
		return -1, err
	}
	return 0, nil
}
