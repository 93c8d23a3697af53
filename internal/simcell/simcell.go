// Package simcell is a simulated cell for tests: a rep that runs no
// processes but speaks the real cell side of the board's API through
// client.CellClient. It registers its cell and heartbeats it, reports
// what it runs in bulk, claims and starts what the board assigns to it
// (running the definition of the row it claimed), and stops what the
// board tells it to stop, removing the row, as a rep does. During a
// rolling update it keeps an instance the board replaced running as
// RETIRING until told to stop. It makes every board call through
// rep.CellCalls, as the rep's agent does: a claim, a crash and a stopped
// instance's removal are repeated until the board answers (it may be down,
// the connection cut, or its database away), its unroutable call for a
// bounded time; a start is not: the instance runs whether the board heard
// of it or not, and the next report says so. What counts as an answer, and
// how a report and the calls about an instance stay apart, are the agent's
// rules, not a copy of them.
// Tests make it crash an instance, go silent (a lost cell) and come back,
// or ignore its assignments.
//
// It is not a stand-in for the board: every decision it observes is the
// board's.
package simcell

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
)

// Defaults of Config.
const (
	DefaultReportInterval = 200 * time.Millisecond
	DefaultWorkers        = 4
)

// Config describes a simulated cell.
type Config struct {
	// Cell is what the cell registers: cell_id, zone, capacity, tags. A
	// missing rep_url gets a made-up one.
	Cell *models.Cell
	// ReportInterval is how often the cell bulk-reports what it runs and
	// picks up its assignments.
	ReportInterval time.Duration
	// Workers is how many claims and starts the cell has in flight at
	// once.
	Workers int
	// StartByReport makes the cell start claimed instances by reporting
	// them RUNNING in its next bulk report instead of calling start.
	StartByReport bool
	// Logf, when set, is told about every call that failed.
	Logf func(format string, args ...any)
	// OnHeartbeat, when set, is told how long each heartbeat after the
	// first registration took and how it ended (nil: renewed).
	OnHeartbeat func(took time.Duration, err error)
}

// Instance is an instance the cell runs.
type Instance struct {
	client.Instance
	DefinitionID string
	State        models.ActualLRP_State
}

// Cell is a running simulated cell. Stop it when done.
type Cell struct {
	cfg Config
	// board makes every call to the board, by the agent's rules; its
	// gate keeps reports and the lifecycle calls about an index apart.
	board *rep.CellCalls[key]
	// logger tells Logf of the calls that got no answer.
	logger lager.Logger

	mu      sync.Mutex
	running map[key]*Instance
	// evacuating are the instances handed over to a replacement and kept
	// running (EVACUATING rows) until the board says stop.
	evacuating map[key]*Instance
	// retiring are running instances of an older definition whose index
	// the board gave to a replacement (RETIRING rows), kept running until
	// the board says stop.
	retiring map[key]*Instance
	// draining is set once a heartbeat said the cell drains.
	draining bool
	// busy are the assignments being claimed and started.
	busy     map[key]bool
	silent   bool
	claiming bool
	stops    []*models.ReportedInstance

	// queue is the latest report's assignments not yet taken; each
	// report replaces it, so workers never claim from an old list.
	queue []*models.ActualLRP
	// queued wakes idle workers when the queue fills.
	queued chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// key names an ORDINARY instance; the cell claims nothing else.
type key struct {
	processGuid string
	index       int32
}

// Start registers the cell with the board at boardURL and starts its
// heartbeat, report and worker loops. The first registration must
// succeed.
func Start(ctx context.Context, boardURL string, cfg Config) (*Cell, error) {
	if cfg.Cell == nil || cfg.Cell.GetCellId() == "" {
		return nil, errors.New("simcell: Config.Cell with a cell_id is required")
	}
	if cfg.ReportInterval <= 0 {
		cfg.ReportInterval = DefaultReportInterval
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Cell.GetRepUrl() == "" {
		cfg.Cell.RepUrl = "http://" + cfg.Cell.GetCellId() + ".cells.test:1800"
	}
	c := &Cell{
		cfg:        cfg,
		running:    map[key]*Instance{},
		evacuating: map[key]*Instance{},
		retiring:   map[key]*Instance{},
		busy:       map[key]bool{},
		claiming:   true,
		queued:     make(chan struct{}, cfg.Workers),
	}
	c.logger = lager.NewLogger("simcell")
	c.logger.RegisterSink(logfSink{cellID: cfg.Cell.GetCellId(), logf: cfg.Logf})
	board, err := rep.NewCellCalls(client.NewCellClient(boardURL, cfg.Cell.GetCellId(), client.WithRetries(0)), rep.CellCallsConfig[key]{
		RetryInterval:          cfg.ReportInterval,
		UnroutableRetryTimeout: rep.DefaultUnroutableRetryTimeout,
		// A lost cell makes no calls. A rep on its way out makes a last
		// one; a stopped simulated cell is a lost one, and makes none.
		HoldBack: c.isSilent,
	})
	if err != nil {
		return nil, fmt.Errorf("simcell %s: %w", cfg.Cell.GetCellId(), err)
	}
	c.board = board
	registered, err := c.board.Heartbeat(ctx, cfg.Cell, true)
	if err != nil {
		return nil, fmt.Errorf("simcell %s: register: %w", cfg.Cell.GetCellId(), err)
	}
	loops, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Add(2 + cfg.Workers)
	go c.heartbeat(loops, registered.PresenceTTL)
	go c.report(loops)
	for range cfg.Workers {
		go c.worker(loops)
	}
	return c, nil
}

// ID is the cell id.
func (c *Cell) ID() string { return c.cfg.Cell.GetCellId() }

// Stop ends every loop. The board is not told: to the board, a stopped
// cell is a lost one.
func (c *Cell) Stop() {
	c.cancel()
	c.wg.Wait()
}

// Lose makes the cell go silent, as if its machine dropped off the
// network: no heartbeats, no reports, no claims. What it ran, it keeps
// running.
func (c *Cell) Lose() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.silent = true
}

// Return ends a Lose: the cell heartbeats at once, and reports again.
func (c *Cell) Return(ctx context.Context) error {
	c.mu.Lock()
	c.silent = false
	c.mu.Unlock()
	if _, err := c.board.Register(ctx, c.cfg.Cell); err != nil {
		return fmt.Errorf("simcell %s: register: %w", c.ID(), err)
	}
	return nil
}

// IgnoreAssignments makes the cell keep heartbeating and reporting but
// claim nothing new, like a rep that is stuck.
func (c *Cell) IgnoreAssignments() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.claiming = false
}

