// Package handlers serves the board's HTTP API: every route in
// models/routes.go, each a POST whose body is one request message.
//
// Handlers are thin: decode, validate, call the store, encode.
//
// Conventions, the same on every route:
//   - Bodies are protobuf (application/x-protobuf, also assumed when no
//     Content-Type is sent) or protojson (application/json). The answer comes
//     in the request's encoding. JSON answers use the proto field names
//     (snake_case) and omit unset fields; JSON input accepts both the proto
//     and the lowerCamelCase names.
//   - A request that reached its route is answered 200 OK, also when it
//     failed: the outcome is the response's `error` field, a models.Error with
//     a stable type, as in Diego's BBS. Clients switch on that type, never on
//     the status. Other statuses are about HTTP itself, and still carry an
//     InvalidRequest `error`: 404 for an unknown path, 405 for a method other
//     than POST, 415 for a Content-Type the API does not speak. Those answers
//     are JSON unless the request named protobuf.
//   - A body over models.MaxRequestBodyBytes, bytes that do not decode, a
//     field the board does not know, or a value that fails Validate() is an
//     InvalidRequest naming the field ("request body: ..." for decoding), and
//     the store is not called.
//   - Every request gets an id: the caller's X-Request-Id when it sends a
//     sane one, a fresh random one otherwise. It is echoed in the
//     X-Request-Id response header and carried by every log line about the
//     request (and by the lager logger in the request context, see lagerctx).
//   - With TLS and client certificates, the caller is who its certificate
//     says, and a route it may not call, or a cell acting for another cell,
//     is answered 200 with an Unauthorized error before the store is called
//     (see authorize.go for the policy). Without TLS every route is allowed,
//     unless WithRequiredClientCertificates says certificates are required.
//   - Every write to a DesiredLRP (desire, update, remove, rollback, abort,
//     promote, pause, resume, and canceling an operation) records an
//     operation whose requested_by names the caller (its certificate's
//     identity, else what the request says of it; see requestedBy), and
//     answers the operation's id (operation_id; in the RolloutStatus for
//     rollback and abort, which start a rollout).
//   - A body is read whole (at most models.MaxRequestBodyBytes, within
//     WithRequestBodyTimeout) before the request counts as in flight; a
//     Content-Length over the cap is refused at once, unread, and a body
//     that does not arrive in time is an InvalidRequest; both close the
//     connection.
//   - At most WithMaxRequestsInFlight calls are served at once, of which
//     WithReservedForCells are kept for cells' own calls, and at most
//     WithMaxEventSubscribers event streams; each client (certificate, or
//     address on plain HTTP) has its own caps on bodies being read,
//     requests in flight and whole lists streaming (see
//     internal/admission). Beyond any of them a request is answered at
//     once with a ResourceExhausted error naming the limit (200, or 503
//     on the events route, which answers 200 only with a stream).
//   - A call waits at most WithDatabaseTimeout for the database; past it,
//     or when the database cannot be reached, it is answered Unavailable
//     ("database unreachable: …"), never left hanging.
//   - An error's message is always valid UTF-8, whatever bytes the request
//     held: invalid ones are replaced (see safeError), so that the answer
//     encodes and what is logged is what was sent.
//   - A call a browser makes from another origin (Sec-Fetch-Site
//     cross-site or same-site, or an Origin naming another host) is
//     answered 403 with an Unauthorized error and goes no further (see
//     refuseCrossOrigin): cross-site request forgery.
//   - POST /v1/events is the one route that answers with a stream rather
//     than a message: Server-Sent Events from the event hub (serveEvents).
package handlers

import (
	"context"
	"net/http"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/internal/admission"
	"github.com/corkboard/corkboard/models"
)

// request is what every API request message is: a protobuf message that
// checks its own fields.
type request interface {
	proto.Message
	Validate() error
}

