package handlers

import (
	"context"
	"encoding/json"
	"net/http"

	"code.cloudfoundry.org/lager/v3"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/internal/admission"
	"github.com/corkboard/corkboard/models"
)

// servePrometheusTargets answers GET /prometheus/targets: every running
// instance as a target group of Prometheus' HTTP service discovery
// (models.PrometheusTargets says which instances, which address and which
// labels), as a JSON array, [] when there is none. The caller must be an
// API client or an operator (prometheusTargetsAccess); a refusal is a 403
// with the error in the body, as is a store failure a 503 (Unavailable)
// or a 500, so that Prometheus keeps the targets it had rather than read
// an error as an empty list.
//
// The cells are read once (for their zones), then every instance in one
// query whose rows are shaped as they are read: no query per instance.
func (a *api) servePrometheusTargets(store db.DB) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := models.PrometheusTargetsPath
		call := a.begin(w, r, route)
		if refused := authorizeAccess(call.who, route, nil, prometheusTargetsAccess); refused != nil {
			a.metrics.unauthorized.WithLabelValues(route, string(call.who.identity.Role)).Inc()
			call.fail(w, jsonCodec, http.StatusForbidden, errorOnlyResponse, refused)
			return
		}
		serving, refused := a.admissions.take(admission.Request, call.client, call.class, false)
		if refused != nil {
			call.fail(w, jsonCodec, http.StatusServiceUnavailable, errorOnlyResponse, refused)
			return
		}
		defer serving.release()

		ctx, cancel := context.WithTimeout(call.context(r), a.databaseTimeout)
		defer cancel()
		groups, err := prometheusTargets(ctx, store)
		if err != nil {
			modelErr := models.ConvertError(err)
			status := http.StatusInternalServerError
			if modelErr.GetType() == models.Error_Unavailable {
				status = http.StatusServiceUnavailable
			}
			call.fail(w, jsonCodec, status, errorOnlyResponse, modelErr)
			return
		}
		body, err := json.Marshal(groups)
		if err != nil {
			call.fail(w, jsonCodec, http.StatusInternalServerError, errorOnlyResponse,
				models.NewError(models.Error_UnknownError, "encode targets: %s", err))
			return
		}
		w.Header().Set("Content-Type", models.ContentTypeJSON)
		w.WriteHeader(http.StatusOK)
		w.Write(body) //nolint:errcheck // the client went away; nothing to do
		call.record(http.StatusOK, nil, lager.Data{"target_groups": len(groups)})
	})
}

// prometheusTargets reads the cells, then every instance, into target
// groups.
func prometheusTargets(ctx context.Context, store db.DB) ([]models.PrometheusTargetGroup, error) {
	cells, err := store.Cells(ctx)
	if err != nil {
		return nil, err
	}
	targets := models.NewPrometheusTargets(cells)
	err = store.EachActualLRP(ctx, db.ActualLRPFilter{}, func(lrp *models.ActualLRP) error {
		targets.Add(lrp)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return targets.Groups(), nil
}

// prometheusTargetsMethodNotAllowed answers any other method on
// /prometheus/targets.
func (a *api) prometheusTargetsMethodNotAllowed() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := a.begin(w, r, models.PrometheusTargetsPath)
		w.Header().Set("Allow", http.MethodGet)
		err := models.NewError(models.Error_InvalidRequest, "method: %s is not allowed; %s is a GET", r.Method, models.PrometheusTargetsPath)
		call.fail(w, jsonCodec, http.StatusMethodNotAllowed, errorOnlyResponse, err)
	})
}
