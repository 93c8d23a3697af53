package sqldb

import (
	"context"
	"sync"

	"github.com/corkboard/corkboard/models"
)

// EventSink receives, in log order, the events a test store's commits
// appended to the event log.
type EventSink interface {
	Publish(events ...models.Event)
}

// WithEvents hands sink every event logged after the store was made,
// sequenced and read back from the log after each commit that appended
// some — the events as a board's tailer would serve them.
func WithEvents(sink EventSink) Option {
	return func(s *SQLDB) {
		var mu sync.Mutex
		_, seen, err := s.EventLogBounds(context.Background())
		if err != nil {
			panic(err)
		}
		s.eventsCommitted = func() {
			mu.Lock()
			defer mu.Unlock()
			for {
				if _, err := s.SequenceEvents(context.Background(), 1000); err != nil {
					panic(err)
				}
				logged, err := s.ReadEvents(context.Background(), seen, 1000)
				if err != nil {
					panic(err)
				}
				if len(logged) == 0 {
					return
				}
				for _, e := range logged {
					sink.Publish(e.Event)
				}
				seen = logged[len(logged)-1].ID
			}
		}
	}
}
