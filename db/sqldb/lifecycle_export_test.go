package sqldb

import (
	"context"

	"github.com/corkboard/corkboard/models"
)

// LifecycleFastPath runs call's one-statement form on Postgres alone, as
// the lifecycle calls build it, without the general path behind it: wrote
// says whether it matched the row (and wrote it, or deleted it for
// remove), after is the row it wrote. A start of a row other than ORDINARY
// has no fast path (StartActualLRP); it reports hasFast false.
func (s *SQLDB) LifecycleFastPath(ctx context.Context, key models.ActualLRPKey, call models.LifecycleCall) (hasFast, wrote bool, after *models.ActualLRP, err error) {
	caller := models.Caller{InstanceGuid: call.InstanceGuid, CellID: call.CellID}
	var fast *fastLifecycle
	switch call.Verb {
	case models.LifecycleClaim:
		fast = claimPostgres(caller)
	case models.LifecycleStart:
		if key.Presence != models.ActualLRP_ORDINARY {
			return false, false, nil, nil
		}
		netInfo, err := encodeNetInfo(call.NetInfo)
		if err != nil {
			return true, false, nil, err
		}
		fast = startPostgres(caller, netInfo, models.RoutableWhenStarted(key.Index, call.Routable))
	case models.LifecycleCrash:
		fast = crashPostgres(caller, call.CrashReason)
	case models.LifecycleFail:
		fast = failPostgres(call.CellID, call.PlacementError)
	case models.LifecycleRemove:
		wrote, err := s.removePostgres(ctx, key, caller)
		return true, wrote, nil, err
	}
	after, err = s.lifecyclePostgres(ctx, lifecycleOp{key: key, call: call, fast: fast})
	return true, after != nil, after, err
}

// DefinitionRoutePorts are the routes a row of the definition takes when
// it starts.
func (s *SQLDB) DefinitionRoutePorts(ctx context.Context, processGuid, definitionID string) ([]*models.RoutePort, error) {
	return s.definitionRoutePorts(ctx, s.conn, processGuid, definitionID)
}
