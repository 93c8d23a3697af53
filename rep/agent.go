package rep

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// Defaults of AgentConfig.
const (
	// DefaultPollInterval is the safety net under the event stream: a
	// change whose event never came is acted on within 10 s. Events bring
	// the rest at once, and a list per cell every 10 s instead of every
	// second is a tenth of the load on the board (1000 cells: 100 lists a
	// second, not 1000).
	DefaultPollInterval = 10 * time.Second
	// DefaultRetryInterval is how often a board that does not answer is
	// asked again, and how often a cell without an event stream lists its
	// rows: what the poll interval was before the agent followed events.
	DefaultRetryInterval    = time.Second
	DefaultBulkSyncInterval = 30 * time.Second
	// DefaultOccupancyBatchInterval gathers a burst of occupancy changes
	// into one call and still gets them to the board well within a second.
	DefaultOccupancyBatchInterval = 250 * time.Millisecond
	DefaultEvacuationTimeout      = 10 * time.Minute
	DefaultStopGracePeriod        = 5 * time.Second
	// DefaultUnroutableRetryTimeout is long enough for a board to restart
	// and short enough that a stop does not wait on a board that is gone.
	DefaultUnroutableRetryTimeout = 10 * time.Second
	// DefaultHealthReportInterval keeps the board's signals within seconds
	// of what instances do, at one call per cell every 10 s.
	DefaultHealthReportInterval = 10 * time.Second

	// finalCallTimeout bounds the calls a rep on its way out still makes
	// (removing the rows of the instances it stopped): a gone board must
	// not hold the exit up.
	finalCallTimeout = 2 * time.Second
	// actorsExitTimeout bounds how long an exiting agent waits for its
	// instances' goroutines once the executor has stopped every process.
	actorsExitTimeout = 5 * time.Second
)

// AgentConfig configures an Agent.
type AgentConfig struct {
	// Cell is what the agent registers: cell_id, rep_url, zone, capacity,
	// placement tags. Required.
	Cell *models.Cell
	// Board is the API client: the agent polls its cell's instances,
	// fetches definitions and drains its cell through it. Required.
	Board *client.Client
	// CellClient speaks for Cell on the same board. Required.
	CellClient *client.CellClient
	// Executor runs the instances. Required.
	Executor Executor
	// PollInterval is how often the agent lists its cell's instances
	// while it follows the board's event stream, a safety net: an event
	// about its cell makes it list at once (see followEvents).
	PollInterval time.Duration
	// RetryInterval is how often the agent lists its cell's instances
	// while it has no event stream (the board is down, or refused or broke
	// the stream), tries a board call that got no answer again, and
	// bulk-reports while evacuating. Zero means DefaultRetryInterval, or
	// PollInterval when that is shorter.
	RetryInterval time.Duration
	// DisableEventStream makes the agent learn of its assignments by
	// polling alone, every RetryInterval: for a board that serves no
	// events, or to compare.
	DisableEventStream bool
	// BulkSyncInterval is how often the agent reports everything it runs.
	BulkSyncInterval time.Duration
	// OccupancyBatchInterval is how long the agent gathers occupancy
	// changes after the first one before it sends them all in one call.
	OccupancyBatchInterval time.Duration
	// EvacuationTimeout bounds an evacuation; what is still running then
	// is stopped.
	EvacuationTimeout time.Duration
	// StopGracePeriod is how long an instance stays up after it was marked
	// unroutable, so routers stop sending it requests before it goes.
	StopGracePeriod time.Duration
	// UnroutableRetryTimeout bounds how long a stop keeps trying to mark
	// its instance unroutable while the board does not answer at all,
	// before it stops the instance anyway; a board that answers
	// Unavailable (its database is away) starts it again.
	UnroutableRetryTimeout time.Duration
	// HealthReportInterval is how often the agent reports its instances'
	// health checks and memory to the board (see healthLoop). Zero means
	// DefaultHealthReportInterval.
	HealthReportInterval time.Duration
	// DisableHealthReports makes the agent send no health reports.
	DisableHealthReports bool
	// Logger may be nil.
	Logger lager.Logger
}

