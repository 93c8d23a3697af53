package handlers

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// registerCell registers the cell or renews its presence for the board's
// presence TTL, which the answer tells the rep so it can renew in time.
// The fields the board owns (expires_at, present, free) are cleared: the
// store computes them.
func (h *storeHandlers) registerCell(ctx context.Context, req *models.RegisterCellRequest) (*models.RegisterCellResponse, error) {
	cell := req.GetCell()
	cell.ExpiresAt, cell.Present, cell.Free = 0, false, nil
	if err := h.store.RegisterCell(ctx, cell, h.presenceTTL); err != nil {
		return nil, err
	}
	return &models.RegisterCellResponse{PresenceTtlMs: h.presenceTTL.Milliseconds()}, nil
}

func (h *storeHandlers) cells(ctx context.Context, _ *models.CellsRequest) (*models.CellsResponse, error) {
	cells, err := h.store.Cells(ctx)
	if err != nil {
		return nil, err
	}
	return &models.CellsResponse{Cells: cells}, nil
}
