package models

// The causes a BlockedBy names. One word per cause: the planner sets them,
// cork, the dashboard and the corkboard_blocked metric show them.
const (
	BlockedNoCapacity       = "no_capacity"
	BlockedHealthCheck      = "health_check_failing"
	BlockedBudgetExhausted  = "budget_exhausted"
	BlockedFrozen           = "frozen"
	BlockedQueued           = "queued"
	BlockedAwaitingPromote  = "awaiting_promote"
	BlockedMinReady         = "waiting_for_min_ready"
	BlockedBaking           = "baking"
	BlockedCellUnreachable  = "cell_unreachable"
	BlockedDownloadFailing  = "asset_download_failing"
	BlockedPlacementRefused = "placement_refused_by_tags"
	BlockedStartFailing     = "start_failing"
)

// BlockedReasons are the causes above, in the order of the constants: the
// reason label values corkboard_blocked is published with (0 when
// nothing is blocked by one).
var BlockedReasons = []string{
	BlockedNoCapacity, BlockedHealthCheck, BlockedBudgetExhausted, BlockedFrozen, BlockedQueued,
	BlockedAwaitingPromote, BlockedMinReady, BlockedBaking, BlockedCellUnreachable,
	BlockedDownloadFailing, BlockedPlacementRefused, BlockedStartFailing,
}

// The beginnings of the crash reasons a rep reports (rep/agent_instance.go
// and rep/executor) that the planner tells apart when it says why a
// rollout is blocked: a start that failed putting an asset in place
// ("could not start: asset URL: HTTP 404 Not Found"), a start that failed
// otherwise ("could not start: ..."; its action's path is missing, the
// cell's port range is exhausted), and an instance
// its health check failed ("did not become healthy within 60s: GET
// /health on port 8080: 503", "health check failed 3 times in a row:
// ..."). The rep builds its reasons from them, so the two cannot drift.
const (
	CrashCouldNotStart     = "could not start: "
	CrashAsset             = "asset "
	CrashNeverHealthy      = "did not become healthy within "
	CrashHealthCheckFailed = "health check failed"
)
