package handlers

import (
	"context"
	"github.com/prometheus/client_golang/prometheus"
	"net/http"
	"time"

	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/internal/admission"
	"github.com/corkboard/corkboard/models"
)

// Defaults for the options.
const (
	// DefaultPresenceTTL is how long a cell's registration lasts unless
	// renewed; reps renew well within it (the register answer says how
	// long it is).
	DefaultPresenceTTL = 30 * time.Second
	// DefaultEventsHeartbeat is how often an idle event stream carries a
	// comment, so that proxies keep it open and a vanished client is
	// noticed.
	DefaultEventsHeartbeat = 15 * time.Second
	// DefaultEventsWriteTimeout is how long one write to an event stream
	// may take before the subscriber is cut off as too slow.
	DefaultEventsWriteTimeout = 30 * time.Second
	// DefaultMaxRequestsInFlight bounds the API calls (event streams
	// aside) the board serves at once; beyond it a call is answered
	// ResourceExhausted at once. Of them, DefaultReservedForCells are
	// kept for cells' own calls (see internal/admission, which also has
	// the per-client defaults).
	DefaultMaxRequestsInFlight = admission.DefaultRequestsInFlight
	DefaultReservedForCells    = admission.DefaultReservedForCells
	// DefaultRequestBodyTimeout bounds the arrival of a request's body,
	// from the end of its headers: 1 MiB (the most a body may be) in 10s
	// is 100 KiB/s, which any client that is not stalling sends.
	DefaultRequestBodyTimeout = 10 * time.Second
	// DefaultListWriteTimeout bounds the writing of one page of a
	// streamed list: a client that takes longer to accept 500 items is
	// cut off.
	DefaultListWriteTimeout = time.Minute
	// DefaultDatabaseTimeout bounds how long an API call (a streamed list
	// aside) may wait for the database before it fails as Unavailable.
	DefaultDatabaseTimeout = 10 * time.Second
	// DefaultMaxEventSubscribers bounds the event streams the board
	// serves at once; beyond it POST /v1/events is answered 503 with a
	// ResourceExhausted error.
	DefaultMaxEventSubscribers = 1000
)

type options struct {
	presenceTTL        time.Duration
	hub                *events.Hub
	eventsHeartbeat    time.Duration
	eventsWriteTimeout time.Duration
	converge           func(processGuid string)
	planRollout        RolloutPlanner
	signals            Signals
	databaseTimeout    time.Duration

	// limits are the admission limits (internal/admission); see
	// admissionLimits for how the options combine into them.
	limits              admission.Limits
	maxEventSubscribers int
	requestBodyTimeout  time.Duration
	listWriteTimeout    time.Duration
	// allowLinkLocalAssetHosts lets a definition's asset URLs name
	// link-local and metadata hosts (see WithLinkLocalAssetHosts).
	allowLinkLocalAssetHosts bool
	// requireCertificates refuses a request without a verified client
	// certificate (see WithRequiredClientCertificates).
	requireCertificates bool
	// metrics is the handler of GET /metrics, served to the callers
	// metricsAccess lets read it (see WithMetrics); nil serves none.
	metrics http.Handler
	// maxAssetDownloads is the board's max_asset_downloads_per_cell,
	// handed to reps in every registration answer
	// (WithMaxAssetDownloadsPerCell).
	maxAssetDownloads int32
}

func defaultOptions() options {
	return options{
		presenceTTL:        DefaultPresenceTTL,
		eventsHeartbeat:    DefaultEventsHeartbeat,
		eventsWriteTimeout: DefaultEventsWriteTimeout,
		converge:           func(string) {},
		databaseTimeout:    DefaultDatabaseTimeout,

		limits:              admission.DefaultLimits(),
		maxEventSubscribers: DefaultMaxEventSubscribers,
		requestBodyTimeout:  DefaultRequestBodyTimeout,
		listWriteTimeout:    DefaultListWriteTimeout,
	}
}

// admissionLimits are the limits the options set. A reservation for cells
// that leaves API clients nothing (one set, or the default, at or above
// the requests in flight) becomes a fifth of them, as the defaults have.
func (o options) admissionLimits() admission.Limits {
	l := o.limits
	if l.ReservedForCells >= l.RequestsInFlight {
		l.ReservedForCells = l.RequestsInFlight / 5
	}
	return l
}

