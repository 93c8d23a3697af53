// Package dbclock keeps a board's clock on its database's time.
//
// Boards sharing a database compare times one of them wrote with their
// own: a cell's presence (written by whichever board took its heartbeat)
// against the converging board's now, an instance's since against a
// rollout's min_ready, an operation's lease against the board that may
// adopt it. If the boards' clocks disagree by more than a presence TTL,
// the converging board reads every heartbeat another wrote as expired, or
// as far ahead. The database's clock is the one every board can read, so
// each board keeps its times on it: the machine's clock plus the offset
// of the database's clock from it, measured by reading the database's
// clock (sqldb.DatabaseTime) every Interval.
//
// A read takes a round trip, and the database read its clock somewhere
// inside it: the offset assumes the middle, so its error is at most half
// the round trip. Sync reads Samples times and keeps the quickest read,
// and refuses one slower than MaxRoundTrip. Two boards' Now then differ
// by at most the sum of their errors: half a millisecond apiece for a
// database on the same network, half of MaxRoundTrip (500 ms) apiece at
// worst, well within the default presence and lease TTLs.
//
// Worked example, a board whose clock runs 6 s ahead of the database's:
//  1. The board sends the read at 12:00:06.000 by its clock and has the
//     answer at 12:00:06.004: a round trip of 4 ms.
//  2. The database read its clock as 12:00:00.002.
//  3. Offset = 12:00:00.002 − (12:00:06.000 + 4 ms / 2) = −6.000 s, give
//     or take 2 ms.
//  4. At 12:00:10.000 by its clock, the board's Now is 12:00:04.000: the
//     database's time, which the other boards' Now gives too.
package dbclock

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Config.
const (
	// DefaultInterval is how often the offset is measured again. A
	// machine's clock drifts by a few milliseconds at most in that time
	// (500 ppm, the fastest NTP slews a clock, × 5 s = 2.5 ms); a step of
	// either clock (an NTP correction) shows by the next sync.
	DefaultInterval = 5 * time.Second
	// DefaultSamples is how many reads one sync takes.
	DefaultSamples = 3
	// DefaultMaxRoundTrip bounds the round trip of a read whose offset is
	// kept, and so the offset's error to half of it: 500 ms, well within
	// a presence TTL.
	DefaultMaxRoundTrip = time.Second
	// retryInterval is how soon a first sync that failed is tried again.
	retryInterval = time.Second
	// logShift is how far the offset moves before a sync logs it again.
	logShift = 100 * time.Millisecond
)

// Config says whose clocks to compare.
type Config struct {
	// Machine is the machine's clock (time.Now when nil).
	Machine func() time.Time
	// Read reads the database's clock once. Nil: the database's clock is
	// the machine's (SQLite, a file this process opens), and Now is
	// Machine.
	Read func(ctx context.Context) (time.Time, error)
	// Interval, Samples and MaxRoundTrip take their defaults when zero.
	// MaxRoundTrip also bounds each read: a slower one would be refused.
	Interval     time.Duration
	Samples      int
	MaxRoundTrip time.Duration
}

// Clock is the machine's clock on the database's time. Its Now is safe
// for concurrent use.
type Clock struct {
	logger lager.Logger
	cfg    Config
	gauge  prometheus.Gauge

	mu     sync.Mutex
	offset time.Duration
	synced bool
	// logged is the offset last logged; failing is set while syncs fail,
	// so that a streak of failures logs once.
	logged  time.Duration
	failing bool
}

// New returns a clock with no offset yet: Now is the machine's clock until
// the first Sync. Its gauge is registered on registry (none when nil).
func New(logger lager.Logger, registry prometheus.Registerer, cfg Config) *Clock {
	if cfg.Machine == nil {
		cfg.Machine = time.Now
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Samples <= 0 {
		cfg.Samples = DefaultSamples
	}
	if cfg.MaxRoundTrip <= 0 {
		cfg.MaxRoundTrip = DefaultMaxRoundTrip
	}
	c := &Clock{
		logger: logger.Session("database-clock"),
		cfg:    cfg,
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corkboard_database_clock_offset_seconds",
			Help: "How far the database's clock is ahead of this board's machine (negative: behind), as last measured; the board keeps its times on the database's.",
		}),
	}
	if registry != nil {
		registry.MustRegister(c.gauge)
	}
	return c
}

// Now is the machine's clock plus the last offset measured.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	offset := c.offset
	c.mu.Unlock()
	return c.cfg.Machine().Add(offset)
}

// Offset is the database's clock minus the machine's, as last measured,
// and whether any sync has measured it.
func (c *Clock) Offset() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset, c.synced
}

// Sync measures the offset again: it reads the database's clock Samples
// times and keeps the offset of the quickest read. It fails, keeping the
// offset it had, when every read failed or none came back within
// MaxRoundTrip.
func (c *Clock) Sync(ctx context.Context) error {
	if c.cfg.Read == nil {
		c.keep(0, 0)
		return nil
	}
	best := time.Duration(-1)
	var offset time.Duration
	var lastErr error
	for range c.cfg.Samples {
		if ctx.Err() != nil {
			// Stopping: no failure to report.
			return ctx.Err()
		}
		readCtx, cancel := context.WithTimeout(ctx, c.cfg.MaxRoundTrip)
		sent := c.cfg.Machine()
		database, err := c.cfg.Read(readCtx)
		answered := c.cfg.Machine()
		cancel()
		if err != nil {
			lastErr = err
			continue
		}
		roundTrip := answered.Sub(sent)
		if best >= 0 && roundTrip >= best {
			continue
		}
		best = roundTrip
		// The database read its clock half way through the round trip,
		// give or take half of it (the package's worked example).
		offset = database.Sub(sent.Add(roundTrip / 2))
	}
	switch {
	case best < 0:
		return c.failed(fmt.Errorf("every read of the database's clock failed: %w", lastErr))
	case best > c.cfg.MaxRoundTrip:
		return c.failed(fmt.Errorf("the quickest read of the database's clock took %s, more than %s", best, c.cfg.MaxRoundTrip))
	}
	c.keep(offset, best)
	return nil
}

func (c *Clock) keep(offset, roundTrip time.Duration) {
	c.mu.Lock()
	first, recovered := !c.synced, c.failing
	shifted := (offset - c.logged).Abs() >= logShift
	c.offset, c.synced, c.failing = offset, true, false
	if first || shifted {
		c.logged = offset
	}
	c.mu.Unlock()
	c.gauge.Set(offset.Seconds())
	if first || shifted || recovered {
		c.logger.Info("synced", lager.Data{"offset": offset.String(), "round_trip": roundTrip.String(), "first": first})
	}
}

func (c *Clock) failed(err error) error {
	c.mu.Lock()
	first := !c.failing
	c.failing = true
	c.mu.Unlock()
	if first {
		c.logger.Error("sync-failed", err, lager.Data{"keeping_offset": c.offsetString()})
	}
	return err
}

func (c *Clock) offsetString() string {
	offset, synced := c.Offset()
	if !synced {
		return "none yet"
	}
	return offset.String()
}

// Run is an ifrit runner: it is ready once a sync succeeded (the board's
// times are on the database's from then on), and syncs every Interval
// after, until signalled. A sync that fails keeps the last offset. A
// signal cancels the sync under way.
func (c *Clock) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-signals:
			cancel()
		case <-ctx.Done():
		}
	}()
	for c.Sync(ctx) != nil {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retryInterval):
		}
	}
	close(ready)
	ticker := time.NewTicker(c.cfg.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			_ = c.Sync(ctx)
		}
	}
}
