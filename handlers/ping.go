package handlers

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// ping says the board is available when it can read from its database.
// Listing the fresh domains is the cheapest read the store offers: the
// table holds a handful of rows.
func (h *storeHandlers) ping(ctx context.Context, _ *models.PingRequest) (*models.PingResponse, error) {
	if _, err := h.store.FreshDomains(ctx); err != nil {
		message := models.ConvertError(err).GetMessage()
		if models.ConvertError(err).GetType() != models.Error_Unavailable {
			message = "database: " + message
		}
		return nil, models.NewError(models.Error_Unavailable, "%s", message)
	}
	return &models.PingResponse{Available: true}, nil
}
