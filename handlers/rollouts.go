package handlers

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

func (h *storeHandlers) rolloutStatus(ctx context.Context, req *models.RolloutStatusRequest) (*models.RolloutStatusResponse, error) {
	status, err := h.store.RolloutStatus(ctx, req.GetProcessGuid())
	if err != nil {
		return nil, err
	}
	return &models.RolloutStatusResponse{Status: status}, nil
}

// rollback re-activates a kept definition and asks convergence to start
// rolling to it at once, as an update does. Like abort, it records an
// operation naming the caller; the store puts its id in the status.
func (h *storeHandlers) rollback(ctx context.Context, req *models.RollbackRequest) (*models.RollbackResponse, error) {
	ctx, _ = noteOperation(ctx)
	status, err := h.store.Rollback(ctx, req.GetProcessGuid(), req.GetDefinitionId())
	if err != nil {
		return nil, err
	}
	h.converge(req.GetProcessGuid())
	return &models.RollbackResponse{Status: status}, nil
}

func (h *storeHandlers) abortRollout(ctx context.Context, req *models.AbortRolloutRequest) (*models.AbortRolloutResponse, error) {
	ctx, _ = noteOperation(ctx)
	status, err := h.store.AbortRollout(ctx, req.GetProcessGuid())
	if err != nil {
		return nil, err
	}
	h.converge(req.GetProcessGuid())
	return &models.AbortRolloutResponse{Status: status}, nil
}
