package client

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// Cells lists every cell the board knows, present or expired, with its
// free capacity.
func (c *Client) Cells(ctx context.Context) ([]*models.Cell, error) {
	var resp models.CellsResponse
	if err := c.call(ctx, models.RouteCells, &models.CellsRequest{}, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return resp.GetCells(), nil
}
