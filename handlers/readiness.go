package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/internal/shared"
	"github.com/corkboard/corkboard/models"
)

// Readiness answers GET /ready for load balancers and orchestrators: 200
// "ready" when the board reads its database within timeout, 503 with the
// reason ("database unreachable: …") otherwise, so that traffic goes to
// boards that can serve it. It reads what ping reads. The endpoint is
// outside the API's admission limits (a prober has no certificate role),
// so probes that come while a read runs share it (shared.Call): a burst
// of probes costs the database one read.
func Readiness(store db.DomainDB, timeout time.Duration) http.Handler {
	var read shared.Call[struct{}]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := read.Do(r.Context(), func() (struct{}, error) {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			_, err := store.FreshDomains(ctx)
			return struct{}{}, err
		})
		if r.Context().Err() != nil {
			return // the prober went away
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(models.PrintableText(models.ConvertError(err).GetMessage()) + "\n")) //nolint:errcheck // the prober went away
			return
		}
		w.Write([]byte("ready\n")) //nolint:errcheck // the prober went away
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
