package handlers

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

func (h *storeHandlers) definitions(ctx context.Context, req *models.DefinitionsRequest) (*models.DefinitionsResponse, error) {
	definitions, err := h.store.Definitions(ctx, req.GetProcessGuid())
	if err != nil {
		return nil, err
	}
	return &models.DefinitionsResponse{Definitions: definitions}, nil
}

func (h *storeHandlers) definition(ctx context.Context, req *models.DefinitionRequest) (*models.DefinitionResponse, error) {
	definition, err := h.store.Definition(ctx, req.GetProcessGuid(), req.GetDefinitionId())
	if err != nil {
		return nil, err
	}
	return &models.DefinitionResponse{Definition: definition}, nil
}
