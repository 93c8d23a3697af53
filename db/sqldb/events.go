package sqldb

import (
	"database/sql"
	"hash/fnv"
	"sort"
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

// publishOrder makes events leave in commit order per key. Two
// transactions on one LRP are serialized by the database's row locks, but
// after their commits nothing orders the goroutines that publish. So the
// committer takes the locks of its events' keys before COMMIT and releases
// them after Publish: the later commit of the same key cannot publish
// first. Keys hash onto a fixed set of stripes, taken in ascending order so
// that two writers never wait on each other in a cycle.
type publishOrder struct {
	stripes [64]sync.Mutex
}

func (o *publishOrder) lock(events []models.Event) (unlock func()) {
	seen := map[int]bool{}
	var held []int
	for _, e := range events {
		i := o.stripe(e.Key)
		if !seen[i] {
			seen[i] = true
			held = append(held, i)
		}
	}
	sort.Ints(held)
	for _, i := range held {
		o.stripes[i].Lock()
	}
	return func() {
		for _, i := range held {
			o.stripes[i].Unlock()
		}
	}
}

func (o *publishOrder) stripe(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(len(o.stripes)))
}

// commitAndPublish commits tx and then publishes events, holding the
// ordering locks of their keys across both.
func (s *SQLDB) commitAndPublish(tx *sql.Tx, events []models.Event) error {
	if len(events) == 0 {
		return tx.Commit()
	}
	unlock := s.order.lock(events)
	defer unlock()
	if err := tx.Commit(); err != nil {
		return err
	}
	s.events.Publish(events...)
	return nil
}

// publishAfter runs a write that is its own transaction (a single
// auto-committed statement) and publishes its events once it succeeded,
// under the same ordering locks.
func (s *SQLDB) publishAfter(events []models.Event, write func() error) error {
	unlock := s.order.lock(events)
	defer unlock()
	if err := write(); err != nil {
		return err
	}
	s.events.Publish(events...)
	return nil
}
