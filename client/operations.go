package client

import (
	"context"
	"fmt"

	"github.com/corkboard/corkboard/models"
)

// OperationFilter narrows an operations listing; zero values match every
// operation.
type OperationFilter struct {
	ProcessGuid string
	Status      models.Operation_Status
	Kind        models.Operation_Kind
	// Cursor is the next cursor of the page before; empty for the first
	// page (the newest operations).
	Cursor string
	// Limit is the page size: 0 for the board's default
	// (models.DefaultOperationsPage), at most models.MaxOperationsPage.
	Limit int32
}

func (f OperationFilter) request() *models.OperationsRequest {
	return &models.OperationsRequest{
		ProcessGuid: f.ProcessGuid,
		Status:      f.Status,
		Kind:        f.Kind,
		Cursor:      f.Cursor,
		Limit:       f.Limit,
	}
}

// Operations lists one page of operations, newest first, and the cursor of
// the next page: pass it as filter.Cursor to read on; it is empty on the
// last page. Operations created while a caller pages are newer than its
// cursor, so paging neither repeats nor skips one; they show on a new first
// page.
func (c *Client) Operations(ctx context.Context, filter OperationFilter) ([]*models.Operation, string, error) {
	var resp models.OperationsResponse
	if err := c.call(ctx, models.RouteOperations, filter.request(), &resp, safeToRepeat); err != nil {
		return nil, "", err
	}
	return resp.GetOperations(), resp.GetNextCursor(), nil
}

// AllOperations follows the cursor from filter.Cursor to the last page and
// returns every operation it read, newest first; filter.Limit is the size
// of each page, not a bound on the whole. A board that answered the same
// cursor twice would loop forever; that is an error instead.
func (c *Client) AllOperations(ctx context.Context, filter OperationFilter) ([]*models.Operation, error) {
	var all []*models.Operation
	for {
		page, next, err := c.Operations(ctx, filter)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		if next == filter.Cursor {
			return nil, fmt.Errorf("%s: board answered the cursor %q it was asked for: paging would not end", models.RouteOperations, next)
		}
		filter.Cursor = next
	}
}

// Operation returns one operation with its history.
func (c *Client) Operation(ctx context.Context, id string) (*models.Operation, error) {
	var resp models.OperationResponse
	if err := c.call(ctx, models.RouteOperation, &models.OperationRequest{Id: id}, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return required(models.RouteOperation, resp.GetOperation())
}

// CancelOperation cancels an operation that has not ended and returns it
// as it ends: a PENDING one is CANCELED; an IN_PROGRESS change of
// definition is aborted (an ABORT operation rolls the LRP back to its
// healthy definition) and CANCELED. An operation that has ended is
// InvalidStateTransition. It is not repeated after a lost answer: the
// repeat would find the operation CANCELED by the first attempt and report
// InvalidStateTransition for a cancel that worked.
func (c *Client) CancelOperation(ctx context.Context, id string) (*models.Operation, error) {
	var resp models.CancelOperationResponse
	if err := c.call(ctx, models.RouteCancelOperation, &models.CancelOperationRequest{Id: id}, &resp, sendOnce); err != nil {
		return nil, err
	}
	return required(models.RouteCancelOperation, resp.GetOperation())
}
