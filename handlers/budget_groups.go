package handlers

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// Budget groups belong to no LRP, as freeze windows: setting or removing
// one records no operation; the store logs a budget_group_changed event
// naming who asked, and a group keeps who last set it. No pass is
// triggered: the planner reads the groups every pass, and a drain's
// hand-over reads its LRP's group when it asks.

func (h *storeHandlers) setBudgetGroup(ctx context.Context, req *models.SetBudgetGroupRequest) (*models.SetBudgetGroupResponse, error) {
	g, err := h.store.SetBudgetGroup(ctx, req.GetGroup(), callerOf(ctx))
	if err != nil {
		return nil, err
	}
	return &models.SetBudgetGroupResponse{Group: g}, nil
}

func (h *storeHandlers) removeBudgetGroup(ctx context.Context, req *models.RemoveBudgetGroupRequest) (*models.RemoveBudgetGroupResponse, error) {
	if err := h.store.RemoveBudgetGroup(ctx, req.GetName(), callerOf(ctx)); err != nil {
		return nil, err
	}
	return &models.RemoveBudgetGroupResponse{}, nil
}

func (h *storeHandlers) budgetGroups(ctx context.Context, _ *models.BudgetGroupsRequest) (*models.BudgetGroupsResponse, error) {
	groups, err := h.store.BudgetGroups(ctx)
	if err != nil {
		return nil, err
	}
	return &models.BudgetGroupsResponse{Groups: groups}, nil
}
