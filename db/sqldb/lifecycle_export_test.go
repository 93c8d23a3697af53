package sqldb

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// LifecycleFastPath runs call's fast path on Postgres alone, as the
// lifecycle calls build it, without the general path behind it: wrote
// says whether it wrote the row (or deleted it, for remove), after is the
// row it wrote. Every call has a fast path (hasFast).
func (s *SQLDB) LifecycleFastPath(ctx context.Context, key models.ActualLRPKey, call models.LifecycleCall) (hasFast, wrote bool, after *models.ActualLRP, err error) {
	if call.Verb == models.LifecycleStart {
		call.Routable = models.RoutableWhenStarted(key.Index, call.Routable)
	}
	after, wrote, err = s.lifecyclePostgres(ctx, lifecycleOpFor(key, call))
	return true, wrote, after, err
}

// DefinitionRoutePorts are the routes a row of the definition takes when
// it starts.
func (s *SQLDB) DefinitionRoutePorts(ctx context.Context, processGuid, definitionID string) ([]*models.RoutePort, error) {
	return s.definitionRoutePorts(ctx, s.conn, processGuid, definitionID)
}