// Agent is the rep's brain: it registers and heartbeats its cell, claims
// and runs what the board places there, reports what becomes of it, stops
// what the board no longer wants, and evacuates on a drain. It is an ifrit
// runner: SIGTERM evacuates the cell and returns once every instance has
// moved (or the evacuation timed out); SIGINT stops every instance at once
// and returns.
//
// Assignments are learned by listing the cell's rows (Client.ActualLRPs
// with the cell id, one indexed query): at once when the board's event
// stream says something changed on the cell, and every PollInterval
// anyway (every RetryInterval while no stream is open). See
// agent_events.go.
//
// Each instance has one goroutine (see instanceActor) that makes its
// board calls in order: claim, start, crash or stop and remove. Bulk
// reports never include an instance with a call in flight, and a call
// waits for a report in flight that names its instance: a report taken
// before a start and answered after it would move a RUNNING row back to
// CLAIMED.
//
// What instances say of themselves (SetOccupied) reaches the board in
// small batches: the first change wakes occupancyLoop, which waits
// OccupancyBatchInterval for more and sends them all in one
// ReportOccupancy call. Occupancy calls and bulk reports take turns
// (reportMu), so that neither lands an older flag over a newer one.
type Agent struct {
	cfg    AgentConfig
	logger lager.Logger
	cellID string
	// guidPrefix starts every instance guid this agent makes: random per
	// process, so a restarted rep tells its predecessor's rows from its own.
	guidPrefix string

	ctx    context.Context
	cancel context.CancelFunc

	drainOnce sync.Once
	drains    chan string
	syncSoon  chan struct{}
	// pollSoon wakes pollLoop for a list now; it holds one request, which
	// absorbs those made while it waits.
	pollSoon chan struct{}
	// streamChanged tells pollLoop that a stream opened or ended, which
	// changes how long it waits.
	streamChanged chan struct{}
	// occupancySoon wakes occupancyLoop.
	occupancySoon chan struct{}
	// reportMu is held by a bulk report or an occupancy call from the
	// moment it reads the instances until the board answered.
	reportMu sync.Mutex
	// stopDispatch ends dispatchEvents, which outlives ctx: instances
	// stopped on the way out still get their Exited events.
	stopDispatch chan struct{}
	actors       sync.WaitGroup
	loops        sync.WaitGroup

	mu        sync.Mutex
	instances map[string]*agentInstance // by instance guid
	claiming  map[instanceKey]bool
	// staleRemovals are rows of an earlier rep on this cell being removed.
	staleRemovals map[string]bool
	definitions   map[definitionKey]*models.LRPDefinition
	// cellCalls makes every call of the cell side of the board's API; its
	// gate keeps bulk reports and the lifecycle calls about an instance
	// (by instance guid) apart.
	cellCalls *CellCalls[string]
	// pendingOccupancy holds the occupancy changes not sent yet: the
	// latest flag of each instance, by instance guid.
	pendingOccupancy map[string]bool
	evacuating       bool
	shuttingDown     bool

	// streaming: an event stream is open (followEvents).
	streaming bool

	// pendingHealth is what the next health report carries, by
	// definition; only healthLoop touches it.
	pendingHealth map[definitionKey]*models.DefinitionHealth
}

type instanceKey struct {
	processGuid string
	index       int32
}

type definitionKey struct {
	processGuid  string
	definitionID string
}

