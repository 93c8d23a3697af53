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

// ActualLRPs lists the matching instances.
func (c *Client) ActualLRPs(ctx context.Context, filter ActualLRPFilter) ([]*models.ActualLRP, error) {
	var resp models.ActualLRPsResponse
	req := &models.ActualLRPsRequest{
		Domain:      filter.Domain,
		CellId:      filter.CellID,
		ProcessGuid: filter.ProcessGuid,
		Index:       filter.Index,
	}
	if err := c.call(ctx, models.RouteActualLRPs, req, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return resp.GetActualLrps(), nil
}
