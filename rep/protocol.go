package rep

import (
	"errors"
	"sync"

	"github.com/corkboard/corkboard/models"
)

// Two rules of the cell side of the board's API, kept by CellCalls (see
// protocol_calls.go), through which the agent and internal/simcell, the
// simulated cell of the board's tests, make every board call.

// Answered reports whether the board answered a call (with success or an
// error of its own), as opposed to a transport failure. Unavailable is no
// answer either: the board could not reach its database (or is shutting
// down), so it decided nothing about the call, and the same call can
// succeed once the database is back. Taken as an answer, a crash reported
// during a database restart was dropped, and the instance's row stayed
// RUNNING and routable, on a dead process, for good.
func Answered(err error) bool {
	var modelErr *models.Error
	if err == nil {
		return true
	}
	return errors.As(err, &modelErr) && modelErr.GetType() != models.Error_Unavailable
}

// CallGate keeps a cell's bulk reports and its lifecycle calls about an
// instance (claim, start, crash, unroutable, remove, evacuate) apart: a
// report taken before a start and answered after it would tell the board
// the instance is still CLAIMED, and the board would believe it and move
// the RUNNING row back. So a call waits until no report in flight names
// its instance (BeginCall), and a report leaves out an instance with a
// call in flight (Report). K names an instance: the agent uses instance
// guids, simcell (process guid, index). A cell has at most one report in
// flight. It is safe for concurrent use, and takes no lock of its
// caller's: a caller may hold its own while it asks InCall or Report.
//
// Calls about one instance may nest: a cell that holds a call open across
// several board calls (simcell's claim and start, the agent's start and
// what it records of the answer) keeps the instance out of reports until
// its outermost EndCall.
type CallGate[K comparable] struct {
	mu       sync.Mutex
	answered *sync.Cond
	inReport map[K]bool
	// inCall counts the calls open about an instance.
	inCall map[K]int
}

func NewCallGate[K comparable]() *CallGate[K] {
	g := &CallGate[K]{inReport: map[K]bool{}, inCall: map[K]int{}}
	g.answered = sync.NewCond(&g.mu)
	return g
}

// BeginCall waits until no report in flight names k, then keeps k out of
// reports until the matching EndCall. A call nested in another about k
// does not wait: no report can name k while the outer one is open.
func (g *CallGate[K]) BeginCall(k K) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.inReport[k] {
		g.answered.Wait()
	}
	g.inCall[k]++
}

func (g *CallGate[K]) EndCall(k K) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inCall[k] <= 1 {
		delete(g.inCall, k)
		return
	}
	g.inCall[k]--
}

// InCall reports whether a call about k is in flight.
func (g *CallGate[K]) InCall(k K) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inCall[k] > 0
}

// InReport reports whether the report in flight names k.
func (g *CallGate[K]) InReport(k K) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inReport[k]
}

// Report puts k in the report being taken, unless a call about k is in
// flight; it reports whether k may be reported. Calls about k then wait
// for ReportAnswered.
func (g *CallGate[K]) Report(k K) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inCall[k] > 0 {
		return false
	}
	g.inReport[k] = true
	return true
}

// ReportAnswered ends the report that named keys, answered or failed, and
// lets the calls that waited for it go.
func (g *CallGate[K]) ReportAnswered(keys ...K) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, k := range keys {
		delete(g.inReport, k)
	}
	g.answered.Broadcast()
}
