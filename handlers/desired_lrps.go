package handlers

import (
	"context"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// Every write to a DesiredLRP records an operation naming the caller (see
// noteOperation) and answers its id.

func (h *storeHandlers) desireLRP(ctx context.Context, req *models.DesireLRPRequest) (*models.DesireLRPResponse, error) {
	if err := h.checkAssetHosts("desired_lrp.definition", req.GetDesiredLrp().GetDefinition()); err != nil {
		return nil, err
	}
	ctx, note := noteOperation(ctx)
	lrp, err := h.store.DesireLRP(ctx, req.GetDesiredLrp())
	if err != nil {
		return nil, err
	}
	h.converge(lrp.GetProcessGuid())
	return &models.DesireLRPResponse{DesiredLrp: lrp, OperationId: note.Operation.GetId()}, nil
}

func (h *storeHandlers) desiredLRPByProcessGuid(ctx context.Context, req *models.DesiredLRPByProcessGuidRequest) (*models.DesiredLRPResponse, error) {
	lrp, err := h.store.DesiredLRPByProcessGuid(ctx, req.GetProcessGuid())
	if err != nil {
		return nil, err
	}
	return &models.DesiredLRPResponse{DesiredLrp: lrp}, nil
}

// desiredLRPs hands fn the matching LRPs after cursor (see listing.read).
func (h *storeHandlers) desiredLRPs(ctx context.Context, req *models.DesiredLRPsRequest, cursor string, limit int, fn func(*models.DesiredLRP) error) error {
	after, err := models.ParseDesiredLRPCursor("cursor", cursor)
	if err != nil {
		return err
	}
	// Definitions and routes may come encoded: the list only encodes them
	// again, and the JSON codec decodes them first (marshalJSON).
	return h.store.EachDesiredLRP(ctx, db.DesiredLRPFilter{Domain: req.GetDomain(), ProcessGuids: req.GetProcessGuids(), After: after, Limit: limit, KeepEncoded: true}, fn)
}

// desiredLRPSchedulingInfos hands fn the matching LRPs after cursor (see listing.read).
func (h *storeHandlers) desiredLRPSchedulingInfos(ctx context.Context, req *models.DesiredLRPSchedulingInfosRequest, cursor string, limit int, fn func(*models.DesiredLRPSchedulingInfo) error) error {
	after, err := models.ParseDesiredLRPCursor("cursor", cursor)
	if err != nil {
		return err
	}
	// Routes may come encoded, as for desiredLRPs.
	return h.store.EachDesiredLRPSchedulingInfo(ctx, db.DesiredLRPFilter{Domain: req.GetDomain(), ProcessGuids: req.GetProcessGuids(), After: after, Limit: limit, KeepEncoded: true}, fn)
}

func (h *storeHandlers) updateDesiredLRP(ctx context.Context, req *models.UpdateDesiredLRPRequest) (*models.UpdateDesiredLRPResponse, error) {
	if err := h.checkUpdateHosts(req.GetUpdate()); err != nil {
		return nil, err
	}
	ctx, note := noteOperation(ctx)
	lrp, err := h.store.UpdateDesiredLRP(ctx, req.GetProcessGuid(), req.GetUpdate())
	if err != nil {
		return nil, err
	}
	if models.UpdateConverges(req.GetUpdate()) {
		h.converge(req.GetProcessGuid())
	}
	return &models.UpdateDesiredLRPResponse{DesiredLrp: lrp, OperationId: note.Operation.GetId()}, nil
}

func (h *storeHandlers) removeDesiredLRP(ctx context.Context, req *models.RemoveDesiredLRPRequest) (*models.RemoveDesiredLRPResponse, error) {
	ctx, note := noteOperation(ctx)
	if err := h.store.RemoveDesiredLRP(ctx, req.GetProcessGuid()); err != nil {
		return nil, err
	}
	h.converge(req.GetProcessGuid())
	return &models.RemoveDesiredLRPResponse{OperationId: note.Operation.GetId()}, nil
}