// New returns the API handler. Its metrics (corkboard_http_requests_total
// by route and outcome, corkboard_http_request_duration_seconds by route)
// are registered on registry; handlers built twice on one registry share
// them, and a nil registry registers them nowhere (New panics if the
// registry holds other collectors under those names). GET /metrics is
// served here with WithMetrics, and GET /prometheus/targets, Prometheus'
// service discovery of the instances, always.
//
// Options set the cells' presence TTL, the event hub behind
// POST /v1/events (see WithEvents), what to tell convergence after a
// change (see WithConvergenceTrigger), the limits on what is served at
// once, and whether client certificates are required
// (WithRequiredClientCertificates); the defaults need none.
func New(logger lager.Logger, store db.DB, registry prometheus.Registerer, opts ...Option) http.Handler {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	m := newMetrics(registry)
	api := &api{
		logger:              logger.Session("api"),
		metrics:             m,
		requireCertificates: o.requireCertificates,
		instances:           store,
		admissions:          newAdmissions(o.admissionLimits(), m),
		subscribers:         newLimit(limitEventSubscribers, "event streams", o.maxEventSubscribers, m).reservingForCells(),
		encodedEvents:       newEncodedEvents(),
		databaseTimeout:     o.databaseTimeout,
		requestBodyTimeout:  o.requestBodyTimeout,
		listWriteTimeout:    o.listWriteTimeout,
	}
	routes := []string{models.RouteEvents}
	mux := http.NewServeMux()
	handle := func(path string, h http.Handler) {
		mux.Handle("POST "+path, h)
		// Any other method on a known path is answered here rather than by
		// the mux, so that it gets a typed body, a log line and a metric.
		mux.Handle(path, api.methodNotAllowed(path))
	}
	for _, e := range endpoints(store, o) {
		handle(e.path, api.serve(e))
		routes = append(routes, e.path)
	}
	handle(models.RouteEvents, api.serveEvents(o))
	checkPolicyCovers(routes)
	// Not an API call: Prometheus' HTTP service discovery reads it with a
	// GET (see servePrometheusTargets).
	mux.Handle("GET "+models.PrometheusTargetsPath, api.servePrometheusTargets(store))
	mux.Handle(models.PrometheusTargetsPath, api.prometheusTargetsMethodNotAllowed())
	if o.metrics != nil {
		mux.Handle("GET "+MetricsPath, api.serveMetrics(o.metrics))
	}
	mux.Handle("/", api.notFound())
	return api.refuseCrossOrigin(mux)
}

// refuseCrossOrigin refuses every call a browser sends from another
// origin (its Sec-Fetch-Site, or an Origin naming another host; see
// http.CrossOriginProtection), before anything is decoded. Every route is
// a POST that may write, and a page elsewhere can make a browser POST a
// body with no Content-Type — which the API takes for protobuf — to a
// board on loopback, or to a board with mutual TLS with the operator
// certificate the dashboard's user imported: the browser presents it to
// any page's request. The dashboard (same origin), cork, reps and other
// programs send no such headers, or same-origin ones, and pass.
func (a *api) refuseCrossOrigin(next http.Handler) http.Handler {
	protection := http.NewCrossOriginProtection()
	protection.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := a.begin(w, r, routeUnmatched)
		err := models.NewError(models.Error_Unauthorized, "origin: a cross-origin request from a browser (Origin %q) is refused", r.Header.Get("Origin"))
		call.fail(w, answerCodec(r), http.StatusForbidden, errorOnlyResponse, err)
	}))
	return protection.Handler(next)
}

type api struct {
	logger  lager.Logger
	metrics *metrics
	// instances answers the policy's questions about where instances run
	// (see cellRule.holds).
	instances db.ActualLRPDB
	// requireCertificates: see WithRequiredClientCertificates.
	requireCertificates bool
	// admissions bounds the bodies read, the API calls served and the
	// lists streamed at once, on the board and by each client;
	// subscribers bounds the event streams.
	admissions  *admissions
	subscribers *limit
	// encodedEvents shares what the event streams encoded lately.
	encodedEvents *encodedEvents
	// databaseTimeout bounds each call's store work (WithDatabaseTimeout).
	databaseTimeout time.Duration
	// requestBodyTimeout bounds a body's arrival, listWriteTimeout a
	// streamed list's page (WithRequestBodyTimeout, WithListWriteTimeout).
	requestBodyTimeout time.Duration
	listWriteTimeout   time.Duration
}

