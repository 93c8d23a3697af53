package handlers

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// Freeze windows belong to no LRP: adding or removing one records no
// operation; the store logs a freeze_changed event naming who asked (as an
// operation's requested_by would), and a window keeps who added it. No pass is triggered: the planner
// reads the windows every pass, and a frozen rollout waits at most a
// periodic pass to be held or, thawed, a wake at the freeze's end.

func (h *storeHandlers) addFreezeWindow(ctx context.Context, req *models.AddFreezeWindowRequest) (*models.AddFreezeWindowResponse, error) {
	w, err := h.store.AddFreezeWindow(ctx, req.GetWindow(), callerOf(ctx))
	if err != nil {
		return nil, err
	}
	return &models.AddFreezeWindowResponse{Window: w}, nil
}

func (h *storeHandlers) removeFreezeWindow(ctx context.Context, req *models.RemoveFreezeWindowRequest) (*models.RemoveFreezeWindowResponse, error) {
	if err := h.store.RemoveFreezeWindow(ctx, req.GetName(), callerOf(ctx)); err != nil {
		return nil, err
	}
	return &models.RemoveFreezeWindowResponse{}, nil
}

// freezeWindows lists the windows and says which is active at the board's
// time, as the planner decides (models.FreezeActive).
func (h *storeHandlers) freezeWindows(ctx context.Context, _ *models.FreezeWindowsRequest) (*models.FreezeWindowsResponse, error) {
	windows, now, err := h.store.FreezeWindows(ctx)
	if err != nil {
		return nil, err
	}
	resp := &models.FreezeWindowsResponse{Windows: windows, Upcoming: models.FreezeUpcoming(windows, now, models.FreezeUpcomingHorizon)}
	if active, until := models.FreezeActive(windows, now); active != nil {
		resp.Active, resp.ActiveUntil = active.GetName(), until.UnixNano()
	}
	return resp, nil
}
