package rep

import (
	"math/rand/v2"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// The agent follows the board's event stream to learn of changes to its
// cell's rows at once instead of at its next poll:
//
//   - followEvents keeps one stream open, filtered to the actual LRP
//     events. An event that may need the agent to act on its cell (see
//     wakesAgent) asks pollLoop to list the cell's rows now (pollNow).
//     The list, not the event, decides what to do: one code path judges
//     rows, whether a poll or an event led to them.
//   - A wake-up while a list is pending or in flight is absorbed by it
//     (pollSoon holds one token), so a burst of events costs one or two
//     lists, not one each.
//   - Opening a stream, first or again, is followed by a full sync (a
//     list of every row of the cell): what changed before the stream was
//     open, or while it was not, reaches no stream. So is events_lost
//     (the board could not resume the stream where the agent left it).
//   - While a stream is open the agent lists every PollInterval anyway, a
//     safety net for a change whose event never came; while none is open
//     (board down, stream refused or broken), it lists every
//     RetryInterval, as often as it did before it followed events.
//   - A stream that fails or ends is opened again after a backoff
//     (streamBackoffMin doubling to streamBackoffMax, jittered so that a
//     board's cells do not all come back at once after it restarts),
//     resuming after the last event the agent saw (Last-Event-ID).

const (
	// streamBackoffMin and streamBackoffMax bound the wait before the
	// agent opens a stream again: 250ms, 500ms, 1s, ... 8s, then 10s.
	streamBackoffMin = 250 * time.Millisecond
	streamBackoffMax = 10 * time.Second
	// streamIdleTimeout takes a stream on which nothing arrived for three
	// of the board's heartbeats (every 15 s) for dead.
	streamIdleTimeout = 45 * time.Second
)

// agentEventTypes are the events the agent follows: those that carry its
// cell's rows.
var agentEventTypes = []string{models.EventActualLRPCreated, models.EventActualLRPChanged, models.EventActualLRPRemoved}

// followEvents keeps an event stream open until the agent exits; see
// above.
func (a *Agent) followEvents() {
	defer a.loops.Done()
	var lastEventID uint64
	backoff := streamBackoffMin
	// refusals counts the failures to open a stream since the last one
	// opened: the first is logged at info, the rest (every 10s against a
	// board that serves no stream) at debug.
	refusals := 0
	for a.ctx.Err() == nil {
		stream, err := a.cfg.Board.Events(a.ctx, client.EventsOptions{
			Types: agentEventTypes, LastEventID: lastEventID, IdleTimeout: streamIdleTimeout,
		})
		if err != nil {
			if a.ctx.Err() != nil {
				return
			}
			refusals++
			data := lager.Data{"error": err.Error(), "attempts": refusals, "retry_in": backoff.String()}
			if refusals == 1 {
				a.logger.Info("event-stream-refused", data)
			} else {
				a.logger.Debug("event-stream-refused", data)
			}
			if !sleepCtx(a.ctx, jittered(backoff)) {
				return
			}
			backoff = min(2*backoff, streamBackoffMax)
			continue
		}
		refusals = 0

		opened := time.Now()
		a.setStreaming(true)
		a.logger.Info("event-stream-open", lager.Data{"last_event_id": lastEventID})
		// Subscribed first, listed second: a change after the list began
		// comes as an event, and one before it is in the list.
		a.pollNow()
		err = a.readEvents(stream)
		lastEventID = stream.LastEventID()
		stream.Close()
		a.setStreaming(false)
		if a.ctx.Err() != nil {
			return
		}
		if time.Since(opened) > streamBackoffMax {
			// The stream worked for a while: this is a new failure, not
			// the next of a run of them.
			backoff = streamBackoffMin
		}
		a.logger.Info("event-stream-ended", lager.Data{
			"error": err.Error(), "last_event_id": lastEventID, "lasted": time.Since(opened).Round(time.Millisecond).String(),
			"retry_in": backoff.String(),
		})
		if !sleepCtx(a.ctx, jittered(backoff)) {
			return
		}
		backoff = min(2*backoff, streamBackoffMax)
	}
}

// readEvents wakes pollLoop for every event that may concern the cell,
// until the stream fails or ends.
func (a *Agent) readEvents(stream *client.EventStream) error {
	for {
		// Next fails when the stream ends or breaks, and on a payload that
		// does not decode: the stream resumes after that event, and the
		// full sync that follows makes up for it.
		e, err := stream.Next()
		if err != nil {
			return err
		}
		if e.Type == models.EventEventsLost {
			a.logger.Info("events-lost", lager.Data{"last_event_id": stream.LastEventID()})
			a.pollNow()
			continue
		}
		if wakesAgent(e, a.cellID) {
			a.pollNow()
		}
	}
}

// wakesAgent reports whether an event may need the agent of cellID to
// act: a row placed on the cell, a row of the cell changed by the board
// (made RETIRING or SUSPECT, asked to stop, unclaimed, given to another
// cell) or removed. The changes the cell's own rep makes (a claim, a
// start, a report keeping a row CLAIMED or RUNNING on the cell as what it
// was) need nothing of it and wake nothing: otherwise every call the agent
// makes would cost a list.
func wakesAgent(e client.Event, cellID string) bool {
	switch p := e.Payload.(type) {
	case *models.ActualLRPCreatedEvent:
		return p.GetActualLrp().GetCellId() == cellID
	case *models.ActualLRPRemovedEvent:
		return p.GetActualLrp().GetCellId() == cellID
	case *models.ActualLRPChangedEvent:
		before, after := p.GetBefore(), p.GetAfter()
		if before.GetCellId() != cellID && after.GetCellId() != cellID {
			return false
		}
		return !ownProgress(before, after, cellID)
	}
	return false
}

// ownProgress reports whether a change of a row of cellID is one only
// that cell's rep makes: the row stays on the cell as the same presence,
// not asked to stop any more than it was, and ends CLAIMED or RUNNING
// (only the cell's rep claims a row for it or reports it started).
func ownProgress(before, after *models.ActualLRP, cellID string) bool {
	state := after.GetState()
	return before.GetCellId() == cellID && after.GetCellId() == cellID &&
		before.GetPresence() == after.GetPresence() &&
		before.GetStopRequested() == after.GetStopRequested() &&
		(state == models.ActualLRP_CLAIMED || state == models.ActualLRP_RUNNING)
}

// pollNow asks pollLoop to list the cell's rows at once; a request made
// while one is pending is absorbed by it.
func (a *Agent) pollNow() {
	select {
	case a.pollSoon <- struct{}{}:
	default:
	}
}

// setStreaming records whether a stream is open, and has pollLoop wait
// as long as that says: when the stream ends, a poll due within the hour
// becomes due within RetryInterval.
func (a *Agent) setStreaming(open bool) {
	a.mu.Lock()
	a.streaming = open
	a.mu.Unlock()
	select {
	case a.streamChanged <- struct{}{}:
	default:
	}
}

// pollWait is how long pollLoop waits for its next list: PollInterval
// while an event stream is open, RetryInterval (when shorter) while none
// is.
func (a *Agent) pollWait() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.streaming {
		return a.cfg.PollInterval
	}
	return min(a.cfg.PollInterval, a.cfg.RetryInterval)
}

// jittered is d shortened by up to a half, at random: 1s becomes
// somewhere in (500ms, 1s].
func jittered(d time.Duration) time.Duration {
	return d - rand.N(d/2+1)
}
