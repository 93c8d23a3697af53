package client

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// SetBudgetGroup stores a budget group, new or replacing the one of its
// name (operators only), and answers it as stored. It is retried: setting
// a group to what it is already changes nothing.
func (c *Client) SetBudgetGroup(ctx context.Context, g *models.BudgetGroup) (*models.BudgetGroup, error) {
	var resp models.SetBudgetGroupResponse
	if err := c.call(ctx, models.RouteSetBudgetGroup, &models.SetBudgetGroupRequest{Group: g}, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return resp.GetGroup(), nil
}

// RemoveBudgetGroup deletes a budget group (operators only); an unknown
// name is ResourceNotFound. It is not retried: a retry after a lost answer
// would be refused as ResourceNotFound.
func (c *Client) RemoveBudgetGroup(ctx context.Context, name string) error {
	return c.call(ctx, models.RouteRemoveBudgetGroup, &models.RemoveBudgetGroupRequest{Name: name},
		&models.RemoveBudgetGroupResponse{}, sendOnce)
}

// BudgetGroups lists the budget groups in name order.
func (c *Client) BudgetGroups(ctx context.Context) ([]*models.BudgetGroup, error) {
	var resp models.BudgetGroupsResponse
	if err := c.call(ctx, models.RouteBudgetGroups, &models.BudgetGroupsRequest{}, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return resp.GetGroups(), nil
}
