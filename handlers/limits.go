package handlers

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/corkboard/corkboard/internal/admission"
	"github.com/corkboard/corkboard/models"
)

// Names of the limits, as metrics label them and refusals name them,
// besides admission's (requests_in_flight, requests_per_client,
// list_streams_per_client, body_readers_per_client,
// event_streams_per_client).
const (
	limitRequestsInFlight = admission.RequestsInFlight
	limitEventSubscribers = "event_subscribers"
	// The in-use gauges of the per-client stages count the board's total
	// under these names.
	inUseBodyReaders  = "body_readers"
	inUseListStreams  = "list_streams"
	inUseEventStreams = "event_streams"
)

// Classes of callers, as metrics label them: a certificate's role, or
// anonymous for a request without a verified certificate (plain HTTP).
// Never a cell id or a certificate: a series each would grow without
// bound.
const (
	classAnonymous = "anonymous"
	classNone      = "none"
)

// classOf is who's class as metrics label it.
func classOf(who caller) string {
	if who.certificate == nil {
		return classAnonymous
	}
	if who.identity.Role == models.RoleNone {
		return classNone
	}
	return string(who.identity.Role)
}

// clientOf is the key under which a caller's places are counted: its
// verified certificate (the SHA-256 of its DER bytes), or on plain HTTP
// its remote address without the port. A certificate rather than its
// identity URI: every API client's names the same role, and one client
// must not use up the share of another.
func clientOf(r *http.Request, who caller) string {
	if who.certificate != nil {
		sum := sha256.Sum256(who.certificate.Raw)
		return "cert:" + hex.EncodeToString(sum[:])
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}

// cellCall says whether a request is a cell's own call, which may use the
// places reserved for cells: a cell route, called by a cell's certificate
// — or by anyone in development mode, where no certificate says who
// calls (and a board that requires certificates refuses the call anyway).
func cellCall(route string, who caller) bool {
	if !routePolicy[route].onlyCells() {
		return false
	}
	if who.certificate != nil {
		return who.isCell()
	}
	return !who.checked
}

// admissions counts, stage by stage (admission.Body, Request,
// ListStream, EventStream), the places taken on the whole board and by
// each client,
// and asks admission.Decide before a place is taken.
type admissions struct {
	limits  admission.Limits
	metrics *metrics

	mu     sync.Mutex
	stages [4]stageCount
}

type stageCount struct {
	board   int
	clients map[string]int
}

// stageInUse names the in-use gauge of each stage.
var stageInUse = [4]string{
	admission.Body:        inUseBodyReaders,
	admission.Request:     limitRequestsInFlight,
	admission.ListStream:  inUseListStreams,
	admission.EventStream: inUseEventStreams,
}

func newAdmissions(limits admission.Limits, m *metrics) *admissions {
	a := &admissions{limits: limits, metrics: m}
	for i := range a.stages {
		a.stages[i].clients = map[string]int{}
	}
	return a
}

// place is one place taken; release gives it back, once.
type place struct {
	a      *admissions
	stage  admission.Stage
	client string
	class  string
	once   sync.Once
}

// take asks for a place of stage for client (of class). It returns the
// place, or the refusal (a ResourceExhausted error naming the limit), which
// it counts.
func (a *admissions) take(stage admission.Stage, client, class string, cell bool) (*place, *models.Error) {
	a.mu.Lock()
	count := &a.stages[stage]
	refusedBy := admission.Decide(a.limits, stage, cell, admission.InUse{Board: count.board, Client: count.clients[client]})
	if refusedBy == "" {
		count.board++
		count.clients[client]++
	}
	a.mu.Unlock()
	if refusedBy != "" {
		a.metrics.limitRejections.WithLabelValues(refusedBy, class).Inc()
		return nil, models.NewError(models.Error_ResourceExhausted, "%s", admission.Refusal(a.limits, refusedBy, cell))
	}
	a.metrics.inUse.WithLabelValues(stageInUse[stage], class).Inc()
	return &place{a: a, stage: stage, client: client, class: class}, nil
}

func (p *place) release() {
	p.once.Do(func() {
		a := p.a
		a.mu.Lock()
		count := &a.stages[p.stage]
		count.board--
		if count.clients[p.client]--; count.clients[p.client] <= 0 {
			delete(count.clients, p.client)
		}
		a.mu.Unlock()
		a.metrics.inUse.WithLabelValues(stageInUse[p.stage], p.class).Dec()
	})
}

// limit bounds how many of something the board serves at once. A request
// beyond it is answered at once with ResourceExhausted rather than queued:
// a board that is already behind only falls further behind by waiting,
// and the caller can retry (a rep retries on its next tick).
type limit struct {
	name string
	// what is the limit in words, for the refusal.
	what string
	max  int64
	// forCells of the places only a cell's rep may take.
	forCells int64
	inUse    atomic.Int64
	m        *metrics
}

func newLimit(name, what string, max int, m *metrics) *limit {
	return &limit{name: name, what: what, max: int64(max), m: m}
}

// reservingForCells keeps a fifth of l's places for cells' reps, as the
// requests in flight keep reserved_cell_requests: a rep follows its cell's
// events on one stream, and clients that open every other one must not
// leave it polling.
func (l *limit) reservingForCells() *limit {
	l.forCells = l.max / 5
	return l
}

// acquire takes one place for a caller of class (a cell's rep when cell),
// and says false, counting a refusal, when none is left to it. Every true
// is paired with a release of the same class.
func (l *limit) acquire(class string, cell bool) bool {
	limit := l.max
	if !cell {
		limit -= l.forCells
	}
	if l.inUse.Add(1) > limit {
		l.inUse.Add(-1)
		l.m.limitRejections.WithLabelValues(l.name, class).Inc()
		return false
	}
	l.m.inUse.WithLabelValues(l.name, class).Inc()
	return true
}

func (l *limit) release(class string) {
	l.inUse.Add(-1)
	l.m.inUse.WithLabelValues(l.name, class).Dec()
}

// exhausted is the refusal of a request beyond the limit, to a cell's rep
// when cell.
func (l *limit) exhausted(cell bool) *models.Error {
	if cell || l.forCells == 0 {
		return models.NewError(models.Error_ResourceExhausted, "%s: the board serves at most %d %s at once; retry later", l.name, l.max, l.what)
	}
	return models.NewError(models.Error_ResourceExhausted, "%s: the board serves at most %d %s at once, %d of them only to cells' reps; retry later",
		l.name, l.max, l.what, l.forCells)
}
