package client

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// Ping reports whether the board is available.
func (c *Client) Ping(ctx context.Context) (bool, error) {
	var resp models.PingResponse
	if err := c.call(ctx, models.RoutePing, &models.PingRequest{}, &resp, safeToRepeat); err != nil {
		return false, err
	}
	return resp.GetAvailable(), nil
}
