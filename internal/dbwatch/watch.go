// Package dbwatch follows whether the board can read its database, as the
// board sees it: it reads the database every Interval and keeps
//   - the gauge corkboard_database_up (1 when the last read answered),
//   - the counters corkboard_database_outages_total and
//     corkboard_database_outage_seconds_total,
//   - a log line when an outage is noticed and when it ends, with its
//     length,
//   - the last outage, which convergence needs to judge cell presence
//     (convergence.PresenceGrace): a rep cannot renew its cell while the
//     database is unreachable either.
//
// An outage is a read that fails or takes longer than Stall: a frozen
// server answers a read late rather than failing it, once it thaws. It is
// noticed once a read fails or has gone Stall without an answer, and
// lasts from the start of the last read that answered in time to the end
// of the first that does again.
package dbwatch

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"github.com/prometheus/client_golang/prometheus"
)

// Config says how to watch.
type Config struct {
	// Read is the cheapest read of the database (what ping reads).
	Read func(ctx context.Context) error
	// Interval between reads (1 s when zero); Timeout bounds one (the
	// board's database timeout); a read slower than Stall (2 s when zero)
	// counts as an outage.
	Interval, Timeout, Stall time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Outage is the last outage the watch saw.
type Outage struct {
	// Began is the start of the last read that answered in time before
	// it; Ended the end of the first that did again, zero while Ongoing.
	Began, Ended time.Time
	Ongoing      bool
}

// Watch reads the database on a schedule; see the package comment.
type Watch struct {
	logger lager.Logger
	cfg    Config

	up       prometheus.Gauge
	outages  prometheus.Counter
	downtime prometheus.Counter

	mu sync.Mutex
	// lastRead is when the last read that answered in time started.
	lastRead time.Time
	last     Outage
}

// New returns a watch whose metrics are registered on registry (nil: none).
func New(logger lager.Logger, registry prometheus.Registerer, cfg Config) *Watch {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Stall <= 0 {
		cfg.Stall = 2 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	w := &Watch{
		logger: logger.Session("database-watch"),
		cfg:    cfg,
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corkboard_database_up",
			Help: "1 when the board's last read of its database answered in time, 0 during an outage.",
		}),
		outages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corkboard_database_outages_total",
			Help: "Database outages the board saw: reads that failed or stalled, until one answered in time.",
		}),
		downtime: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corkboard_database_outage_seconds_total",
			Help: "Seconds of the ended database outages, from the last read that answered before each to the first after.",
		}),
		lastRead: cfg.Now(),
	}
	w.up.Set(1)
	if registry != nil {
		registry.MustRegister(w.up, w.outages, w.downtime)
	}
	return w
}

// Run reads the database every Interval until signalled (an ifrit runner).
func (w *Watch) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	close(ready)
	ticker := time.NewTicker(w.cfg.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-signals:
			return nil
		case <-ticker.C:
			w.Check(context.Background())
		}
	}
}

// Check reads the database once and records what it saw. A read that
// has not answered within Stall starts the outage there and then: a
// frozen server may hold it for the whole Timeout, or longer (a driver
// that waits on its socket after the deadline), and the board is not to
// say its database is up meanwhile.
func (w *Watch) Check(ctx context.Context) {
	started := w.cfg.Now()
	readCtx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	answered := make(chan error, 1)
	go func() { answered <- w.cfg.Read(readCtx) }()
	stall := time.NewTimer(w.cfg.Stall)
	defer stall.Stop()
	var err error
	select {
	case err = <-answered:
	case <-stall.C:
		w.mu.Lock()
		w.begin(started, w.cfg.Now(), errNoAnswer)
		w.mu.Unlock()
		err = <-answered
	}
	w.record(started, w.cfg.Now(), err)
}

var errNoAnswer = errors.New("no answer yet")

func (w *Watch) record(started, ended time.Time, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	stalled := ended.Sub(started) > w.cfg.Stall
	if err != nil || stalled {
		w.begin(started, ended, err)
	}
	if err != nil {
		return
	}
	// The database answered: it is back, as of the end of this read.
	w.end(ended)
	w.lastRead = started
	if stalled {
		w.lastRead = ended
	}
}

// begin starts an outage unless one is under way.
func (w *Watch) begin(started, ended time.Time, err error) {
	if w.last.Ongoing {
		return
	}
	w.last = Outage{Began: w.lastRead, Ongoing: true}
	w.up.Set(0)
	w.outages.Inc()
	data := lager.Data{"last_read": w.lastRead.UTC().Format(time.RFC3339Nano), "read_ms": ended.Sub(started).Milliseconds()}
	if err != nil {
		data["error"] = err.Error()
	}
	w.logger.Error("database-unreachable", nil, data)
}

// end ends the outage under way, if any.
func (w *Watch) end(at time.Time) {
	if !w.last.Ongoing {
		return
	}
	w.last.Ended, w.last.Ongoing = at, false
	w.up.Set(1)
	w.downtime.Add(at.Sub(w.last.Began).Seconds())
	w.logger.Info("database-reachable", lager.Data{"outage_ms": at.Sub(w.last.Began).Milliseconds()})
}

// LastOutage is the last outage seen; zero when there was none.
func (w *Watch) LastOutage() Outage {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}
