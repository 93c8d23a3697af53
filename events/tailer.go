package events

import (
	"context"
	"sync/atomic"
	"time"

	"code.cloudfoundry.org/lager/v3"
)

// Tailer reads a board's event log and appends what it finds to the
// board's hub. Before it reads, it sequences (Log.SequenceEvents) what has
// been committed since, whichever board committed it: events are logged
// as soon as any board's tailer runs. It runs when woken (a commit on this
// board, a Postgres notification from another board's sequencing) and at
// least every poll interval (MySQL and SQLite have no notification; a
// notification can be lost on a dropped connection).
//
// The log has no holes (sqldb/events.go), so a hole the tailer sees is a
// commit it sees late. It appends only the events before the hole, and
// waits for it up to holeWait before going on without it:
//
//  1. The hub has 41; a read returns 42, 44, 45.
//  2. The tailer appends 42 and reads again from 42 until 43 shows up,
//     then appends 43, 44, 45.
//  3. Should 43 still be missing holeWait after it was first seen, the
//     tailer logs it and appends 44 and 45; a subscriber resuming before
//     them then reads the log, which has whatever 43 became.
type Tailer struct {
	log      Log
	hub      *Hub
	logger   lager.Logger
	poll     time.Duration
	holeWait time.Duration
	wake     chan struct{}
	// lastRead is when (Unix nanoseconds, this host's clock) a read of the
	// log last succeeded, for the board's metrics: a board whose reads
	// keep failing serves its streams nothing new.
	lastRead atomic.Int64
}

// tailBatch is how many events one read of the log returns at most.
const tailBatch = 1000

// batchPause is how long a woken tailer waits before it sequences.
// Example: 2,000 commits a second, each waking the tailer: without the
// pause it sequences back to back, hundreds of small transactions a
// second competing with the writers; with 10 ms it runs at most about 90
// times a second, some 20 commits each, for 10 ms more latency.
const batchPause = 10 * time.Millisecond

// defaultHoleWait is how long a hole is waited for.
const defaultHoleWait = 5 * time.Second

// NewTailer returns a tailer feeding hub from log, reading at least every
// poll.
func NewTailer(log Log, hub *Hub, poll time.Duration, logger lager.Logger) *Tailer {
	return &Tailer{
		log:      log,
		hub:      hub,
		logger:   logger.Session("event-tailer"),
		poll:     poll,
		holeWait: defaultHoleWait,
		wake:     make(chan struct{}, 1),
	}
}

// Wake makes the tailer read now. It never blocks, and does nothing on a
// nil tailer (one a store's commit hook refers to before it is made).
func (t *Tailer) Wake() {
	if t == nil {
		return
	}
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Start places the hub at the end of the log, so that its subscribers get
// what is appended from now on, and tails the log until ctx ends. It
// fails when the log's end cannot be read.
func (t *Tailer) Start(ctx context.Context) error {
	_, last, err := t.log.EventLogBounds(ctx)
	if err != nil {
		return err
	}
	t.hub.startAt(last + 1)
	t.lastRead.Store(time.Now().UnixNano())
	go t.run(ctx)
	return nil
}

func (t *Tailer) run(ctx context.Context) {
	ticker := time.NewTicker(t.poll)
	defer ticker.Stop()
	var holeSince time.Time
	failing := false
	for {
		more, hole, err := t.readOnce(ctx, holeSince)
		if err == nil {
			t.lastRead.Store(time.Now().UnixNano())
		}
		switch {
		case err != nil:
			if !failing && ctx.Err() == nil {
				t.logger.Error("read-failed", err)
			}
			failing = true
		case failing:
			t.logger.Info("reading-again")
			failing = false
		}
		switch {
		case !hole:
			holeSince = time.Time{}
		case holeSince.IsZero():
			holeSince = time.Now()
		}
		if more && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-t.wake:
			// Under a stream of writes every commit wakes the tailer; a
			// short pause gathers the commits of the next milliseconds
			// into one sequencing transaction instead of one each.
			time.Sleep(batchPause)
		case <-ticker.C:
		}
	}
}

// LastRead is when a read of the log last succeeded (Start's read of its
// end counts): at most a poll interval ago while the database answers.
func (t *Tailer) LastRead() time.Time {
	return time.Unix(0, t.lastRead.Load())
}

// readOnce appends the events after the hub's newest that have no hole
// before them. It says whether a full batch was read (read again at once)
// and whether a hole stopped it. A hole first seen at holeSince is given
// up on once holeWait has passed.
func (t *Tailer) readOnce(ctx context.Context, holeSince time.Time) (more, hole bool, err error) {
	for {
		moved, err := t.log.SequenceEvents(ctx, tailBatch)
		if err != nil {
			return false, false, err
		}
		if moved < tailBatch {
			break
		}
	}
	next := t.hub.LastID() + 1
	logged, err := t.log.ReadLogged(ctx, next-1, tailBatch)
	if err != nil {
		return false, false, err
	}
	upTo := len(logged)
	for i, e := range logged {
		if e.ID != next+uint64(i) {
			upTo = i
			break
		}
	}
	if upTo < len(logged) {
		if holeSince.IsZero() || time.Since(holeSince) < t.holeWait {
			return false, true, t.hub.Append(logged[:upTo]...)
		}
		t.logger.Error("hole-skipped", nil, lager.Data{"missing_from": next + uint64(upTo), "next_present": logged[upTo].ID})
		upTo = len(logged)
	}
	if err := t.hub.Append(logged[:upTo]...); err != nil {
		return false, false, err
	}
	return len(logged) == tailBatch, false, nil
}

// Follow makes a hub on log and starts a tailer feeding it until ctx ends.
// The caller wakes the tailer after its own commits (Tailer.Wake) and
// closes the hub.
func Follow(ctx context.Context, log Log, poll time.Duration, logger lager.Logger, opts ...Option) (*Hub, *Tailer, error) {
	hub := NewHub(append(opts, WithLog(log))...)
	tailer := NewTailer(log, hub, poll, logger)
	if err := tailer.Start(ctx); err != nil {
		hub.Close()
		return nil, nil, err
	}
	return hub, tailer, nil
}
