package handlers

import (
	"time"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/models"
)

// endpoints lists every API route with the call that serves it, except the
// event stream (see serveEvents).
func endpoints(store db.DB, o options) []endpoint {
	h := &storeHandlers{store: store, presenceTTL: o.presenceTTL, converge: o.converge, planRollout: o.planRollout,
		allowLinkLocalAssetHosts: o.allowLinkLocalAssetHosts, hub: o.hub, signals: o.signals,
		maxAssetDownloads: o.maxAssetDownloads}
	return []endpoint{
		route(models.RoutePing, h.ping),

		route(models.RouteUpsertDomain, h.upsertDomain),
		route(models.RouteDomains, h.domains),

		route(models.RouteDesireDesiredLRP, h.desireLRP),
		route(models.RouteDesiredLRPByProcessGuid, h.desiredLRPByProcessGuid),
		listRoute[models.DesiredLRPsRequest, *models.DesiredLRPsRequest, *models.DesiredLRPsResponse](models.RouteDesiredLRPs, h.desiredLRPs),
		listRoute[models.DesiredLRPSchedulingInfosRequest, *models.DesiredLRPSchedulingInfosRequest, *models.DesiredLRPSchedulingInfosResponse](models.RouteDesiredLRPSchedulingInfos, h.desiredLRPSchedulingInfos),
		route(models.RouteUpdateDesiredLRP, h.updateDesiredLRP),
		route(models.RouteRemoveDesiredLRP, h.removeDesiredLRP),

		route(models.RouteDefinitions, h.definitions),
		route(models.RouteDefinition, h.definition),

		listRoute[models.ActualLRPsRequest, *models.ActualLRPsRequest, *models.ActualLRPsResponse](models.RouteActualLRPs, h.actualLRPs),

		route(models.RouteRolloutStatus, h.rolloutStatus),
		route(models.RouteRollback, h.rollback),
		route(models.RouteAbortRollout, h.abortRollout),
		route(models.RoutePromoteRollout, h.promoteRollout),
		route(models.RoutePauseRollout, h.pauseRollout),
		route(models.RouteResumeRollout, h.resumeRollout),
		route(models.RouteEditRollout, h.editRollout),
		route(models.RouteRolloutPlan, h.rolloutPlan),

		route(models.RouteAddFreezeWindow, h.addFreezeWindow),
		route(models.RouteRemoveFreezeWindow, h.removeFreezeWindow),
		route(models.RouteFreezeWindows, h.freezeWindows),
		route(models.RouteSetBudgetGroup, h.setBudgetGroup),
		route(models.RouteRemoveBudgetGroup, h.removeBudgetGroup),
		route(models.RouteBudgetGroups, h.budgetGroups),

		route(models.RouteOperations, h.operations),
		route(models.RouteOperation, h.operation),
		route(models.RouteCancelOperation, h.cancelOperation),

		route(models.RouteRegisterCell, h.registerCell),
		listRoute[models.CellsRequest, *models.CellsRequest, *models.CellsResponse](models.RouteCells, h.cells),
		route(models.RouteDrainCell, h.drainCell),
		route(models.RouteDrainStatus, h.drainStatus),
		route(models.RouteQuarantineCell, h.quarantineCell),
		route(models.RouteClearCell, h.clearCell),
		route(models.RouteClaimActualLRP, h.claimActualLRP),
		route(models.RouteStartActualLRP, h.startActualLRP),
		route(models.RouteCrashActualLRP, h.crashActualLRP),
		route(models.RouteFailActualLRP, h.failActualLRP),
		route(models.RouteRemoveActualLRP, h.removeActualLRP),
		route(models.RouteEvacuateActualLRP, h.evacuateActualLRP),
		route(models.RouteBulkReport, h.bulkReport),
		route(models.RouteReportOccupancy, h.reportOccupancy),
		route(models.RouteReportHealth, h.reportHealth),
	}
}

// storeHandlers turns validated request messages into store calls. Each
// method's error is a *models.Error from the store, or a plain error the
// caller reports as UnknownError.
type storeHandlers struct {
	store       db.DB
	presenceTTL time.Duration
	// maxAssetDownloads: see WithMaxAssetDownloadsPerCell.
	maxAssetDownloads int32
	// converge asks for a convergence pass over one LRP.
	converge func(processGuid string)
	// planRollout answers dry runs of updates (nil: not served).
	planRollout RolloutPlanner
	// allowLinkLocalAssetHosts: see WithLinkLocalAssetHosts.
	allowLinkLocalAssetHosts bool
	// hub is the board's event hub (nil: no events served), which an
	// unroutable start waits for (see startActualLRP).
	hub *events.Hub
	// signals fills rollout statuses' signals (nil: none).
	signals Signals
}

// checkAssetHosts refuses a definition whose asset URLs name link-local
// or metadata hosts, unless the board allows them; path is where the
// request holds the definition. Nothing has been written yet.
func (h *storeHandlers) checkAssetHosts(path string, def *models.LRPDefinition) error {
	return models.ValidateAssetHosts(path, def, h.allowLinkLocalAssetHosts)
}

// checkUpdateHosts refuses an update whose definition's assets or whose
// analysis' webhooks name link-local or metadata hosts, unless the board
// allows them. Nothing has been written yet.
func (h *storeHandlers) checkUpdateHosts(update *models.DesiredLRPUpdate) error {
	if err := h.checkAssetHosts("update.definition", update.GetDefinition()); err != nil {
		return err
	}
	return models.ValidateAnalysisHosts("update.analysis", update.GetAnalysis(), h.allowLinkLocalAssetHosts)
}
