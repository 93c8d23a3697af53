package e2e_test

import (
	"context"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// eventLog records the board's events of some types, in the board's
// order, from the moment it is made until stopped. A stream that breaks is
// resumed after the last event it delivered; an events_lost (the board no
// longer had what followed) is counted, since the record then has a gap.
type eventLog struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	events []client.Event
	lost   int
}

func recordEvents(b *board, types ...string) *eventLog {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	api := b.client()
	stream, err := api.Events(ctx, client.EventsOptions{Types: types})
	Expect(err).NotTo(HaveOccurred())
	l := &eventLog{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for ctx.Err() == nil {
			event, err := stream.Next()
			if err != nil {
				last := stream.LastEventID()
				stream.Close()
				stream = nil
				for ctx.Err() == nil {
					if stream, err = api.Events(ctx, client.EventsOptions{Types: types, LastEventID: last}); err == nil {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				continue
			}
			l.mu.Lock()
			if event.Type == models.EventEventsLost {
				l.lost++
			} else {
				l.events = append(l.events, event)
			}
			l.mu.Unlock()
		}
		if stream != nil {
			stream.Close()
		}
	}()
	DeferCleanup(l.stop)
	return l
}

// stop ends the recording and returns the events and how many times some
// were lost.
func (l *eventLog) stop() ([]client.Event, int) {
	l.cancel()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events), l.lost
}

// soFar is the events recorded up to now, while it goes on.
func (l *eventLog) soFar() []client.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}
