package client

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// Page asks a list for one page (see models/list_page.go). The methods
// without Page in their name read the whole list in one call, which the
// board streams; a page is for a caller that wants to bound what it holds
// or show a screenful.
type Page struct {
	// Cursor is the next cursor of the page before; empty for the first.
	Cursor string
	// Limit is the page size, 1 to models.MaxListPage.
	Limit int32
}

// DesiredLRPsPage lists one page of the matching LRPs, in process guid
// order, and the cursor of the next page (empty on the last).
func (c *Client) DesiredLRPsPage(ctx context.Context, filter DesiredLRPFilter, page Page) ([]*models.DesiredLRP, string, error) {
	var resp models.DesiredLRPsResponse
	req := &models.DesiredLRPsRequest{Domain: filter.Domain, ProcessGuids: filter.ProcessGuids, Cursor: page.Cursor, Limit: page.Limit}
	if err := c.call(ctx, models.RouteDesiredLRPs, req, &resp, safeToRepeat); err != nil {
		return nil, "", err
	}
	return resp.GetDesiredLrps(), resp.GetNextCursor(), nil
}

// ActualLRPsPage lists one page of the matching instances, by process
// guid, index and presence name, and the cursor of the next page.
func (c *Client) ActualLRPsPage(ctx context.Context, filter ActualLRPFilter, page Page) ([]*models.ActualLRP, string, error) {
	var resp models.ActualLRPsResponse
	req := filter.request()
	req.Cursor, req.Limit = page.Cursor, page.Limit
	if err := c.call(ctx, models.RouteActualLRPs, req, &resp, safeToRepeat); err != nil {
		return nil, "", err
	}
	return resp.GetActualLrps(), resp.GetNextCursor(), nil
}

// CellsPage lists one page of the cells, by cell id, and the cursor of the
// next page.
func (c *Client) CellsPage(ctx context.Context, page Page) ([]*models.Cell, string, error) {
	var resp models.CellsResponse
	req := &models.CellsRequest{Cursor: page.Cursor, Limit: page.Limit}
	if err := c.call(ctx, models.RouteCells, req, &resp, safeToRepeat); err != nil {
		return nil, "", err
	}
	return resp.GetCells(), resp.GetNextCursor(), nil
}
