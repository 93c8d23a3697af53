package executor

import "sync"

// eventsBuffer is the capacity of the channel Events returns; beyond it
// events wait in the queue.
const eventsBuffer = 64

// eventQueue delivers events in order through a channel without ever
// blocking the sender: an agent that calls Stop from the loop that reads
// Events must not deadlock on a full channel.
type eventQueue struct {
	out  chan Event
	wake chan struct{}

	mu      sync.Mutex
	pending []Event
}

func newEventQueue() *eventQueue {
	q := &eventQueue{out: make(chan Event, eventsBuffer), wake: make(chan struct{}, 1)}
	go q.pump()
	return q
}

func (q *eventQueue) push(ev Event) {
	q.mu.Lock()
	q.pending = append(q.pending, ev)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pump runs for the life of the process; an idle pump only waits.
func (q *eventQueue) pump() {
	for {
		q.mu.Lock()
		if len(q.pending) == 0 {
			q.mu.Unlock()
			<-q.wake
			continue
		}
		ev := q.pending[0]
		q.pending[0] = Event{}
		q.pending = q.pending[1:]
		q.mu.Unlock()
		q.out <- ev
	}
}
