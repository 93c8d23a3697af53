package client

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// AddFreezeWindow stores a freeze window (operators only) and answers it as
// stored, with its created_at. A name stored already is ResourceExists.
// It is not retried: a retry after a lost answer would be refused as
// ResourceExists.
func (c *Client) AddFreezeWindow(ctx context.Context, w *models.FreezeWindow) (*models.FreezeWindow, error) {
	var resp models.AddFreezeWindowResponse
	if err := c.call(ctx, models.RouteAddFreezeWindow, &models.AddFreezeWindowRequest{Window: w}, &resp, sendOnce); err != nil {
		return nil, err
	}
	return resp.GetWindow(), nil
}

// RemoveFreezeWindow deletes a freeze window (operators only); an unknown
// name is ResourceNotFound.
func (c *Client) RemoveFreezeWindow(ctx context.Context, name string) error {
	return c.call(ctx, models.RouteRemoveFreezeWindow, &models.RemoveFreezeWindowRequest{Name: name},
		&models.RemoveFreezeWindowResponse{}, sendOnce)
}

// FreezeWindows lists the freeze windows in name order, and which one is
// active at the board's time and until when.
func (c *Client) FreezeWindows(ctx context.Context) (*models.FreezeWindowsResponse, error) {
	var resp models.FreezeWindowsResponse
	if err := c.call(ctx, models.RouteFreezeWindows, &models.FreezeWindowsRequest{}, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return &resp, nil
}