// endpoint binds a route to its request type, the shape of its response,
// and the store call that serves it.
type endpoint struct {
	path       string
	newRequest func() request
	// errorResponse is the route's response message carrying only err.
	errorResponse func(err *models.Error) proto.Message
	call          func(ctx context.Context, req request) (proto.Message, error)
	// listing is set on list routes: a request for the whole list is
	// streamed (see lists.go) instead of answered by call.
	listing *listing
}

// route builds an endpoint from a typed call, so that each handler reads as
// a plain function of its request message.
func route[Req any, PReq interface {
	*Req
	request
}, Resp proto.Message](path string, call func(context.Context, PReq) (Resp, error)) endpoint {
	var emptyResponse Resp
	responseType := emptyResponse.ProtoReflect().Type()
	// Every response message carries `Error error`; a route whose response
	// does not is a programming error, caught when the handler is built.
	errorField := responseType.Descriptor().Fields().ByName("error")
	errorType := (*models.Error)(nil).ProtoReflect().Descriptor().FullName()
	if errorField == nil || errorField.Message() == nil || errorField.Message().FullName() != errorType {
		panic(path + ": response " + string(responseType.Descriptor().FullName()) + " has no error field of type Error")
	}
	return endpoint{
		path:       path,
		newRequest: func() request { return PReq(new(Req)) },
		errorResponse: func(err *models.Error) proto.Message {
			response := responseType.New()
			response.Set(errorField, protoreflect.ValueOfMessage(err.ProtoReflect()))
			return response.Interface()
		},
		call: func(ctx context.Context, req request) (proto.Message, error) {
			return call(ctx, req.(PReq))
		},
	}
}

// serve runs one API call: decode, validate, authorize, call the store,
// encode.
func (a *api) serve(e endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := a.begin(w, r, e.path)
		if !call.authorizeRoute(w, r, e.errorResponse) {
			return
		}
		// The body first, under the caller's own body-reader places: only
		// a request that has arrived takes a place in flight.
		if !call.readBodyFirst(w, r, http.StatusOK, e.errorResponse) {
			return
		}
		serving, refused := a.admissions.take(admission.Request, call.client, call.class, cellCall(e.path, call.who))
		if refused != nil {
			call.fail(w, requestCodec(r), http.StatusOK, e.errorResponse, refused)
			return
		}
		defer serving.release()

		req := e.newRequest()
		c, ok := call.decode(w, r, req, e.errorResponse)
		if !ok {
			return
		}
		if !call.authorize(call.context(r), w, c, req, e.errorResponse) {
			return
		}

		if e.listing != nil {
			// A page holds up to its limit of items in memory until the
			// client has read it, as a whole list holds one page at a
			// time: both take a list place, so that clients that ask
			// for many and read none hold a few each, not every request
			// place they have.
			listing, refused := a.admissions.take(admission.ListStream, call.client, call.class, false)
			if refused != nil {
				call.fail(w, c, http.StatusOK, e.errorResponse, refused)
				return
			}
			defer listing.release()
			if e.listing.streams(req) {
				call.stream(call.context(r), w, c, e.listing, req.(pagedRequest), e.errorResponse)
				return
			}
		}
		ctx, cancel := context.WithTimeout(call.context(r), a.databaseTimeout)
		defer cancel()
		response, err := e.call(ctx, req)
		if err != nil {
			call.fail(w, c, http.StatusOK, e.errorResponse, models.ConvertError(err))
			return
		}
		call.finish(w, c, http.StatusOK, response, nil)
	})
}

