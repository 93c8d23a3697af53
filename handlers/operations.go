package handlers

import (
	"context"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

func (h *storeHandlers) operations(ctx context.Context, req *models.OperationsRequest) (*models.OperationsResponse, error) {
	filter := db.OperationFilter{
		ProcessGuid: req.GetProcessGuid(),
		Status:      req.GetStatus(),
		Kind:        req.GetKind(),
		Cursor:      req.GetCursor(),
		Limit:       int(req.GetLimit()),
	}
	operations, next, err := h.store.Operations(ctx, filter)
	if err != nil {
		return nil, err
	}
	return &models.OperationsResponse{Operations: operations, NextCursor: next}, nil
}

func (h *storeHandlers) operation(ctx context.Context, req *models.OperationRequest) (*models.OperationResponse, error) {
	operation, err := h.store.Operation(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return &models.OperationResponse{Operation: operation}, nil
}

// cancelOperation cancels an operation. Canceling a rollout aborts it: the
// store records an ABORT operation (naming the caller, like every write to
// an LRP) and convergence is asked to roll back at once, as after an abort.
func (h *storeHandlers) cancelOperation(ctx context.Context, req *models.CancelOperationRequest) (*models.CancelOperationResponse, error) {
	ctx, _ = noteOperation(ctx)
	operation, err := h.store.CancelOperation(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	h.converge(operation.GetProcessGuid())
	return &models.CancelOperationResponse{Operation: operation}, nil
}
