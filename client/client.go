// Package client is the Go client for the board's HTTP API: one typed method
// per route, protobuf on the wire. Client is for API clients (operators,
// schedulers, subscribers to events); CellClient is for reps, on behalf of
// one cell.
//
// Errors the board reports come back as *models.Error, so callers switch on
// them with models.IsErrorType. A non-2xx answer without a decodable body is
// an *HTTPStatusError. Anything else (connection refused, reset, a timeout
// before the answer) is a transport error.
//
// Retries. Only calls that are safe to send twice are retried, and only after
// a transport failure, never after the board answered:
//
//   - reads (get, list, definitions, actual LRPs, domains, cells, rollout
//     status, operations), ping, and opening an event stream (Events);
//   - UpsertDomain: setting a TTL twice leaves the same state;
//   - RemoveDesiredLRP: the end state is the same, but if the lost attempt did
//     land, the retry answers ResourceNotFound. The client passes that on
//     rather than guess whether the LRP ever existed;
//   - UpdateDesiredLRP only when the update is a new definition under an
//     update_identifier and nothing else, not queued: the board treats the
//     same identifier with the same content as a no-op, so a repeat is
//     harmless (it records an operation of its own that changed nothing).
//
// DesireLRP is never retried: if its answer was lost after the board stored
// the LRP, a retry would come back ResourceExists and hide the success. Any
// other update (instances, routes, annotation, strategy, one guarded by a
// modification tag, or a queued one) is not retried either: a repeat after a
// lost answer could undo a change another client made in between, or fail
// the tag check against the client's own first write. Rollback, AbortRollout,
// PromoteRollout, PauseRollout, ResumeRollout and CancelOperation are not
// retried: a repeat of one that landed is refused (the definition is active
// already, the phase is paused or running already, the operation has ended)
// and would hide the success, or (a promote) would start its phase again
// from where the first one got. Nor is EditRollout: like an update, a
// repeat could undo an edit another client made in between.
//
// Operations. Every write to a DesiredLRP is recorded as an operation
// (see models.Operation), with the caller's name as its requested_by: what
// WithRequestedBy says, else the User-Agent, UserAgent. The write methods
// keep their plain signatures; DesireLRPWithOperation,
// UpdateDesiredLRPWithOperation and RemoveDesiredLRPWithOperation also
// return the recorded operation's id, and the RolloutStatus that Rollback
// and AbortRollout return carries it as operation_id. PromoteRollout,
// PauseRollout, ResumeRollout and EditRollout return it beside the status (whose
// operation_id names the operation that started the rollout). Operations,
// AllOperations, Operation and CancelOperation read and cancel them.
//
// CellClient retries its heartbeat (RegisterCell), BulkReport and
// ReportOccupancy, never the lifecycle calls; see CellClient.
package client

import (
	"crypto/tls"
	"net/http"
	"strings"
	"time"

	"github.com/corkboard/corkboard/internal/certs"
	"github.com/corkboard/corkboard/models"
)

const (
	// DefaultTimeout bounds each attempt of a call.
	DefaultTimeout = 10 * time.Second
	// DefaultRetries is how many times a call that is safe to repeat is
	// sent again after a transport failure.
	DefaultRetries = 2
	// DefaultRetryBackoff is the pause before the first retry; it doubles
	// with every further retry, up to maxRetryBackoff.
	DefaultRetryBackoff = 100 * time.Millisecond

	maxRetryBackoff = 2 * time.Second

	// UserAgent is the User-Agent of every request. The board takes it
	// as the caller's name when no WithRequestedBy says otherwise.
	UserAgent = "corkboard-client"
)

// Client talks to one board for API clients (operators, schedulers,
// route emitters). It is safe for concurrent use: make one and keep it.
// Each Client has its own pool of kept-alive connections, so a Client
// made per call leaves a connection open at the board each time (until
// it has been idle 90 s), and the board closes new connections from an
// address that holds max_connections_per_address (1,000 by default).
// Reps use CellClient.
type Client struct {
	transport
}

