package client

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// RolloutStatus reports where the LRP's rolling update stands.
func (c *Client) RolloutStatus(ctx context.Context, processGuid string) (*models.RolloutStatus, error) {
	var resp models.RolloutStatusResponse
	req := &models.RolloutStatusRequest{ProcessGuid: processGuid}
	if err := c.call(ctx, models.RouteRolloutStatus, req, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return required(models.RouteRolloutStatus, resp.GetStatus())
}

// Rollback re-activates a kept definition (definitionID; empty lets the
// board choose, see models.RollbackRequest) and rolls the instances back
// to it. It is not repeated after a lost answer: a second rollback to the
// definition it made active is refused.
func (c *Client) Rollback(ctx context.Context, processGuid, definitionID string) (*models.RolloutStatus, error) {
	var resp models.RollbackResponse
	req := &models.RollbackRequest{ProcessGuid: processGuid, DefinitionId: definitionID}
	if err := c.call(ctx, models.RouteRollback, req, &resp, sendOnce); err != nil {
		return nil, err
	}
	return required(models.RouteRollback, resp.GetStatus())
}

// AbortRollout rolls the instances back to the healthy definition. Like
// Rollback, it is not repeated after a lost answer.
func (c *Client) AbortRollout(ctx context.Context, processGuid string) (*models.RolloutStatus, error) {
	var resp models.AbortRolloutResponse
	req := &models.AbortRolloutRequest{ProcessGuid: processGuid}
	if err := c.call(ctx, models.RouteAbortRollout, req, &resp, sendOnce); err != nil {
		return nil, err
	}
	return required(models.RouteAbortRollout, resp.GetStatus())
}