// Crash reports the instance at (processGuid, index) crashed and stops
// running it. It must be running on this cell. As a rep's crash report,
// it is repeated until the board answers (or ctx ends); the answer is
// returned.
func (c *Cell) Crash(ctx context.Context, processGuid string, index int32, reason string) (*models.ActualLRP, error) {
	k := key{processGuid, index}
	c.beginCall(k)
	defer c.endCall(k)
	c.mu.Lock()
	instance, ok := c.running[k]
	c.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("simcell %s: %s/%d is not running here", c.ID(), processGuid, index)
	}
	lrp, err := c.board.Crash(ctx, c.about(k, instance), reason)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	delete(c.running, k)
	c.mu.Unlock()
	return lrp, nil
}

// Evacuating lists the instances the cell keeps running as EVACUATING.
func (c *Cell) Evacuating() []Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Instance, 0, len(c.evacuating))
	for _, instance := range c.evacuating {
		out = append(out, *instance)
	}
	return out
}

// Retiring lists the instances the cell keeps running as RETIRING: the
// board replaced them with an instance of a newer definition and has not
// told the cell to stop them yet.
func (c *Cell) Retiring() []Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Instance, 0, len(c.retiring))
	for _, instance := range c.retiring {
		out = append(out, *instance)
	}
	return out
}

// Running lists the instances the cell runs (CLAIMED or RUNNING).
func (c *Cell) Running() []Instance {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Instance, 0, len(c.running))
	for _, instance := range c.running {
		out = append(out, *instance)
	}
	return out
}

// Stops lists every instance the board told the cell to stop, in order.
func (c *Cell) Stops() []*models.ReportedInstance {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*models.ReportedInstance(nil), c.stops...)
}

func (c *Cell) isSilent() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.silent
}

// heartbeat renews the cell's presence every third of its TTL. A
// heartbeat that failed is tried again after ReportInterval, as a rep
// tries again after its poll interval: a board down for a moment at each
// of three renewals (restarted again and again, say) would otherwise
// see the cell's presence run out although it was back within
// milliseconds each time.
func (c *Cell) heartbeat(ctx context.Context, ttl time.Duration) {
	defer c.wg.Done()
	interval := rep.PresenceRenewal(ttl)
	wait := interval
	for {
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		wait = interval
		if c.isSilent() {
			continue
		}
		began := time.Now()
		result, err := c.board.Heartbeat(ctx, c.cfg.Cell, false)
		if c.cfg.OnHeartbeat != nil && ctx.Err() == nil {
			c.cfg.OnHeartbeat(time.Since(began), err)
		}
		if err != nil {
			if ctx.Err() == nil {
				c.cfg.Logf("simcell %s: heartbeat: %v", c.ID(), err)
			}
			wait = min(c.cfg.ReportInterval, interval)
			continue
		}
		if result.Draining {
			c.evacuate(ctx)
		}
	}
}

