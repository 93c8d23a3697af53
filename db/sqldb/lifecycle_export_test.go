package sqldb

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// LifecycleFastPath runs call's fast path alone, as the lifecycle calls
// build it, without the general path behind it: wrote says whether it
// wrote the row (or deleted it, for remove), after is the row it wrote.
// hasFast says whether the store's driver has one.
func (s *SQLDB) LifecycleFastPath(ctx context.Context, key models.ActualLRPKey, call models.LifecycleCall) (hasFast, wrote bool, after *models.ActualLRP, err error) {
	fast := s.driver.lifecycle()
	if fast == nil {
		return false, false, nil, nil
	}
	if call.Verb == models.LifecycleStart {
		call.Routable = models.RoutableWhenStarted(key.Index, call.Routable)
	}
	after, wrote, err = fast(s, ctx, lifecycleOpFor(key, call))
	return true, wrote, after, err
}

// DefinitionRoutePorts are the routes a row of the definition takes when
// it starts.
func (s *SQLDB) DefinitionRoutePorts(ctx context.Context, processGuid, definitionID string) ([]*models.RoutePort, error) {
	return s.definitionRoutePorts(ctx, s.conn, processGuid, definitionID)
}

// HasLifecycleFastPath reports whether the named dialect's driver has a
// lifecycle fast path.
func HasLifecycleFastPath(dialectName string) bool {
	d, err := newDriver(dialectName)
	return err == nil && d.lifecycle() != nil
}

// RunBatch runs a batch as the MySQL fast paths run theirs (runBatch).
func (s *SQLDB) RunBatch(ctx context.Context, batch string, args ...any) (wrote bool, err error) {
	return s.runBatch(ctx, batch, args)
}