// NewAgent checks cfg and fills in its defaults.
func NewAgent(cfg AgentConfig) (*Agent, error) {
	switch {
	case cfg.Cell == nil || cfg.Cell.GetCellId() == "":
		return nil, errors.New("AgentConfig.Cell with a cell_id is required")
	case cfg.Board == nil:
		return nil, errors.New("AgentConfig.Board is required")
	case cfg.CellClient == nil:
		return nil, errors.New("AgentConfig.CellClient is required")
	case cfg.CellClient.CellID() != cfg.Cell.GetCellId():
		return nil, fmt.Errorf("AgentConfig.CellClient speaks for cell %q, not %q", cfg.CellClient.CellID(), cfg.Cell.GetCellId())
	case cfg.Executor == nil:
		return nil, errors.New("AgentConfig.Executor is required")
	}
	for name, d := range map[string]time.Duration{
		"PollInterval": cfg.PollInterval, "RetryInterval": cfg.RetryInterval, "BulkSyncInterval": cfg.BulkSyncInterval,
		"EvacuationTimeout": cfg.EvacuationTimeout, "StopGracePeriod": cfg.StopGracePeriod,
		"UnroutableRetryTimeout": cfg.UnroutableRetryTimeout, "OccupancyBatchInterval": cfg.OccupancyBatchInterval,
		"HealthReportInterval": cfg.HealthReportInterval,
	} {
		if d < 0 {
			return nil, fmt.Errorf("AgentConfig.%s must not be negative, got %s", name, d)
		}
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.RetryInterval == 0 {
		// A poll interval set below the default retry interval keeps
		// retries as quick as polls were: poll 200ms retries every 200ms,
		// poll 10s (the default) or 1h every 1s.
		cfg.RetryInterval = min(DefaultRetryInterval, cfg.PollInterval)
	}
	if cfg.BulkSyncInterval == 0 {
		cfg.BulkSyncInterval = DefaultBulkSyncInterval
	}
	if cfg.OccupancyBatchInterval == 0 {
		cfg.OccupancyBatchInterval = DefaultOccupancyBatchInterval
	}
	if cfg.EvacuationTimeout == 0 {
		cfg.EvacuationTimeout = DefaultEvacuationTimeout
	}
	if cfg.StopGracePeriod == 0 {
		cfg.StopGracePeriod = DefaultStopGracePeriod
	}
	if cfg.UnroutableRetryTimeout == 0 {
		cfg.UnroutableRetryTimeout = DefaultUnroutableRetryTimeout
	}
	if cfg.HealthReportInterval == 0 {
		cfg.HealthReportInterval = DefaultHealthReportInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = lager.NewLogger("rep")
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &Agent{
		cfg:           cfg,
		logger:        cfg.Logger.Session("agent", lager.Data{"cell_id": cfg.Cell.GetCellId()}),
		cellID:        cfg.Cell.GetCellId(),
		guidPrefix:    randomHex(4),
		ctx:           ctx,
		cancel:        cancel,
		drains:        make(chan string, 1),
		syncSoon:      make(chan struct{}, 1),
		pollSoon:      make(chan struct{}, 1),
		streamChanged: make(chan struct{}, 1),
		occupancySoon: make(chan struct{}, 1),
		stopDispatch:  make(chan struct{}),
		instances:     map[string]*agentInstance{},
		claiming:      map[instanceKey]bool{},
		staleRemovals: map[string]bool{},
		definitions:   map[definitionKey]*models.LRPDefinition{},

		pendingOccupancy: map[string]bool{},
		pendingHealth:    map[definitionKey]*models.DefinitionHealth{},
	}
	cellCalls, err := NewCellCalls(cfg.CellClient, CellCallsConfig[string]{
		RetryInterval:          cfg.RetryInterval,
		UnroutableRetryTimeout: cfg.UnroutableRetryTimeout,
		FinalCallTimeout:       finalCallTimeout,
		CallEnded:              a.sendOccupancyAfterCall,
	})
	if err != nil {
		return nil, err
	}
	a.cellCalls = cellCalls
	return a, nil
}

// Run is the ifrit runner; see Agent.
func (a *Agent) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	a.loops.Add(5)
	go a.dispatchEvents()
	go a.heartbeatLoop()
	go a.pollLoop()
	go a.bulkSyncLoop()
	go a.occupancyLoop()
	if !a.cfg.DisableEventStream {
		a.loops.Add(1)
		go a.followEvents()
	}
	if !a.cfg.DisableHealthReports {
		a.loops.Add(1)
		go a.healthLoop()
	}
	close(ready)
	a.logger.Info("started", lager.Data{"instance_guid_prefix": a.guidPrefix})

	select {
	case sig := <-signals:
		if sig == syscall.SIGTERM {
			a.evacuate(signals, "SIGTERM")
		} else {
			a.logger.Info("stopping-everything", lager.Data{"signal": sig.String()})
		}
	case reason := <-a.drains:
		a.evacuate(signals, reason)
	}
	a.shutdown()
	a.logger.Info("exited")
	return nil
}

// Drain starts an evacuation, as SIGTERM does; the agent's Run returns
// once it is done. Draining twice changes nothing.
func (a *Agent) Drain(reason string) {
	a.drainOnce.Do(func() { a.drains <- reason })
}

// SetOccupied records what an instance says about itself (DESIGN §7); a
// change is sent to the board with the others of the next
// OccupancyBatchInterval (see occupancyLoop). It reports false for an
// instance the agent does not run.
func (a *Agent) SetOccupied(instanceGuid string, occupied bool) bool {
	a.mu.Lock()
	inst := a.instances[instanceGuid]
	changed := inst != nil && inst.occupied != occupied
	if changed {
		inst.occupied = occupied
		a.pendingOccupancy[instanceGuid] = occupied
	}
	a.mu.Unlock()
	if inst == nil {
		return false
	}
	if changed {
		a.logger.Info("occupancy-changed", lager.Data{"instance_guid": instanceGuid, "occupied": occupied})
		a.requestOccupancyReport()
	}
	return true
}

// AgentInstance is what the agent knows of an instance beyond the
// executor: which of its rows it is and what it said about itself.
type AgentInstance struct {
	InstanceGuid string
	Presence     models.ActualLRP_Presence
	Occupied     bool
}

// Instance returns what the agent knows of an instance it runs.
func (a *Agent) Instance(instanceGuid string) (AgentInstance, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	inst := a.instances[instanceGuid]
	if inst == nil {
		return AgentInstance{}, false
	}
	return AgentInstance{InstanceGuid: inst.guid, Presence: inst.presence, Occupied: inst.occupied}, true
}

// requestSync asks for a bulk report soon; requests coalesce.
func (a *Agent) requestSync() {
	select {
	case a.syncSoon <- struct{}{}:
	default:
	}
}

// shutdown ends the loops, stops whatever still runs and waits (a bounded
// time) for the instances' goroutines to make their last calls.
func (a *Agent) shutdown() {
	a.mu.Lock()
	a.shuttingDown = true
	a.mu.Unlock()
	a.cancel()
	a.cfg.Executor.Shutdown()

	done := make(chan struct{})
	go func() {
		a.actors.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(actorsExitTimeout):
		a.logger.Info("gave-up-waiting-for-instances")
	}
	close(a.stopDispatch)
	a.loops.Wait()
}

// heartbeatLoop registers the cell (fresh_start on the first success) and
// renews its presence every third of the TTL the board answers with. A
// heartbeat that says the cell drains starts an evacuation.
func (a *Agent) heartbeatLoop() {
	defer a.loops.Done()
	fresh := true
	wait := time.Duration(0)
	for sleepCtx(a.ctx, wait) {
		result, err := a.cellCalls.Heartbeat(a.ctx, a.cfg.Cell, fresh)
		if err != nil {
			if a.ctx.Err() == nil {
				a.logger.Info("heartbeat-failed", lager.Data{"error": err.Error()})
			}
			wait = min(a.cfg.RetryInterval, time.Second)
			continue
		}
		if fresh {
			a.logger.Info("registered", lager.Data{"presence_ttl": result.PresenceTTL.String(), "rep_url": a.cfg.Cell.GetRepUrl()})
			fresh = false
		}
		a.cfg.Executor.SetMaxAssetDownloads(result.MaxAssetDownloads)
		if result.Draining {
			a.Drain("the board says this cell drains")
		}
		wait = PresenceRenewal(result.PresenceTTL)
	}
}

// dispatchEvents hands every executor event to its instance's goroutine.
func (a *Agent) dispatchEvents() {
	defer a.loops.Done()
	for {
		select {
		case <-a.stopDispatch:
			return
		case ev := <-a.cfg.Executor.Events():
			a.mu.Lock()
			inst := a.instances[ev.InstanceGuid]
			a.mu.Unlock()
			if inst == nil {
				a.logger.Debug("event-for-unknown-instance", lager.Data{"instance_guid": ev.InstanceGuid, "kind": ev.Kind.String()})
				continue
			}
			// Never blocks: an instance gets at most three events.
			inst.events <- ev
		}
	}
}

// beginCall waits until no report in flight names the instance, then
// keeps it out of reports until endCall; calls made meanwhile nest in it.
func (a *Agent) beginCall(guid string) {
	a.cellCalls.Gate().BeginCall(guid)
}

func (a *Agent) endCall(guid string) {
	a.cellCalls.Gate().EndCall(guid)
	a.sendOccupancyAfterCall(guid)
}

// sendOccupancyAfterCall sends the instance's occupancy change that waited
// for a call about it to end (see takeOccupancyChanges).
func (a *Agent) sendOccupancyAfterCall(guid string) {
	a.mu.Lock()
	_, pending := a.pendingOccupancy[guid]
	a.mu.Unlock()
	if pending {
		a.requestOccupancyReport()
	}
}

// definition fetches a definition by (process guid, definition id); a
// definition never changes once written, so it is cached.
func (a *Agent) definition(processGuid, definitionID string) (*models.LRPDefinition, error) {
	key := definitionKey{processGuid, definitionID}
	a.mu.Lock()
	def := a.definitions[key]
	a.mu.Unlock()
	if def != nil {
		return def, nil
	}
	def, err := a.cfg.Board.Definition(a.ctx, processGuid, definitionID)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.definitions[key] = def
	a.mu.Unlock()
	return def, nil
}

// newInstanceGuid makes an instance guid: the agent's prefix, then 24
// random hex digits.
func (a *Agent) newInstanceGuid() string {
	return a.guidPrefix + "-" + randomHex(12)
}

func (a *Agent) ownGuid(guid string) bool {
	return strings.HasPrefix(guid, a.guidPrefix+"-")
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// sleepCtx waits d or until ctx ends; it reports whether ctx is still
// alive.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
