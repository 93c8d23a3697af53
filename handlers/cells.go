package handlers

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// registerCell registers the cell or renews its presence for the board's
// presence TTL, which the answer tells the rep so it can renew in time,
// together with whether the cell is draining. The fields the board owns
// (expires_at, present, free, draining) are cleared: the store computes
// them; fresh_start clears the draining flag.
func (h *storeHandlers) registerCell(ctx context.Context, req *models.RegisterCellRequest) (*models.RegisterCellResponse, error) {
	cell := req.GetCell()
	cell.ExpiresAt, cell.Present, cell.Free, cell.Draining = 0, false, nil, false
	draining, err := h.store.HeartbeatCell(ctx, cell, h.presenceTTL, req.GetFreshStart())
	if err != nil {
		return nil, err
	}
	return &models.RegisterCellResponse{PresenceTtlMs: h.presenceTTL.Milliseconds(), Draining: draining}, nil
}

// drainCell marks the cell draining. Convergence needs no pass for it:
// placement skips the cell from the next pass on, and the rep, told on its
// next heartbeat, evacuates each instance (which triggers a pass for its
// LRP).
func (h *storeHandlers) drainCell(ctx context.Context, req *models.DrainCellRequest) (*models.DrainCellResponse, error) {
	if err := h.store.DrainCell(ctx, req.GetCellId()); err != nil {
		return nil, err
	}
	return &models.DrainCellResponse{}, nil
}

// cells reads one page of the cells after cursor.
func (h *storeHandlers) cells(ctx context.Context, _ *models.CellsRequest, cursor string, limit int) ([]*models.Cell, error) {
	after, err := models.ParseCellCursor("cursor", cursor)
	if err != nil {
		return nil, err
	}
	return h.store.CellsAfter(ctx, after, limit)
}
