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
)
