package handlers

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corkboard/corkboard/models"
)

// Names of the limits, as metrics label them and refusals name them.
const (
	limitRequestsInFlight = "requests_in_flight"
	limitEventSubscribers = "event_subscribers"
)

// limit bounds how many of something the board serves at once. A request
// beyond it is answered at once with ResourceExhausted rather than queued:
// a board that is already behind only falls further behind by waiting,
// and the caller can retry (a rep retries on its next tick).
type limit struct {
	name string
	// what is the limit in words, for the refusal.
	what  string
	max   int64
	inUse atomic.Int64
	// gauge shows inUse; rejected counts the refusals.
	gauge    prometheus.Gauge
	rejected prometheus.Counter
}

func newLimit(name, what string, max int, m *metrics) *limit {
	return &limit{
		name:     name,
		what:     what,
		max:      int64(max),
		gauge:    m.inUse.WithLabelValues(name),
		rejected: m.limitRejections.WithLabelValues(name),
	}
}

// acquire takes one place, and says false, counting a refusal, when none
// is left. Every true is paired with a release.
func (l *limit) acquire() bool {
	if l.inUse.Add(1) > l.max {
		l.inUse.Add(-1)
		l.rejected.Inc()
		return false
	}
	l.gauge.Inc()
	return true
}

func (l *limit) release() {
	l.inUse.Add(-1)
	l.gauge.Dec()
}

// exhausted is the refusal of a request beyond the limit.
func (l *limit) exhausted() *models.Error {
	return models.NewError(models.Error_ResourceExhausted, "%s: the board serves at most %d %s at once; retry later", l.name, l.max, l.what)
}
