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
	return &models.RegisterCellResponse{PresenceTtlMs: h.presenceTTL.Milliseconds(), Draining: draining, MaxAssetDownloads: h.maxAssetDownloads}, nil
}

// quarantineCell and clearCell change a cell's quarantine, recording who
// asked (as an operation's requested_by names a caller) on the cell and in
// the cell_changed event they log: a cell belongs to no LRP, so no
// operation is recorded. No pass is triggered: placement reads the cells
// every pass.
func (h *storeHandlers) quarantineCell(ctx context.Context, req *models.QuarantineCellRequest) (*models.QuarantineCellResponse, error) {
	if _, err := h.store.QuarantineCell(ctx, req.GetCellId(), req.GetReason(), callerOf(ctx), -1); err != nil {
		return nil, err
	}
	return &models.QuarantineCellResponse{}, nil
}

func (h *storeHandlers) clearCell(ctx context.Context, req *models.ClearCellQuarantineRequest) (*models.ClearCellQuarantineResponse, error) {
	if err := h.store.ClearCellQuarantine(ctx, req.GetCellId(), callerOf(ctx)); err != nil {
		return nil, err
	}
	return &models.ClearCellQuarantineResponse{}, nil
}

// drainCell marks the cell draining. Convergence needs no pass for it:
// placement skips the cell from the next pass on, and the rep, told on its
// next heartbeat, evacuates each instance (which triggers a pass for its
// LRP).
// A deadline_ms bounds how long the drain waits for disruption budgets.
func (h *storeHandlers) drainCell(ctx context.Context, req *models.DrainCellRequest) (*models.DrainCellResponse, error) {
	if err := h.store.DrainCellBy(ctx, req.GetCellId(), models.Millis(req.GetDeadlineMs())); err != nil {
		return nil, err
	}
	return &models.DrainCellResponse{}, nil
}

// drainStatus says how the cell's drain goes (db.CellDB.DrainStatus).
func (h *storeHandlers) drainStatus(ctx context.Context, req *models.DrainStatusRequest) (*models.DrainStatusResponse, error) {
	status, err := h.store.DrainStatus(ctx, req.GetCellId())
	if err != nil {
		return nil, err
	}
	return &models.DrainStatusResponse{Status: status}, nil
}

// cells hands fn the cells after cursor (see listing.read): a page, or
// every cell (a board has thousands at most, each small).
func (h *storeHandlers) cells(ctx context.Context, _ *models.CellsRequest, cursor string, limit int, fn func(*models.Cell) error) error {
	after, err := models.ParseCellCursor("cursor", cursor)
	if err != nil {
		return err
	}
	var cells []*models.Cell
	if limit > 0 {
		cells, err = h.store.CellsAfter(ctx, after, limit)
	} else {
		cells, err = h.store.Cells(ctx)
	}
	if err != nil {
		return err
	}
	for _, cell := range cells {
		if cell.GetCellId() <= after {
			continue
		}
		if err := fn(cell); err != nil {
			return err
		}
	}
	return nil
}
