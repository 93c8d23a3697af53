package handlers

import (
	"context"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// actualLRPs hands fn the matching instances after cursor (see
// listing.read).
func (h *storeHandlers) actualLRPs(ctx context.Context, req *models.ActualLRPsRequest, cursor string, limit int, fn func(*models.ActualLRP) error) error {
	filter := db.ActualLRPFilter{
		Domain:      req.GetDomain(),
		CellID:      req.GetCellId(),
		ProcessGuid: req.GetProcessGuid(),
		Index:       req.Index,
		Limit:       limit,
	}
	guid, index, presence, ok, err := models.ParseActualLRPCursor("cursor", cursor)
	if err != nil {
		return err
	}
	if ok {
		filter.After = &models.ActualLRPKey{ProcessGuid: guid, Index: index, Presence: presence}
	}
	return h.store.EachActualLRP(ctx, filter, fn)
}
