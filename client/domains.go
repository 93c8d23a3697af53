package client

import (
	"context"
	"time"

	"github.com/corkboard/corkboard/models"
)

// UpsertDomain marks domain fresh for ttl; 0 keeps it fresh forever. The
// board counts whole seconds, so a fraction rounds up rather than down to
// "forever".
func (c *Client) UpsertDomain(ctx context.Context, domain string, ttl time.Duration) error {
	seconds := int64(ttl / time.Second)
	if ttl%time.Second > 0 {
		seconds++
	}
	req := &models.UpsertDomainRequest{Domain: domain, TtlSeconds: seconds}
	return c.call(ctx, models.RouteUpsertDomain, req, &models.UpsertDomainResponse{}, safeToRepeat)
}

// Domains lists the fresh domains.
func (c *Client) Domains(ctx context.Context) ([]*models.Domain, error) {
	var resp models.DomainsResponse
	if err := c.call(ctx, models.RouteDomains, &models.DomainsRequest{}, &resp, safeToRepeat); err != nil {
		return nil, err
	}
	return resp.GetDomains(), nil
}
