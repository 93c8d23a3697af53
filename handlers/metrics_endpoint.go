package handlers

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/corkboard/corkboard/internal/shared"
)

// MaxScrapesInFlight is how many scrapes of /metrics are answered at
// once; one more is answered 503 at once (a Prometheus server scrapes
// again at its next interval). A board is scraped by one or two servers
// and now and then a person.
const MaxScrapesInFlight = 10

// Metrics answers GET /metrics with what registry gathers. Like /ready it
// is outside the API's admission limits, so it bounds itself: scrapes
// that come while a gathering runs share it (shared.Call), and at most
// MaxScrapesInFlight are answered at once.
func Metrics(registry *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(&sharedGatherer{gatherer: registry}, promhttp.HandlerOpts{
		Registry:            registry,
		MaxRequestsInFlight: MaxScrapesInFlight,
	})
}

// sharedGatherer is a gatherer whose concurrent callers share one
// gathering. Its families are read, never changed, by the scrapes
// encoding them.
type sharedGatherer struct {
	gatherer prometheus.Gatherer
	call     shared.Call[[]*dto.MetricFamily]
}

func (g *sharedGatherer) Gather() ([]*dto.MetricFamily, error) {
	return g.call.Do(context.Background(), g.gatherer.Gather)
}