// Option configures the API handler.
type Option func(*options)

// WithPresenceTTL sets how long a cell's registration lasts; values ≤ 0
// keep the default.
func WithPresenceTTL(ttl time.Duration) Option {
	return func(o *options) {
		if ttl > 0 {
			o.presenceTTL = ttl
		}
	}
}

// WithMaxAssetDownloadsPerCell sets the max_asset_downloads_per_cell every
// registration answer hands its rep (models.DownloadsToBegin); 0, the
// default, is no limit.
func WithMaxAssetDownloadsPerCell(n int32) Option {
	return func(o *options) { o.maxAssetDownloads = max(n, 0) }
}

// WithEvents serves POST /v1/events from hub, the hub the store publishes
// to. Without it that route answers Unavailable.
func WithEvents(hub *events.Hub) Option {
	return func(o *options) { o.hub = hub }
}

// WithEventsHeartbeat sets how often an idle event stream carries a
// heartbeat comment; values ≤ 0 keep the default.
func WithEventsHeartbeat(interval time.Duration) Option {
	return func(o *options) {
		if interval > 0 {
			o.eventsHeartbeat = interval
		}
	}
}

// WithEventsWriteTimeout sets how long one write to an event stream may
// block (the client not reading) before the stream is cut off; values ≤ 0
// keep the default.
func WithEventsWriteTimeout(timeout time.Duration) Option {
	return func(o *options) {
		if timeout > 0 {
			o.eventsWriteTimeout = timeout
		}
	}
}

// WithLinkLocalAssetHosts lets definitions' asset URLs name link-local
// and cloud metadata hosts (models.ValidateAssetHosts), which are refused
// by default: an asset URL makes a cell fetch it, from inside the cell's
// network.
func WithLinkLocalAssetHosts(allow bool) Option {
	return func(o *options) { o.allowLinkLocalAssetHosts = allow }
}

// WithDatabaseTimeout bounds how long an API call may wait for the
// database: past it the call is answered Unavailable ("database
// unreachable: …") rather than left hanging while the database is down or
// stalled. A streamed list is bounded per page instead (lists.go); the
// connection's own I/O timeout (sqldb.WithIOTimeout) bounds every wait.
// Values ≤ 0 keep the default.
func WithDatabaseTimeout(timeout time.Duration) Option {
	return func(o *options) {
		if timeout > 0 {
			o.databaseTimeout = timeout
		}
	}
}

// WithConvergenceTrigger calls trigger with the LRP's process guid after
// every successful call that leaves an LRP for convergence to act on at
// once: desire, update, remove, rollback, abort and the cancel of an
// operation (a canceled rollout rolls back), and the cell-side crash (the first
// crashes restart at once), fail (the instance needs another cell),
// remove (the index needs a new instance) and evacuate (the replacement
// is placed at once), and a bulk report or an occupancy report that
// changes an instance's occupancy (an autoscaled LRP's count follows it).
// trigger must not block; the convergence runner's Trigger does not.
func WithConvergenceTrigger(trigger func(processGuid string)) Option {
	return func(o *options) {
		if trigger != nil {
			o.converge = trigger
		}
	}
}

// RolloutPlanner answers a dry run of an update (POST /v1/rollouts/plan):
// the board passes its convergence planner's (runner.RolloutPlanner),
// so that the handlers own no convergence configuration. It must write
// nothing.
type RolloutPlanner func(ctx context.Context, req *models.RolloutPlanRequest) (*models.RolloutPlan, error)

// WithRolloutPlanner serves POST /v1/rollouts/plan with plan. Without it
// that route answers Unavailable.
func WithRolloutPlanner(plan RolloutPlanner) Option {
	return func(o *options) { o.planRollout = plan }
}

// Signals answers what happened lately to a definition's instances
// (signals.Collector): Figures for the definition, for the given number
// of instances, nil when it knows nothing of the definition; Instances
// per instance, by index, nil when it knows none.
type Signals interface {
	Figures(processGuid, definitionID string, instances int) *models.DefinitionSignals
	Instances(processGuid, definitionID string) []*models.InstanceSignals
}

