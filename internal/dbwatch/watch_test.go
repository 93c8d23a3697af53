package dbwatch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"

	"github.com/corkboard/corkboard/internal/dbwatch"
)

// clockedRead is a database read that takes the time the test says, on a
// clock the test moves.
type clockedRead struct {
	now  time.Time
	take time.Duration
	err  error
}

func (c *clockedRead) read(context.Context) error {
	c.now = c.now.Add(c.take)
	return c.err
}

func TestOutages(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	db := &clockedRead{now: start, take: 10 * time.Millisecond}
	w := dbwatch.New(lagertest.NewTestLogger("watch"), nil, dbwatch.Config{
		Read: db.read, Timeout: time.Second, Stall: 2 * time.Second, Now: func() time.Time { return db.now },
	})
	tick := func(gap time.Duration) {
		db.now = db.now.Add(gap)
		w.Check(context.Background())
	}

	tick(time.Second)
	if got := w.LastOutage(); got != (dbwatch.Outage{}) {
		t.Fatalf("no outage yet, got %+v", got)
	}
	lastGoodStart := db.now.Add(time.Second)
	tick(time.Second)

	// The database goes away: reads fail after the timeout.
	db.take, db.err = time.Second, errors.New("read tcp: i/o timeout")
	tick(time.Second)
	tick(time.Second)
	got := w.LastOutage()
	if !got.Ongoing || !got.Began.Equal(lastGoodStart) {
		t.Fatalf("want an ongoing outage since the start of the last good read (%s), got %+v", lastGoodStart, got)
	}

	// It comes back: the first read in time ends the outage.
	db.take, db.err = 10*time.Millisecond, nil
	tick(time.Second)
	got = w.LastOutage()
	if got.Ongoing || !got.Ended.Equal(db.now) {
		t.Fatalf("want the outage ended at %s, got %+v", db.now, got)
	}

	// A frozen server answers late: a stall is an outage that ends with it.
	tick(time.Second)
	stallStarted := db.now
	db.take = 30 * time.Second
	tick(time.Second)
	got = w.LastOutage()
	if got.Ongoing || !got.Began.Equal(stallStarted.Add(-10*time.Millisecond)) || !got.Ended.Equal(db.now) {
		t.Fatalf("want a stall recorded as an outage up to %s, got %+v", db.now, got)
	}
}

// A read the database holds (a frozen server) makes the outage start once
// it has gone Stall without an answer, not when it finally returns.
func TestOutageNoticedWhileTheReadWaits(t *testing.T) {
	release := make(chan struct{})
	w := dbwatch.New(lagertest.NewTestLogger("watch"), nil, dbwatch.Config{
		Read: func(context.Context) error {
			<-release
			return nil
		},
		Timeout: time.Minute, Stall: 50 * time.Millisecond,
	})
	checked := make(chan struct{})
	go func() {
		w.Check(context.Background())
		close(checked)
	}()
	for deadline := time.Now().Add(10 * time.Second); !w.LastOutage().Ongoing; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the read has waited past Stall and no outage was noticed")
		}
	}
	select {
	case <-checked:
		t.Fatal("the read was still waiting")
	default:
	}
	close(release)
	<-checked
	if got := w.LastOutage(); got.Ongoing || got.Ended.IsZero() {
		t.Fatalf("the late answer ends the outage, got %+v", got)
	}
}
