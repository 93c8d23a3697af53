package handlers

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corkboard/corkboard/models"
)

// Outcome label values besides the error type names (InvalidRequest, ...).
const (
	outcomeSuccess = "success"
	// routeUnmatched labels requests for paths the API does not serve, so a
	// scanner cannot blow up the label set with made-up paths.
	routeUnmatched = "unmatched"
)

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// unauthorized counts refusals by route and the caller's role (never
	// its cell id, which would make a series per cell).
	unauthorized *prometheus.CounterVec
	// inUse and limitRejections are about the limits (see limits.go): how
	// much of each is in use, and how many requests each refused, by the
	// callers' class (never a cell id or certificate).
	inUse           *prometheus.GaugeVec
	limitRejections *prometheus.CounterVec
}

func newMetrics(registry prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corkboard_http_requests_total",
			Help: "API requests by route and outcome (success or the error type).",
		}, []string{"route", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "corkboard_http_request_duration_seconds",
			Help: "API request latency by route, from the first byte read to the last byte written.",
			// Fine below 20 ms, where the board is meant to answer.
			Buckets: []float64{.0005, .001, .0025, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route"}),
		unauthorized: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corkboard_http_unauthorized_total",
			Help: "API requests refused as Unauthorized, by route and the caller's role (cell, api-client, operator, board, none).",
		}, []string{"route", "identity"}),
		inUse: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "corkboard_http_limit_in_use",
			Help: "How much of each limit is in use, by limit (requests_in_flight: requests served, event streams aside; body_readers: request bodies being read; list_streams: whole lists being streamed; event_subscribers) and the callers' class (cell, api-client, operator, board, none, anonymous).",
		}, []string{"limit", "class"}),
		limitRejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corkboard_http_limit_rejections_total",
			Help: "API requests answered ResourceExhausted because a limit was reached, by limit (requests_in_flight, requests_per_client, list_streams_per_client, body_readers_per_client, event_subscribers) and the caller's class (cell, api-client, operator, board, none, anonymous).",
		}, []string{"limit", "class"}),
	}
	if registry != nil {
		m.requests = register(registry, m.requests)
		m.duration = register(registry, m.duration)
		m.unauthorized = register(registry, m.unauthorized)
		m.inUse = register(registry, m.inUse)
		m.limitRejections = register(registry, m.limitRejections)
	}
	return m
}

// register adds c to the registry, or reuses the collector already there, so
// that two handlers built on one registry share their series.
func register[C prometheus.Collector](registry prometheus.Registerer, c C) C {
	err := registry.Register(c)
	if err == nil {
		return c
	}
	var exists prometheus.AlreadyRegisteredError
	if errors.As(err, &exists) {
		if existing, ok := exists.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic("register metrics: " + err.Error())
}

func (m *metrics) observe(route, outcome string, seconds float64) {
	m.requests.WithLabelValues(route, outcome).Inc()
	// An event stream lasts as long as its subscriber stays: its duration
	// is no latency, and would swamp the histogram.
	if route != models.RouteEvents {
		m.duration.WithLabelValues(route).Observe(seconds)
	}
}
