package handlers

import (
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// endpoints lists every API route with the call that serves it.
func endpoints(store db.DB) []endpoint {
	h := &storeHandlers{store: store}
	return []endpoint{
		route(models.RoutePing, h.ping),

		route(models.RouteUpsertDomain, h.upsertDomain),
		route(models.RouteDomains, h.domains),

		route(models.RouteDesireDesiredLRP, h.desireLRP),
		route(models.RouteDesiredLRPByProcessGuid, h.desiredLRPByProcessGuid),
		route(models.RouteDesiredLRPs, h.desiredLRPs),
		route(models.RouteDesiredLRPSchedulingInfos, h.desiredLRPSchedulingInfos),
		route(models.RouteUpdateDesiredLRP, h.updateDesiredLRP),
		route(models.RouteRemoveDesiredLRP, h.removeDesiredLRP),

		route(models.RouteDefinitions, h.definitions),
		route(models.RouteDefinition, h.definition),

		route(models.RouteActualLRPs, h.actualLRPs),
	}
}

// storeHandlers turns validated request messages into store calls. Each
// method's error is a *models.Error from the store, or a plain error the
// caller reports as UnknownError.
type storeHandlers struct {
	store db.DB
}
