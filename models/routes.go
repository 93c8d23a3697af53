package models

// API routes. Every call is a POST with a protobuf (or protojson) body.
const (
	RoutePing = "/v1/ping"

	RouteUpsertDomain = "/v1/domains/upsert"
	RouteDomains      = "/v1/domains/list"

	RouteDesireDesiredLRP          = "/v1/desired_lrps/desire"
	RouteDesiredLRPByProcessGuid   = "/v1/desired_lrps/get"
	RouteDesiredLRPs               = "/v1/desired_lrps/list"
	RouteDesiredLRPSchedulingInfos = "/v1/desired_lrp_scheduling_infos/list"
	RouteUpdateDesiredLRP          = "/v1/desired_lrps/update"
	RouteRemoveDesiredLRP          = "/v1/desired_lrps/remove"

	RouteDefinitions = "/v1/definitions/list"
	RouteDefinition  = "/v1/definitions/get"

	RouteActualLRPs = "/v1/actual_lrps/list"

	// Rolling updates: where one stands, and taking one back.
	RouteRolloutStatus = "/v1/rollouts/status"
	RouteRollback      = "/v1/rollouts/rollback"
	RouteAbortRollout  = "/v1/rollouts/abort"
	// Staged phases: the next phase, and freezing or restarting its clock.
	RoutePromoteRollout = "/v1/rollouts/promote"
	RoutePauseRollout   = "/v1/rollouts/pause"
	RouteResumeRollout  = "/v1/rollouts/resume"
	// RouteEditRollout changes the limits of a rollout under way.
	RouteEditRollout = "/v1/rollouts/edit"
	// RouteRolloutPlan answers what an update would do, pass by pass,
	// without doing it.
	RouteRolloutPlan = "/v1/rollouts/plan"

	// Freeze windows: when no rollout starts or progresses but reverts
	// and overrides.
	RouteAddFreezeWindow    = "/v1/freeze_windows/add"
	RouteRemoveFreezeWindow = "/v1/freeze_windows/remove"
	RouteFreezeWindows      = "/v1/freeze_windows/list"

	// Budget groups: disruption budgets shared by the LRPs that name them.
	RouteSetBudgetGroup    = "/v1/budget_groups/set"
	RouteRemoveBudgetGroup = "/v1/budget_groups/remove"
	RouteBudgetGroups      = "/v1/budget_groups/list"

	// Operations: the audited log of every change to a DesiredLRP.
	RouteOperations      = "/v1/operations/list"
	RouteOperation       = "/v1/operations/get"
	RouteCancelOperation = "/v1/operations/cancel"

	// The cell side: what reps call.
	RouteRegisterCell   = "/v1/cells/register"
	RouteCells          = "/v1/cells/list"
	RouteDrainCell      = "/v1/cells/drain"
	RouteQuarantineCell = "/v1/cells/quarantine"
	RouteClearCell      = "/v1/cells/clear"
	// RouteDrainStatus says how a cell's drain goes, and which LRPs'
	// disruption budgets hold it (a BlockedBy each).
	RouteDrainStatus     = "/v1/cells/drain_status"
	RouteClaimActualLRP  = "/v1/actual_lrps/claim"
	RouteStartActualLRP  = "/v1/actual_lrps/start"
	RouteCrashActualLRP  = "/v1/actual_lrps/crash"
	RouteFailActualLRP   = "/v1/actual_lrps/fail"
	RouteRemoveActualLRP = "/v1/actual_lrps/remove"
	// RouteEvacuateActualLRP hands an instance on a draining cell over to
	// a replacement elsewhere (start-before-stop).
	RouteEvacuateActualLRP = "/v1/actual_lrps/evacuate"
	RouteBulkReport        = "/v1/cells/report"
	// RouteReportOccupancy carries a small batch of instances' occupancy
	// changes, between bulk reports.
	RouteReportOccupancy = "/v1/actual_lrps/occupancy"
	// RouteReportHealth carries what a cell saw of its instances' health
	// checks and memory since its previous health report.
	RouteReportHealth = "/v1/cells/report_health"

	// RouteEvents streams Server-Sent Events.
	RouteEvents = "/v1/events"
)

// PrometheusTargetsPath is where a board answers GET with every running
// instance as a target group of Prometheus' HTTP service discovery
// (http_sd_configs; see PrometheusTargets). It is not an API call: no
// request body, a JSON array for an answer.
const PrometheusTargetsPath = "/prometheus/targets"

// Content types the API speaks. A request is answered in its own type.
const (
	ContentTypeProtobuf = "application/x-protobuf"
	ContentTypeJSON     = "application/json"
)

// MaxRequestBodyBytes is the largest request body the board reads.
const MaxRequestBodyBytes = 1 << 20

// RequestedByHeader says, in words, who sends a request, e.g.
// "cork (alice@laptop)". The board records it, followed by
// " from <remote address>", as the requested_by of the operation a write
// records; without it (or when it is over MaxRequestedByLength bytes or not
// printable) the board takes the User-Agent instead. Nothing checks it: it
// is what the caller says of itself, until client certificates say who the
// caller is.
const RequestedByHeader = "X-Corkboard-Requested-By"

// MaxRequestedByLength bounds what a caller may say of itself.
const MaxRequestedByLength = 256
