package handlers

import (
	"context"
	"net/http"
	"time"

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
// of probes costs the database one read. While outage (nil: never) says
// the board's database watch sees an outage under way, a probe is
// answered 503 at once rather than after a read the database may hold
// for all of timeout: a prober's own timeout is often shorter, and it
// would see no answer rather than the reason.
func Readiness(store db.DomainDB, timeout time.Duration, outage func() (since time.Time, ongoing bool)) http.Handler {
	var read shared.Call[struct{}]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer := func(status int, text string) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(status)
			w.Write([]byte(text + "\n")) //nolint:errcheck // the prober went away
		}
		if outage != nil {
			if since, ongoing := outage(); ongoing {
				answer(http.StatusServiceUnavailable, "database unreachable: no answer in time since "+since.UTC().Format(time.RFC3339)+" (the board's database watch)")
				return
			}
		}
		_, err := read.Do(r.Context(), func() (struct{}, error) {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			_, err := store.FreshDomains(ctx)
			return struct{}{}, err
		})
		if r.Context().Err() != nil {
			return // the prober went away
		}
		if err != nil {
			answer(http.StatusServiceUnavailable, models.PrintableText(models.ConvertError(err).GetMessage()))
			return
		}
		answer(http.StatusOK, "ready")
	})
}
