package handlers

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// The cell side of the instance lifecycle. Claim, start, crash and fail act
// on the ORDINARY row of an index, the one a rep is placed on; remove names
// the presence, since a rep also stops the SUSPECT or EVACUATING rows it
// runs. The store checks the transition and that the row belongs to the
// calling cell.

func ordinaryKey(processGuid string, index int32) models.ActualLRPKey {
	return models.ActualLRPKey{ProcessGuid: processGuid, Index: index, Presence: models.ActualLRP_ORDINARY}
}

func (h *storeHandlers) claimActualLRP(ctx context.Context, req *models.ClaimActualLRPRequest) (*models.ActualLRPLifecycleResponse, error) {
	caller := models.Caller{InstanceGuid: req.GetInstanceGuid(), CellID: req.GetCellId()}
	lrp, err := h.store.ClaimActualLRP(ctx, ordinaryKey(req.GetProcessGuid(), req.GetIndex()), caller)
	if err != nil {
		return nil, err
	}
	return &models.ActualLRPLifecycleResponse{ActualLrp: lrp}, nil
}

// startActualLRP marks the instance RUNNING; it is routable unless the
// request says otherwise. A request naming another presence than ORDINARY
// changes only the routable (and net info) of that RUNNING row.
func (h *storeHandlers) startActualLRP(ctx context.Context, req *models.StartActualLRPRequest) (*models.ActualLRPLifecycleResponse, error) {
	caller := models.Caller{InstanceGuid: req.GetInstanceGuid(), CellID: req.GetCellId()}
	routable := req.Routable == nil || req.GetRoutable()
	key := ordinaryKey(req.GetProcessGuid(), req.GetIndex())
	if req.GetPresence() != models.ActualLRP_PRESENCE_UNKNOWN {
		key.Presence = req.GetPresence()
	}
	lrp, err := h.store.StartActualLRP(ctx, key, caller, req.GetNetInfo(), routable)
	if err != nil {
		return nil, err
	}
	if !routable && h.hub != nil {
		// The rep stops the instance once this answers: routers following
		// this board must have been handed the event first. The store
		// answered once the event is in the log; should the database
		// freeze before this board's tailer read it, the rep hears
		// Unavailable, asks again, and the instance serves on meanwhile.
		if err := h.hub.CatchUp(ctx); err != nil {
			if models.IsErrorType(err, models.Error_Unavailable) {
				return nil, err
			}
			return nil, models.NewError(models.Error_Unavailable,
				"actual LRP %s/%d is unroutable in the log, but this board's event subscribers were not yet given it: %v",
				req.GetProcessGuid(), req.GetIndex(), err)
		}
	}
	return &models.ActualLRPLifecycleResponse{ActualLrp: lrp}, nil
}

func (h *storeHandlers) crashActualLRP(ctx context.Context, req *models.CrashActualLRPRequest) (*models.ActualLRPLifecycleResponse, error) {
	caller := models.Caller{InstanceGuid: req.GetInstanceGuid(), CellID: req.GetCellId()}
	lrp, err := h.store.CrashActualLRP(ctx, ordinaryKey(req.GetProcessGuid(), req.GetIndex()), caller, req.GetCrashReason())
	if err != nil {
		return nil, err
	}
	h.converge(req.GetProcessGuid())
	return &models.ActualLRPLifecycleResponse{ActualLrp: lrp}, nil
}

func (h *storeHandlers) failActualLRP(ctx context.Context, req *models.FailActualLRPRequest) (*models.ActualLRPLifecycleResponse, error) {
	lrp, err := h.store.FailActualLRP(ctx, ordinaryKey(req.GetProcessGuid(), req.GetIndex()), req.GetCellId(), req.GetPlacementError())
	if err != nil {
		return nil, err
	}
	h.converge(req.GetProcessGuid())
	return &models.ActualLRPLifecycleResponse{ActualLrp: lrp}, nil
}

func (h *storeHandlers) removeActualLRP(ctx context.Context, req *models.RemoveActualLRPRequest) (*models.ActualLRPLifecycleResponse, error) {
	key := models.ActualLRPKey{ProcessGuid: req.GetProcessGuid(), Index: req.GetIndex(), Presence: req.GetPresence()}
	caller := models.Caller{InstanceGuid: req.GetInstanceGuid(), CellID: req.GetCellId()}
	if err := h.store.RemoveActualLRP(ctx, key, caller); err != nil {
		return nil, err
	}
	h.converge(req.GetProcessGuid())
	return &models.ActualLRPLifecycleResponse{}, nil
}

// evacuateActualLRP hands an instance of a draining cell over to a
// replacement and asks convergence to place the replacement at once.
func (h *storeHandlers) evacuateActualLRP(ctx context.Context, req *models.EvacuateActualLRPRequest) (*models.EvacuateActualLRPResponse, error) {
	caller := models.Caller{InstanceGuid: req.GetInstanceGuid(), CellID: req.GetCellId()}
	keepRunning, err := h.store.EvacuateActualLRP(ctx, req.GetProcessGuid(), req.GetIndex(), caller)
	if err != nil {
		return nil, err
	}
	h.converge(req.GetProcessGuid())
	return &models.EvacuateActualLRPResponse{KeepRunning: keepRunning}, nil
}

func (h *storeHandlers) bulkReport(ctx context.Context, req *models.BulkReportRequest) (*models.BulkReportResponse, error) {
	result, err := h.store.BulkReport(ctx, req.GetCellId(), req.GetInstances())
	if err != nil {
		return nil, err
	}
	if result == nil {
		return &models.BulkReportResponse{}, nil
	}
	for _, guid := range result.OccupancyChanged {
		h.converge(guid)
	}
	return &models.BulkReportResponse{Stop: result.Stop, Assigned: result.Assigned}, nil
}

// reportHealth logs a cell's health report, an event per entry, for
// every board's signals. It triggers no convergence: nothing the planner
// reads changed.
func (h *storeHandlers) reportHealth(ctx context.Context, req *models.ReportHealthRequest) (*models.ReportHealthResponse, error) {
	if err := h.store.LogHealth(ctx, req.GetCellId(), req.GetHealth()); err != nil {
		return nil, err
	}
	return &models.ReportHealthResponse{}, nil
}

// reportOccupancy applies a cell's batch of occupancy changes and asks
// convergence for a pass over each LRP whose rows changed: an autoscaled
// count follows occupancy within a pass.
func (h *storeHandlers) reportOccupancy(ctx context.Context, req *models.ReportOccupancyRequest) (*models.ReportOccupancyResponse, error) {
	result, err := h.store.ReportOccupancy(ctx, req.GetCellId(), req.GetChanges())
	if err != nil {
		return nil, err
	}
	if result == nil {
		return &models.ReportOccupancyResponse{}, nil
	}
	for _, guid := range result.Changed {
		h.converge(guid)
	}
	return &models.ReportOccupancyResponse{Applied: int32(result.Applied)}, nil
}