// WithSignals fills each definition of a rollout status (GET rollout
// status) with its signals and its instances' from source. Without it
// they are absent.
func WithSignals(source Signals) Option {
	return func(o *options) { o.signals = source }
}

// WithMaxRequestsInFlight sets how many API calls (event streams aside,
// see WithMaxEventSubscribers) the board serves at once; a call beyond it
// is answered at once, with a ResourceExhausted error. Values ≤ 0 keep the
// default.
func WithMaxRequestsInFlight(max int) Option {
	return func(o *options) {
		if max > 0 {
			o.limits.RequestsInFlight = max
		}
	}
}

// WithReservedForCells keeps reserved of the requests in flight for
// cells' own calls (the routes only cells may call in the policy table,
// from a cell's certificate with TLS): API clients are refused once only
// those are left. 0 reserves
// none; values < 0 keep the default. A reservation of every place
// becomes a fifth of them.
func WithReservedForCells(reserved int) Option {
	return func(o *options) {
		if reserved >= 0 {
			o.limits.ReservedForCells = reserved
		}
	}
}

// WithMaxRequestsPerClient bounds the requests one client (its
// certificate, or its address on plain HTTP) has in flight. Values ≤ 0
// keep the default.
func WithMaxRequestsPerClient(max int) Option {
	return func(o *options) {
		if max > 0 {
			o.limits.RequestsPerClient = max
		}
	}
}

// WithMaxListStreamsPerClient bounds the whole lists (list calls without
// a limit) one client has streaming at once. Values ≤ 0 keep the
// default.
func WithMaxListStreamsPerClient(max int) Option {
	return func(o *options) {
		if max > 0 {
			o.limits.ListStreamsPerClient = max
		}
	}
}

// WithMaxEventStreamsPerClient bounds the event streams one client has
// open at once. Values ≤ 0 keep the default.
func WithMaxEventStreamsPerClient(max int) Option {
	return func(o *options) {
		if max > 0 {
			o.limits.EventStreamsPerClient = max
		}
	}
}

// WithMaxBodyReadersPerClient bounds the requests of one client whose
// bodies are still arriving. Values ≤ 0 keep the default.
func WithMaxBodyReadersPerClient(max int) Option {
	return func(o *options) {
		if max > 0 {
			o.limits.BodyReadersPerClient = max
		}
	}
}

// WithRequestBodyTimeout bounds how long a request's body may take to
// arrive; past it the request is answered InvalidRequest and its
// connection closed. Values ≤ 0 keep the default.
func WithRequestBodyTimeout(timeout time.Duration) Option {
	return func(o *options) {
		if timeout > 0 {
			o.requestBodyTimeout = timeout
		}
	}
}

// WithListWriteTimeout bounds how long the client of a streamed list may
// take to accept one page; past it the stream is cut. Values ≤ 0 keep
// the default.
func WithListWriteTimeout(timeout time.Duration) Option {
	return func(o *options) {
		if timeout > 0 {
			o.listWriteTimeout = timeout
		}
	}
}

// WithMaxEventSubscribers sets how many event streams the board serves at
// once; one more is answered at once with HTTP 503 and a ResourceExhausted
// error, before any stream starts. Values ≤ 0 keep the default.
func WithMaxEventSubscribers(max int) Option {
	return func(o *options) {
		if max > 0 {
			o.maxEventSubscribers = max
		}
	}
}

// WithRequiredClientCertificates is for a board that serves TLS with
// required client certificates (tls.RequireAndVerifyClientCert): every
// request must then carry a verified one, and a request without one is
// treated as a caller without a role (it may call ping only), so that a
// listener misconfigured to skip client certificates opens nothing.
//
// A request with a verified client certificate is authorized by the
// identity it names (see authorize.go and models.IdentityFromCertificate)
// with or without this option; without it, and without a certificate
// (development mode, plain HTTP), every route is allowed.
func WithRequiredClientCertificates() Option {
	return func(o *options) { o.requireCertificates = true }
}

// WithMetrics serves GET /metrics from registry (see Metrics) to the
// callers metricsAccess lets read it: with client certificates, an API
// client or an operator.
func WithMetrics(registry *prometheus.Registry) Option {
	return func(o *options) { o.metrics = Metrics(registry) }
}