// evacuate hands every instance the cell runs over to a replacement. The
// board keeps a running one as EVACUATING (keep running: it moves to
// evacuating) and gives a claimed one back (stop it: it is dropped). A
// call that fails leaves the instance where it is, for the next
// heartbeat to try again.
func (c *Cell) evacuate(ctx context.Context) {
	c.mu.Lock()
	c.draining = true
	keys := make([]key, 0, len(c.running))
	for k := range c.running {
		keys = append(keys, k)
	}
	c.mu.Unlock()
	for _, k := range keys {
		c.evacuateOne(ctx, k)
	}
}

func (c *Cell) evacuateOne(ctx context.Context, k key) {
	c.beginCall(k)
	defer c.endCall(k)
	c.mu.Lock()
	instance, ok := c.running[k]
	c.mu.Unlock()
	if !ok {
		return
	}
	keep, err := c.board.Evacuate(ctx, c.about(k, instance))
	if err != nil {
		if ctx.Err() == nil {
			c.cfg.Logf("simcell %s: evacuate %s/%d: %v", c.ID(), k.processGuid, k.index, err)
		}
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[k] != instance {
		return
	}
	delete(c.running, k)
	if keep && instance.State == models.ActualLRP_RUNNING {
		c.evacuating[k] = instance
	}
}

// report bulk-reports what the cell runs every ReportInterval, stops what
// the board does not want, and hands assignments to the workers.
func (c *Cell) report(ctx context.Context) {
	defer c.wg.Done()
	ticker := time.NewTicker(c.cfg.ReportInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if c.isSilent() {
			continue
		}
		reported := c.reported()
		keys := make([]key, 0, len(reported))
		for _, r := range reported {
			keys = append(keys, key{r.GetProcessGuid(), r.GetIndex()})
		}
		result, err := c.board.BulkReport(ctx, reported, keys)
		if err != nil {
			if ctx.Err() == nil {
				c.cfg.Logf("simcell %s: bulk report: %v", c.ID(), err)
			}
			continue
		}
		c.removeRows(ctx, c.stopAll(result.Stop))
		c.dispatch(result.Assigned)
	}
}

// reported is what the cell runs, as a bulk report states it, leaving out
// instances with a lifecycle call in flight; the ones it names are in the
// report until its answer.
func (c *Cell) reported() []*models.ReportedInstance {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*models.ReportedInstance, 0, len(c.running))
	for k, instance := range c.running {
		if !c.board.Gate().Report(k) {
			continue
		}
		r := &models.ReportedInstance{
			ProcessGuid:  instance.ProcessGuid,
			Index:        instance.Index,
			Presence:     models.ActualLRP_ORDINARY,
			InstanceGuid: instance.InstanceGuid,
			DefinitionId: instance.DefinitionID,
			State:        instance.State,
			Routable:     true,
		}
		if instance.State == models.ActualLRP_RUNNING {
			r.NetInfo = c.netInfo(instance.Index)
		}
		out = append(out, r)
	}
	for _, kept := range []struct {
		presence  models.ActualLRP_Presence
		instances map[key]*Instance
	}{{models.ActualLRP_EVACUATING, c.evacuating}, {models.ActualLRP_RETIRING, c.retiring}} {
		for k, instance := range kept.instances {
			if !c.board.Gate().Report(k) {
				continue
			}
			out = append(out, &models.ReportedInstance{
				ProcessGuid:  instance.ProcessGuid,
				Index:        instance.Index,
				Presence:     kept.presence,
				InstanceGuid: instance.InstanceGuid,
				DefinitionId: instance.DefinitionID,
				State:        models.ActualLRP_RUNNING,
				NetInfo:      c.netInfo(instance.Index),
				Routable:     true,
			})
		}
	}
	return out
}

// stopped is an instance the cell stopped whose row it still has to mark
// unroutable and remove.
type stopped struct {
	instance *Instance
	presence models.ActualLRP_Presence
}