// transport is what Client and CellClient share: where the board is and
// how calls reach it.
type transport struct {
	baseURL      string
	httpClient   *http.Client
	tlsConfig    *tls.Config
	timeout      time.Duration
	retries      int
	retryBackoff time.Duration
	// requestedBy is sent as models.RequestedByHeader when set.
	requestedBy string
}

// Option configures a Client or a CellClient.
type Option func(*transport)

// WithHTTPClient sends requests through httpClient, e.g. one with TLS
// settings or a tuned transport.
func WithHTTPClient(httpClient *http.Client) Option {
	return func(c *transport) { c.httpClient = httpClient }
}

// WithTLSConfig talks to the board over TLS with config: for a board that
// requires client certificates, one with the caller's certificate and the
// board's CA (internal/certs.Files.ClientConfig makes one from PEM files).
// The board's certificate must then name the board's role
// (corkboard://role/board), not only chain to the CA: a handshake with
// anything else fails with a *certs.PeerIdentityError. It applies to the
// client's own HTTP client; one given WithHTTPClient keeps its own TLS
// settings.
func WithTLSConfig(config *tls.Config) Option {
	return func(c *transport) { c.tlsConfig = config }
}

// WithTimeout bounds each attempt of a call; 0 leaves only the caller's
// context in charge. A retried call can take up to (retries+1) timeouts plus
// the backoff; bound the whole call with the context.
func WithTimeout(timeout time.Duration) Option {
	return func(c *transport) { c.timeout = timeout }
}

// WithRetries sets how many times a call that is safe to repeat is sent again
// after a transport failure; 0 turns retries off.
func WithRetries(retries int) Option {
	return func(c *transport) { c.retries = max(retries, 0) }
}

// WithRetryBackoff sets the pause before the first retry.
func WithRetryBackoff(backoff time.Duration) Option {
	return func(c *transport) { c.retryBackoff = max(backoff, 0) }
}

// WithRequestedBy names the caller in every request
// (models.RequestedByHeader), e.g. "cork (alice@laptop)": the board records
// it in the operations the client's writes make. Without it the board
// records the User-Agent, UserAgent. The board ignores a name over
// models.MaxRequestedByLength bytes or with unprintable characters.
func WithRequestedBy(who string) Option {
	return func(c *transport) { c.requestedBy = who }
}

// New returns a client for the board at baseURL, e.g. "http://127.0.0.1:8889",
// or "https://127.0.0.1:8889" with WithTLSConfig.
func New(baseURL string, opts ...Option) *Client {
	return &Client{transport: newTransport(baseURL, opts)}
}

func newTransport(baseURL string, opts []Option) transport {
	t := transport{
		baseURL:      strings.TrimRight(baseURL, "/"),
		timeout:      DefaultTimeout,
		retries:      DefaultRetries,
		retryBackoff: DefaultRetryBackoff,
	}
	for _, opt := range opts {
		opt(&t)
	}
	if t.httpClient == nil {
		t.httpClient = defaultHTTPClient(t.tlsConfig)
	}
	return t
}

// setHeaders sets what every request says of its caller.
func (c *transport) setHeaders(req *http.Request) {
	req.Header.Set("User-Agent", UserAgent)
	if c.requestedBy != "" {
		req.Header.Set(models.RequestedByHeader, c.requestedBy)
	}
}

// defaultHTTPClient keeps more idle connections per host than Go's default
// of two, so concurrent callers of one Client reuse their connections
// (with TLS, that saves a handshake per call too).
func defaultHTTPClient(tlsConfig *tls.Config) *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64
	if tlsConfig != nil {
		transport.TLSClientConfig = certs.ExpectPeer(tlsConfig, models.RoleIdentity(models.RoleBoard))
	}
	return &http.Client{Transport: transport}
}
