package handlers

import (
	"context"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

func (h *storeHandlers) actualLRPs(ctx context.Context, req *models.ActualLRPsRequest) (*models.ActualLRPsResponse, error) {
	filter := db.ActualLRPFilter{
		Domain:      req.GetDomain(),
		CellID:      req.GetCellId(),
		ProcessGuid: req.GetProcessGuid(),
		Index:       req.Index,
	}
	lrps, err := h.store.ActualLRPs(ctx, filter)
	if err != nil {
		return nil, err
	}
	return &models.ActualLRPsResponse{ActualLrps: lrps}, nil
}