// stopAll stops what the board does not want and returns the stopped
// instances, whose rows the cell still has to mark unroutable and remove.
// An instance is found by its instance guid wherever the cell keeps it:
// one the cell still reports as ORDINARY may have become its index's
// RETIRING row meanwhile, and the board then names it RETIRING.
func (c *Cell) stopAll(stop []*models.ReportedInstance) []stopped {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []stopped
	for _, s := range stop {
		c.stops = append(c.stops, s)
		k := key{s.GetProcessGuid(), s.GetIndex()}
		presence := s.GetPresence()
		var kept map[key]*Instance
		for _, m := range []struct {
			instances map[key]*Instance
			presence  models.ActualLRP_Presence
		}{{c.running, presence}, {c.evacuating, models.ActualLRP_EVACUATING}, {c.retiring, models.ActualLRP_RETIRING}} {
			if instance, ok := m.instances[k]; ok && instance.InstanceGuid == s.GetInstanceGuid() {
				kept, presence = m.instances, m.presence
				break
			}
		}
		if kept == nil {
			continue
		}
		out = append(out, stopped{kept[k], presence})
		delete(kept, k)
	}
	return out
}

// removeRows takes stopped instances' rows out as a rep does: unroutable
// first (given up on after a while without an answer, see
// rep.CellCalls.MarkUnroutable), then removed, repeated until the board
// answers. An
// evacuating or retiring instance's row is its own. An ORDINARY one's
// usually is not (the board told the cell to stop it because the row went
// to another instance or cell), and the board refuses; but when it is —
// the row moved to another definition under the instance — a row left
// behind would stay RUNNING with nothing running it, and no report would
// correct it.
func (c *Cell) removeRows(ctx context.Context, rows []stopped) {
	for _, s := range rows {
		instance := s.instance
		about := c.about(key{instance.ProcessGuid, instance.Index}, instance)
		if err := c.board.MarkUnroutable(ctx, about, s.presence, c.netInfo(instance.Index)); err != nil && ctx.Err() == nil {
			c.cfg.Logf("simcell %s: unroutable %s %s/%d: %v", c.ID(), s.presence, instance.ProcessGuid, instance.Index, err)
		}
		if err := c.board.Remove(ctx, about, s.presence); err != nil && ctx.Err() == nil {
			c.cfg.Logf("simcell %s: remove %s %s/%d: %v", c.ID(), s.presence, instance.ProcessGuid, instance.Index, err)
		}
	}
}

// dispatch replaces the queue with the report's assignments and wakes
// the workers.
func (c *Cell) dispatch(assigned []*models.ActualLRP) {
	c.mu.Lock()
	c.queue = assigned
	c.mu.Unlock()
	for range min(len(assigned), c.cfg.Workers) {
		select {
		case c.queued <- struct{}{}:
		default:
		}
	}
}

// next takes the first queued assignment the cell does not already run or
// work on, and marks it busy; nil when there is none.
func (c *Cell) next() *models.ActualLRP {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.claiming || c.silent || c.draining {
		return nil
	}
	for len(c.queue) > 0 {
		lrp := c.queue[0]
		c.queue = c.queue[1:]
		k := key{lrp.GetProcessGuid(), lrp.GetIndex()}
		if c.busy[k] {
			continue
		}
		if current, runs := c.running[k]; runs {
			// A running instance of another definition whose index is
			// assigned anew: the board retired it for a replacement (a
			// rolling update). It keeps running as RETIRING, unless the
			// index has a RETIRING instance already, which has to go
			// first.
			_, taken := c.retiring[k]
			if current.State != models.ActualLRP_RUNNING || current.DefinitionID == lrp.GetDefinitionId() || taken || c.board.Gate().InCall(k) || c.board.Gate().InReport(k) {
				continue
			}
			delete(c.running, k)
			c.retiring[k] = current
		}
		c.busy[k] = true
		return lrp
	}
	return nil
}

func (c *Cell) worker(ctx context.Context) {
	defer c.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.queued:
		}
		for lrp := c.next(); lrp != nil && ctx.Err() == nil; lrp = c.next() {
			c.claimAndStart(ctx, lrp)
		}
	}
}

