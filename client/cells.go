package client

import (
	"context"
	"time"

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

// QuarantineCell quarantines the cell: placement puts nothing new on it
// until ClearCellQuarantine; its instances keep running. reason is
// required. Operators only.
func (c *Client) QuarantineCell(ctx context.Context, cellID, reason string) error {
	return c.call(ctx, models.RouteQuarantineCell, &models.QuarantineCellRequest{CellId: cellID, Reason: reason}, &models.QuarantineCellResponse{}, safeToRepeat)
}

// ClearCellQuarantine clears the cell's quarantine. Operators only.
func (c *Client) ClearCellQuarantine(ctx context.Context, cellID string) error {
	return c.call(ctx, models.RouteClearCell, &models.ClearCellQuarantineRequest{CellId: cellID}, &models.ClearCellQuarantineResponse{}, safeToRepeat)
}

// DrainCell marks the cell draining: placement puts nothing new on it, and
// its rep, told so on its next heartbeat, evacuates its instances (each
// gets a replacement elsewhere before it stops). Draining a cell that
// drains already changes nothing; an unknown cell is ResourceNotFound. The
// flag stays until the cell's rep starts afresh (see CellClient.Heartbeat).
func (c *Client) DrainCell(ctx context.Context, cellID string) error {
	return c.call(ctx, models.RouteDrainCell, &models.DrainCellRequest{CellId: cellID}, &models.DrainCellResponse{}, safeToRepeat)
}

// DrainCellBy is DrainCell with a deadline: from now plus deadline the
// drain's evacuations go ahead whatever the LRPs' disruption budgets
// (0: no deadline; a drain under way keeps the one it has).
func (c *Client) DrainCellBy(ctx context.Context, cellID string, deadline time.Duration) error {
	req := &models.DrainCellRequest{CellId: cellID, DeadlineMs: deadline.Milliseconds()}
	return c.call(ctx, models.RouteDrainCell, req, &models.DrainCellResponse{}, safeToRepeat)
}

// DrainStatus says how the cell's drain goes: what is left on it, and
// each LRP whose disruption budget holds an evacuation.
func (c *Client) DrainStatus(ctx context.Context, cellID string) (*models.DrainStatus, error) {
	var resp models.DrainStatusResponse
	if err := c.call(ctx, models.RouteDrainStatus, &models.DrainStatusRequest{CellId: cellID}, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return resp.GetStatus(), nil
}
