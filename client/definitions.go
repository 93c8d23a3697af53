package client

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// Definitions lists the stored definitions of an LRP, newest first, with
// their active and healthy marks.
func (c *Client) Definitions(ctx context.Context, processGuid string) ([]*models.DefinitionSummary, error) {
	var resp models.DefinitionsResponse
	req := &models.DefinitionsRequest{ProcessGuid: processGuid}
	if err := c.call(ctx, models.RouteDefinitions, req, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return resp.GetDefinitions(), nil
}

// Definition returns one stored definition in full.
func (c *Client) Definition(ctx context.Context, processGuid, definitionID string) (*models.LRPDefinition, error) {
	var resp models.DefinitionResponse
	req := &models.DefinitionRequest{ProcessGuid: processGuid, DefinitionId: definitionID}
	if err := c.call(ctx, models.RouteDefinition, req, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return required(models.RouteDefinition, resp.GetDefinition())
}
