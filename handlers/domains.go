package handlers

import (
	"context"
	"time"

	"github.com/corkboard/corkboard/models"
)

func (h *storeHandlers) upsertDomain(ctx context.Context, req *models.UpsertDomainRequest) (*models.UpsertDomainResponse, error) {
	ttl := time.Duration(req.GetTtlSeconds()) * time.Second
	if err := h.store.UpsertDomain(ctx, req.GetDomain(), ttl); err != nil {
		return nil, err
	}
	return &models.UpsertDomainResponse{}, nil
}

func (h *storeHandlers) domains(ctx context.Context, _ *models.DomainsRequest) (*models.DomainsResponse, error) {
	domains, err := h.store.FreshDomains(ctx)
	if err != nil {
		return nil, err
	}
	return &models.DomainsResponse{Domains: domains}, nil
}