// decode reads the request message into req and validates it. When either
// fails it answers with errorResponse and returns false.
func (c *call) decode(w http.ResponseWriter, r *http.Request, req request, errorResponse func(*models.Error) proto.Message) (codec, bool) {
	cd, err := codecFor(r)
	if err != nil {
		unsupported := models.NewError(models.Error_InvalidRequest, "%s", err)
		c.fail(w, jsonCodec, http.StatusUnsupportedMediaType, errorResponse, unsupported)
		return cd, false
	}
	if decodeErr := readBody(w, r, cd, req); decodeErr != nil {
		c.fail(w, cd, http.StatusOK, errorResponse, decodeErr)
		return cd, false
	}
	if err := req.Validate(); err != nil {
		c.fail(w, cd, http.StatusOK, errorResponse, asInvalidRequest(err))
		return cd, false
	}
	return cd, true
}

// authorizeRoute refuses a caller whose role may not call the route at
// all (authorizeRoute in authorize.go) before anything of its request is
// read, answering as authorize does; it returns false then.
func (c *call) authorizeRoute(w http.ResponseWriter, r *http.Request, errorResponse func(*models.Error) proto.Message) bool {
	refused := authorizeRoute(c.who, c.route)
	if refused == nil {
		return true
	}
	c.api.metrics.unauthorized.WithLabelValues(c.route, string(c.who.identity.Role)).Inc()
	c.fail(w, requestCodec(r), http.StatusOK, errorResponse, refused)
	return false
}

// authorize applies the policy (see authorize.go) to the decoded request.
// A refusal is answered with errorResponse, logged under "unauthorized"
// with the caller's identity, and counted by route and role; it returns
// false then.
func (c *call) authorize(ctx context.Context, w http.ResponseWriter, cd codec, req request, errorResponse func(*models.Error) proto.Message) bool {
	refused := authorize(c.who, c.route, req)
	if refused == nil {
		var err error
		if refused, err = authorizeHolding(ctx, c.api.instances, c.who, c.route, req); err != nil {
			c.fail(w, cd, http.StatusOK, errorResponse, models.ConvertError(err))
			return false
		}
	}
	if refused == nil {
		return true
	}
	c.api.metrics.unauthorized.WithLabelValues(c.route, string(c.who.identity.Role)).Inc()
	c.fail(w, cd, http.StatusOK, errorResponse, refused)
	return false
}

// asInvalidRequest keeps a validation error's message and makes sure its
// type says the request was at fault.
func asInvalidRequest(err error) *models.Error {
	modelErr := models.ConvertError(err)
	if modelErr.GetType() == models.Error_InvalidRequest {
		return modelErr
	}
	return &models.Error{Type: models.Error_InvalidRequest, Message: modelErr.GetMessage()}
}

func (a *api) methodNotAllowed(path string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := a.begin(w, r, path)
		w.Header().Set("Allow", http.MethodPost)
		err := models.NewError(models.Error_InvalidRequest, "method: %s is not allowed; every API call is a POST", r.Method)
		call.fail(w, answerCodec(r), http.StatusMethodNotAllowed, errorOnlyResponse, err)
	})
}

func (a *api) notFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := a.begin(w, r, routeUnmatched)
		err := models.NewError(models.Error_InvalidRequest, "path: no API route %s", r.URL.Path)
		call.fail(w, answerCodec(r), http.StatusNotFound, errorOnlyResponse, err)
	})
}

// answerCodec is the encoding for an answer that has no request message to
// decode: the request's own when it names one, JSON otherwise, so that a
// GET from curl or a browser reads as text.
func answerCodec(r *http.Request) codec {
	if r.Header.Get("Content-Type") == "" {
		return jsonCodec
	}
	c, err := codecFor(r)
	if err != nil {
		return jsonCodec
	}
	return c
}

// errorOnly is the body of an answer outside any route. Every response
// message has its error in field 1, so PingResponse (error plus a flag that
// stays unset) encodes exactly {error} in both encodings.
type errorOnly = models.PingResponse

