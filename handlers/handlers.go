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
//   - Every write to a DesiredLRP (desire, update, remove, rollback, abort,
//     promote, pause, resume, and canceling an operation) records an
//     operation whose requested_by is what the request says of its caller
//     (see requestedBy), and answers the operation's id (operation_id; in
//     the RolloutStatus for rollback and abort, which start a rollout).
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
// registry holds other collectors under those names). GET /metrics is not
// served here: the server mounts the registry's handler itself.
//
// Options set the cells' presence TTL, the event hub behind
// POST /v1/events (see WithEvents) and what to tell convergence after a
// change (see WithConvergenceTrigger); the defaults need none.
func New(logger lager.Logger, store db.DB, registry prometheus.Registerer, opts ...Option) http.Handler {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	api := &api{
		logger:  logger.Session("api"),
		metrics: newMetrics(registry),
	}
	mux := http.NewServeMux()
	handle := func(path string, h http.Handler) {
		mux.Handle("POST "+path, h)
		// Any other method on a known path is answered here rather than by
		// the mux, so that it gets a typed body, a log line and a metric.
		mux.Handle(path, api.methodNotAllowed(path))
	}
	for _, e := range endpoints(store, o) {
		handle(e.path, api.serve(e))
	}
	handle(models.RouteEvents, api.serveEvents(o))
	mux.Handle("/", api.notFound())
	return mux
}

type api struct {
	logger  lager.Logger
	metrics *metrics
}

// endpoint binds a route to its request type, the shape of its response,
// and the store call that serves it.
type endpoint struct {
	path       string
	newRequest func() request
	// errorResponse is the route's response message carrying only err.
	errorResponse func(err *models.Error) proto.Message
	call          func(ctx context.Context, req request) (proto.Message, error)
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

// serve runs one API call: decode, validate, call the store, encode.
func (a *api) serve(e endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := a.begin(w, r, e.path)
		req := e.newRequest()
		c, ok := call.decode(w, r, req, e.errorResponse)
		if !ok {
			return
		}

		response, err := e.call(call.context(r), req)
		if err != nil {
			modelErr := models.ConvertError(err)
			call.finish(w, c, http.StatusOK, e.errorResponse(modelErr), modelErr)
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
		c.finish(w, jsonCodec, http.StatusUnsupportedMediaType, errorResponse(unsupported), unsupported)
		return cd, false
	}
	if decodeErr := readBody(w, r, cd, req); decodeErr != nil {
		c.finish(w, cd, http.StatusOK, errorResponse(decodeErr), decodeErr)
		return cd, false
	}
	if err := req.Validate(); err != nil {
		invalid := asInvalidRequest(err)
		c.finish(w, cd, http.StatusOK, errorResponse(invalid), invalid)
		return cd, false
	}
	return cd, true
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
		call.finish(w, answerCodec(r), http.StatusMethodNotAllowed, &errorOnly{Error: err}, err)
	})
}

func (a *api) notFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := a.begin(w, r, routeUnmatched)
		err := models.NewError(models.Error_InvalidRequest, "path: no API route %s", r.URL.Path)
		call.finish(w, answerCodec(r), http.StatusNotFound, &errorOnly{Error: err}, err)
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

// call is one request in flight: its id, its logger and its clock.
type call struct {
	api     *api
	route   string
	id      string
	logger  lager.Logger
	started time.Time
}

func (a *api) begin(w http.ResponseWriter, r *http.Request, route string) *call {
	id := requestID(r)
	w.Header().Set(RequestIDHeader, id)
	return &call{
		api:     a,
		route:   route,
		id:      id,
		logger:  a.logger.Session("request", lager.Data{"request_id": id, "route": route, "method": r.Method}),
		started: time.Now(),
	}
}

func (c *call) finish(w http.ResponseWriter, cd codec, status int, response proto.Message, err *models.Error) {
	writeMessage(w, cd, status, response)
	c.record(status, err, nil)
}

// record counts and logs the call's outcome; extra goes into the log line.
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
	if err != nil {
		data["error"] = err.GetMessage()
	}
	c.logger.Info("served", data)
}

// serverFault says whether the board, not the caller, is to blame.
func serverFault(err *models.Error) bool {
	switch err.GetType() {
	case models.Error_UnknownError, models.Error_Unavailable, models.Error_Deadlock, models.Error_InvalidRecord:
		return true
	}
	return false
}
