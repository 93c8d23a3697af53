package sqldb

import (
	"database/sql"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/corkboard/corkboard/models"
)

// WithEvents sends every committed change to sink (see publishOrder).
func WithEvents(sink models.EventSink) Option {
	return func(s *SQLDB) { s.events = sink }
}

// discardEvents is the sink when none is configured.
type discardEvents struct{}

func (discardEvents) Publish(...models.Event) {}

// publishOrder makes events leave in commit order per key. Two
// transactions on one LRP are serialized by the database's row locks, but
// after their commits nothing orders the goroutines that publish. So the
// committer takes the locks of its events' keys before COMMIT and releases
// them after Publish: the later commit of the same key cannot publish
// first. Keys hash onto a fixed set of stripes, taken in ascending order so
// that two writers never wait on each other in a cycle.
//
// A stripe is also held across a single auto-committed statement (see
// publishAfter), and such a statement may wait for a row lock held by a
// transaction that, at its COMMIT, waits for that very stripe: a cycle
// through the database that neither side can see. Transactions therefore
// wait for their stripes at most stripeWait, and then roll back and run
// again, which releases their row locks. The statements that run under a
// stripe avoid waiting on row locks where they can (FOR UPDATE NOWAIT), so
// this is a rare way out, not a path taken under ordinary contention.
type publishOrder struct {
	once sync.Once
	// stripes are binary semaphores: a full channel is a held stripe.
	stripes [64]chan struct{}
}

// stripeWait bounds how long a committing transaction waits for its
// stripes before giving up its locks and running again. A variable for
// tests only.
var stripeWait = time.Second

func (o *publishOrder) init() {
	o.once.Do(func() {
		for i := range o.stripes {
			o.stripes[i] = make(chan struct{}, 1)
		}
	})
}

// lockKeys takes the stripes of keys in ascending order. With a non-nil
// timeout channel it gives up when the channel fires, releases what it
// took and reports false.
func (o *publishOrder) lockKeys(keys []string, timeout <-chan time.Time) (unlock func(), ok bool) {
	o.init()
	held := o.stripesOf(keys)
	for n, i := range held {
		select {
		case o.stripes[i] <- struct{}{}:
		case <-timeout:
			o.release(held[:n])
			return nil, false
		}
	}
	return func() { o.release(held) }, true
}

func (o *publishOrder) release(stripes []int) {
	for _, i := range stripes {
		<-o.stripes[i]
	}
}

// stripesOf lists the distinct stripes of keys in ascending order.
func (o *publishOrder) stripesOf(keys []string) []int {
	held := make([]int, len(keys))
	for i, key := range keys {
		held[i] = o.stripe(key)
	}
	slices.Sort(held)
	return slices.Compact(held)
}

func (o *publishOrder) stripe(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(len(o.stripes)))
}

func eventKeys(events []models.Event) []string {
	keys := make([]string, len(events))
	for i, e := range events {
		keys[i] = e.Key
	}
	return keys
}

// errStripeBusy rolls back a transaction that waited too long for its
// stripes; it is retried like a lost race.
var errStripeBusy = fmt.Errorf("waited too long to publish in order: %w", errLostRace)

// commitAndPublish commits tx and then publishes events, holding the
// ordering locks of their keys across both. When the locks do not come
// within stripeWait, tx is rolled back and errStripeBusy returned.
func (s *SQLDB) commitAndPublish(tx *sql.Tx, events []models.Event) error {
	if len(events) == 0 {
		return tx.Commit()
	}
	timer := time.NewTimer(stripeWait)
	defer timer.Stop()
	unlock, ok := s.order.lockKeys(eventKeys(events), timer.C)
	if !ok {
		tx.Rollback()
		return errStripeBusy
	}
	defer unlock()
	if err := tx.Commit(); err != nil {
		return err
	}
	s.events.Publish(events...)
	return nil
}

// publishAfter runs a write that is its own transaction (a single
// auto-committed statement) and publishes the events it returns once it
// succeeded, holding the ordering locks of keys — every key its events can
// have — across both. On SQLite the write lock is taken first, as
// transactions take it before their stripes.
//
// The write should not wait for row locks (see publishOrder): a statement
// that might should lock with NOWAIT and leave a locked row to a
// transaction.
func (s *SQLDB) publishAfter(keys []string, write func() ([]models.Event, error)) error {
	if s.writeLock != nil {
		s.writeLock.Lock()
		defer s.writeLock.Unlock()
	}
	unlock, _ := s.order.lockKeys(keys, nil)
	defer unlock()
	events, err := write()
	if err != nil {
		return err
	}
	if len(events) > 0 {
		s.events.Publish(events...)
	}
	return nil
}
