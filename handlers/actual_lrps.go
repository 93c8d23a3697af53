package handlers

import (
	"context"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// actualLRPs reads one page of the matching instances after cursor.
func (h *storeHandlers) actualLRPs(ctx context.Context, req *models.ActualLRPsRequest, cursor string, limit int) ([]*models.ActualLRP, error) {
	filter := db.ActualLRPFilter{
		Domain:      req.GetDomain(),
		CellID:      req.GetCellId(),
		ProcessGuid: req.GetProcessGuid(),
		Index:       req.Index,
		Limit:       limit,
	}
	guid, index, presence, ok, err := models.ParseActualLRPCursor("cursor", cursor)
	if err != nil {
		return nil, err
	}
	if ok {
		filter.After = &db.ActualLRPKey{ProcessGuid: guid, Index: index, Presence: presence}
	}
	return h.store.ActualLRPs(ctx, filter)
}
