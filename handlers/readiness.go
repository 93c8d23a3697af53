package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// Readiness answers GET /ready for load balancers and orchestrators: 200
// "ready" when the board reads its database within timeout, 503 with the
// reason ("database unreachable: …") otherwise, so that traffic goes to
// boards that can serve it. It reads what ping reads.
func Readiness(store db.DomainDB, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if _, err := store.FreshDomains(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(models.PrintableText(models.ConvertError(err).GetMessage()) + "\n")) //nolint:errcheck // the prober went away
			return
		}
		w.Write([]byte("ready\n")) //nolint:errcheck // the prober went away
	})
}