// claimAndStart claims an assignment under a new instance guid, repeated
// until the board answers (see rep.CellCalls.Claim), and starts it, or
// leaves it CLAIMED for the next report to start.
//
// Claims and starts name no definition, and a rolling update moves a row
// that serves nothing (UNCLAIMED or CLAIMED) onto the new definition in
// place, possibly placing it on this cell again. So the instance runs the
// definition of the row it claimed, whatever the assignment listed; and a
// start answered with a row on another definition than the instance runs
// (moved under it between claim and start, then started by this start,
// as any cell may start an UNCLAIMED row placed on it) is not the
// instance's row: the cell stops the instance and removes the row, as a
// rep does. Either way, kept, the row would be RUNNING on the new
// definition while the cell runs, reports and is told to stop the old.
func (c *Cell) claimAndStart(ctx context.Context, lrp *models.ActualLRP) {
	k := key{lrp.GetProcessGuid(), lrp.GetIndex()}
	defer func() {
		c.mu.Lock()
		delete(c.busy, k)
		c.mu.Unlock()
	}()
	instance := &Instance{
		Instance: client.Instance{ProcessGuid: k.processGuid, Index: k.index, InstanceGuid: newInstanceGuid()},
		State:    models.ActualLRP_CLAIMED,
	}
	c.beginCall(k)
	defer c.endCall(k)
	claimed, err := c.board.Claim(ctx, c.about(k, instance))
	if err != nil {
		if ctx.Err() == nil {
			c.cfg.Logf("simcell %s: claim %s/%d: %v", c.ID(), k.processGuid, k.index, err)
		}
		return
	}
	instance.DefinitionID = claimed.GetDefinitionId()
	if listed := lrp.GetDefinitionId(); listed != instance.DefinitionID {
		c.cfg.Logf("simcell %s: claimed %s/%d listed on %s, its row on %s: runs %s", c.ID(), k.processGuid, k.index, listed, instance.DefinitionID, instance.DefinitionID)
	}
	if c.cfg.StartByReport {
		instance.State = models.ActualLRP_RUNNING
		c.keep(k, instance)
		return
	}
	c.keep(k, instance)
	started, err := c.board.Start(ctx, c.about(k, instance), c.netInfo(k.index))
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		c.cfg.Logf("simcell %s: start %s/%d: %v", c.ID(), k.processGuid, k.index, err)
	}
	// A start the board refused because the row is not this instance's
	// (gone, taken away, placed elsewhere) leaves the instance nothing to
	// run for: it stops at once, as a rep stops an instance whose row it
	// finds taken. Any other failure (the board unreachable for a moment,
	// say) leaves it running, as a rep's process runs whether the board
	// heard of it or not: the next report says RUNNING, and the board
	// answers stop if the row is no longer this instance's.
	refused := models.IsErrorType(err, models.Error_InvalidStateTransition) || models.IsErrorType(err, models.Error_ResourceNotFound)
	c.mu.Lock()
	current, ok := c.running[k]
	ok = ok && current == instance
	moved := ok && err == nil && started.GetDefinitionId() != instance.DefinitionID
	switch {
	case ok && refused:
		delete(c.running, k)
	case moved:
		delete(c.running, k)
	case ok:
		current.State = models.ActualLRP_RUNNING
	}
	c.mu.Unlock()
	if moved {
		c.cfg.Logf("simcell %s: %s/%d started on %s, its row on %s: stopped, its row removed", c.ID(), k.processGuid, k.index, instance.DefinitionID, started.GetDefinitionId())
		c.removeRows(ctx, []stopped{{instance, models.ActualLRP_ORDINARY}})
	}
}

// beginCall waits until no report in flight names k, then keeps k out of
// reports until endCall; the board calls made meanwhile nest in it.
func (c *Cell) beginCall(k key) { c.board.Gate().BeginCall(k) }

func (c *Cell) endCall(k key) { c.board.Gate().EndCall(k) }

// about names the instance at k in a board call.
func (c *Cell) about(k key, instance *Instance) rep.CallAbout[key] {
	return rep.CallAbout[key]{
		Key:      k,
		Instance: instance.Instance,
		Logger:   c.logger.WithData(lager.Data{"process_guid": k.processGuid, "index": k.index, "instance_guid": instance.InstanceGuid}),
	}
}

// logfSink hands what rep.CellCalls logs to Config.Logf.
type logfSink struct {
	cellID string
	logf   func(format string, args ...any)
}

func (s logfSink) Log(f lager.LogFormat) {
	s.logf("simcell %s: %s %v", s.cellID, f.Message, f.Data)
}

func (c *Cell) keep(k key, instance *Instance) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running[k] = instance
}

// netInfo makes up an address for an instance: the cell's made-up host, a
// port per index.
func (c *Cell) netInfo(index int32) *models.NetInfo {
	return &models.NetInfo{
		Address: c.ID() + ".cells.test",
		Ports:   []*models.PortMapping{{ContainerPort: 8080, HostPort: uint32(61000 + index%4000)}},
	}
}

func newInstanceGuid() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
