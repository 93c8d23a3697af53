package e2e_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// boardProxy stands between a rep and the board (the rep's board_url
// points at it). It passes every call on, except the calls that mark an
// instance unroutable (a start call with routable false): it can refuse
// the first few of those, or hold every one until the rep gives up. It
// records each of them, and for those it passed, when the board's answer
// came back — before the rep could read it, so anything the rep did in
// response happened after that moment.
type boardProxy struct {
	url string

	mu sync.Mutex
	// refuse is how many more unroutable calls get a 503.
	refuse int
	// hold keeps every unroutable call waiting until the rep gives up.
	hold  bool
	calls []unroutableCall
	// closed ends the calls held when the spec ends.
	closed chan struct{}
}

// unroutableCall is one call a rep made to mark an instance unroutable.
type unroutableCall struct {
	instanceGuid string
	presence     models.ActualLRP_Presence
	// outcome is "refused", "held" or "passed".
	outcome string
	// answeredAt is, for a passed call, when the board's answer reached
	// the proxy; unroutable says the answer shows the row unroutable.
	answeredAt time.Time
	unroutable bool
}

type unroutableCallKey struct{}

func startBoardProxy(b *board) *boardProxy {
	GinkgoHelper()
	target, err := url.Parse(b.url)
	Expect(err).NotTo(HaveOccurred())
	p := &boardProxy{closed: make(chan struct{})}
	proxy := &httputil.ReverseProxy{
		Rewrite:        func(r *httputil.ProxyRequest) { r.SetURL(target) },
		ModifyResponse: p.noteAnswer,
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.serve(w, r, proxy)
	}))
	DeferCleanup(server.Close)
	// Registered after server.Close, so it runs first: held calls end
	// and Close does not wait on them.
	DeferCleanup(func() { close(p.closed) })
	p.url = server.URL
	return p
}

func (p *boardProxy) serve(w http.ResponseWriter, r *http.Request, proxy *httputil.ReverseProxy) {
	if r.URL.Path != models.RouteStartActualLRP {
		proxy.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req models.StartActualLRPRequest
	if err := proto.Unmarshal(body, &req); err != nil || req.Routable == nil || req.GetRoutable() {
		proxy.ServeHTTP(w, r)
		return
	}

	call := unroutableCall{instanceGuid: req.GetInstanceGuid(), presence: req.GetPresence()}
	p.mu.Lock()
	switch {
	case p.hold:
		call.outcome = "held"
	case p.refuse > 0:
		p.refuse--
		call.outcome = "refused"
	default:
		call.outcome = "passed"
	}
	n := len(p.calls)
	p.calls = append(p.calls, call)
	p.mu.Unlock()

	switch call.outcome {
	case "held":
		select {
		case <-r.Context().Done():
		case <-p.closed:
		}
	case "refused":
		http.Error(w, "the proxy refuses this call", http.StatusServiceUnavailable)
	default:
		proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), unroutableCallKey{}, n)))
	}
}

// noteAnswer records when the board answered a passed unroutable call,
// and whether the answer shows the row unroutable. It runs before the
// answer is copied to the rep.
func (p *boardProxy) noteAnswer(resp *http.Response) error {
	n, ok := resp.Request.Context().Value(unroutableCallKey{}).(int)
	if !ok {
		return nil
	}
	answeredAt := time.Now()
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var answer models.ActualLRPLifecycleResponse
	unroutable := proto.Unmarshal(body, &answer) == nil && answer.GetError() == nil &&
		answer.GetActualLrp() != nil && !answer.GetActualLrp().GetRoutable()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[n].answeredAt = answeredAt
	p.calls[n].unroutable = unroutable
	return nil
}

// setRefuse makes the next n unroutable calls get a 503.
func (p *boardProxy) setRefuse(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = n
}

// setHold holds every unroutable call from now on.
func (p *boardProxy) setHold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = true
}

// callsFor lists the unroutable calls about one instance, in order.
func (p *boardProxy) callsFor(instanceGuid string) []unroutableCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	var calls []unroutableCall
	for _, call := range p.calls {
		if call.instanceGuid == instanceGuid {
			calls = append(calls, call)
		}
	}
	return calls
}

// outcomes lists the outcomes of the unroutable calls about one instance.
func (p *boardProxy) outcomes(instanceGuid string) []string {
	var outcomes []string
	for _, call := range p.callsFor(instanceGuid) {
		outcomes = append(outcomes, call.outcome)
	}
	return outcomes
}
