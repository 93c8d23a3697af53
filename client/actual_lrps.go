package client

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// ActualLRPFilter narrows list reads; zero values match everything, and a nil
// Index matches every index.
type ActualLRPFilter struct {
	Domain      string
	CellID      string
	ProcessGuid string
	Index       *int32
}

// ActualLRPs lists the matching instances, by process guid, index and
// presence name.
func (c *Client) ActualLRPs(ctx context.Context, filter ActualLRPFilter) ([]*models.ActualLRP, error) {
	var resp models.ActualLRPsResponse
	if err := c.call(ctx, models.RouteActualLRPs, filter.request(), &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return resp.GetActualLrps(), nil
}

func (f ActualLRPFilter) request() *models.ActualLRPsRequest {
	return &models.ActualLRPsRequest{
		Domain:      f.Domain,
		CellId:      f.CellID,
		ProcessGuid: f.ProcessGuid,
		Index:       f.Index,
	}
}