// errorOnlyResponse is an errorOnly carrying err.
func errorOnlyResponse(err *models.Error) proto.Message {
	return &errorOnly{Error: err}
}

// call is one request in flight: its id, its caller, its logger and its
// clock.
type call struct {
	api   *api
	route string
	id    string
	who   caller
	// client is the key of the caller's places, class its class in
	// metrics (see clientOf, classOf).
	client  string
	class   string
	logger  lager.Logger
	started time.Time
}

func (a *api) begin(w http.ResponseWriter, r *http.Request, route string) *call {
	id := requestID(r)
	w.Header().Set(RequestIDHeader, id)
	who := identify(r, a.requireCertificates)
	data := lager.Data{"request_id": id, "route": route, "method": r.Method}
	if who.checked {
		// The role and cell, not the certificate's name: see caller.name
		// for that, in the operations writes record.
		data["identity"] = string(who.identity.Role)
		if who.identity.CellID != "" {
			data["cell_id"] = who.identity.CellID
		}
	}
	return &call{
		api:     a,
		route:   route,
		id:      id,
		who:     who,
		client:  clientOf(r, who),
		class:   classOf(who),
		logger:  a.logger.Session("request", data),
		started: time.Now(),
	}
}

// finish answers with response and records the outcome, err (nil for a
// success) being the error response carries. An answer with an error goes
// through fail, which makes its text safe to encode.
func (c *call) finish(w http.ResponseWriter, cd codec, status int, response proto.Message, err *models.Error) {
	written, encodeErr := writeMessage(w, cd, status, response)
	if encodeErr != nil {
		// The answer became a plain 500: record that, not what was meant.
		err = models.NewError(models.Error_UnknownError, "encode response: %s", encodeErr)
	}
	c.record(written, err, nil)
}

// fail answers with errorResponse carrying err, its message made valid
// UTF-8 first: an invalid byte would make the answer fail to encode (JSON
// and protobuf strings are UTF-8), and the caller get a bare 500 instead
// of the error.
func (c *call) fail(w http.ResponseWriter, cd codec, status int, errorResponse func(*models.Error) proto.Message, err *models.Error) {
	err = safeError(err)
	c.finish(w, cd, status, errorResponse(err), err)
}

// safeError is err with its message made printable (models.PrintableText:
// invalid UTF-8 and control characters escaped). Messages echo requests (a decoder quoting the byte it choked on, a path
// with %ff in it), so every error goes through here before it is written.
// err itself is left alone: it may be a value the store shares.
func safeError(err *models.Error) *models.Error {
	if err == nil {
		return err
	}
	printable := models.PrintableText(err.GetMessage())
	if printable == err.GetMessage() {
		return err
	}
	return &models.Error{Type: err.GetType(), Message: printable}
}

// record counts and logs the call's outcome; extra goes into the log line.
// A refusal by the authorization policy is logged as "unauthorized", so
// that refusals stand out from the requests served.
func (c *call) record(status int, err *models.Error, extra lager.Data) {
	outcome := outcomeSuccess
	if err != nil {
		outcome = err.GetType().String()
	}
	elapsed := time.Since(c.started)
	c.api.metrics.observe(c.route, outcome, elapsed.Seconds())

	data := lager.Data{"status": status, "outcome": outcome, "duration_ms": float64(elapsed.Microseconds()) / 1000}
	for k, v := range extra {
		data[k] = v
	}
	if err != nil && serverFault(err) {
		c.logger.Error("failed", err, data)
		return
	}
	message := "served"
	if err != nil {
		data["error"] = err.GetMessage()
		if err.GetType() == models.Error_Unauthorized {
			message = "unauthorized"
		}
	}
	c.logger.Info(message, data)
}

// serverFault says whether the board, not the caller, is to blame.
func serverFault(err *models.Error) bool {
	switch err.GetType() {
	case models.Error_UnknownError, models.Error_Unavailable, models.Error_Deadlock, models.Error_InvalidRecord:
		return true
	}
	return false
}
