package handlers

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/corkboard/corkboard/internal/shared"
)

// MetricsPath is where the board serves its metrics.
const MetricsPath = "/metrics"

// metricsAccess is who may read GET /metrics, which is not an API call and
// so not in routePolicy: its series name every cell (by cell id), the
// callers refused (by role) and autoscaled LRPs (by process guid), none
// of which a cell learns of other cells and LRPs through the API. A
// Prometheus server reads it as it reads the targets, with an api-client
// or operator certificate.
var metricsAccess = apiClients

// serveMetrics answers GET /metrics with metrics, to the callers
// metricsAccess lets read it; a refusal is a 403 with the error in the
// body, as on /prometheus/targets. Scrapes are not API calls: outside
// admission (see Metrics), and neither counted nor logged unless refused.
func (a *api) serveMetrics(metrics http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := identify(r, a.requireCertificates)
		if refused := authorizeAccess(who, MetricsPath, nil, metricsAccess); refused != nil {
			a.metrics.unauthorized.WithLabelValues(MetricsPath, string(who.identity.Role)).Inc()
			call := a.begin(w, r, MetricsPath)
			call.fail(w, jsonCodec, http.StatusForbidden, errorOnlyResponse, refused)
			return
		}
		metrics.ServeHTTP(w, r)
	})
}

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
