package runner

import (
	"context"
	"os"
	"sync"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/corkboard/corkboard/analysis"
	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// Defaults of RunnerConfig (and convergence.DefaultLeaseTTL,
// convergence.DefaultRolloutInterval, which the planner uses too).
const (
	// DefaultInterval is how often a full pass runs.
	DefaultInterval = 30 * time.Second
	// DefaultOperationRetention is how long ended operations are kept
	// (beyond the newest DefaultKeepOperations of each LRP, kept anyway).
	DefaultOperationRetention = 7 * 24 * time.Hour
	DefaultKeepOperations     = 100
	// DefaultReceiptPruneInterval is how often the old commit receipts
	// are deleted: a small part of the time the store keeps one
	// (db/sqldb/commit.go), so that the table holds little more than that
	// time's writes whatever Interval is.
	DefaultReceiptPruneInterval = 5 * time.Second
)

// Pruning: a full pass deletes the ended operations past their retention
// in calls of pruneBatch, one after another, until a call finds fewer than
// pruneBatch or pruneBudget has gone by. So the table stays near what the
// writes of the last OperationRetention put in (plus the newest
// KeepOperations of each LRP) under any steady write rate the database
// deletes within pruneBudget every Interval; one call a pass, as before,
// kept up with 1,000 per 30 s (33 operations a second) and fell behind
// any busier board for good. A backlog (a retention shortened, a board
// down for weeks) shrinks a budget's worth per pass, never in one long
// statement.
const (
	pruneBatch  = 1000
	pruneBudget = 2 * time.Second
)

// pruneUntil calls prune with batch until a call deletes fewer than
// batch, fails, or budget has gone by since the first, and returns how
// many it deleted in all. The first call is always made.
func pruneUntil(ctx context.Context, prune func(ctx context.Context, limit int) (int, error), batch int, budget time.Duration) (int, error) {
	began := time.Now()
	total := 0
	for {
		n, err := prune(ctx, batch)
		total += n
		if err != nil || n < batch || ctx.Err() != nil || time.Since(began) >= budget {
			return total, err
		}
	}
}

// maxTargeted is how many LRPs a targeted pass names at most. A burst of
// triggers beyond it (a deploy of thousands of LRPs) gets a full pass
// instead, which costs about the same and keeps the query small.
const maxTargeted = 1000

// maxLoggedReasons bounds the per-write debug lines of one pass.
const maxLoggedReasons = 1000

// Store is what the runner reads and writes.
type Store interface {
	db.ConvergenceDB
	db.ConvergenceFeedDB
	db.LeaseDB
	PruneOperations(ctx context.Context, before time.Time, keepPerLRP, limit int) (int, error)
	// PruneCommitReceipts deletes the receipts of commits old enough that
	// no board can still be settling one (db/sqldb/commit.go).
	PruneCommitReceipts(ctx context.Context) (int64, error)
	// RolloutStatus and RecordVerdict read what a verdict judges and
	// store it (analysis.go).
	RolloutStatus(ctx context.Context, processGuid string) (*models.RolloutStatus, error)
	RecordVerdict(ctx context.Context, processGuid, definitionID string, verdict *models.AnalysisVerdict) error
	// FreezeWindows lists the freeze windows, which every pass reads whole
	// (a handful of rows), so the mirror keeps no copy of them.
	FreezeWindows(ctx context.Context) ([]*models.FreezeWindow, time.Time, error)
	// BudgetGroups lists the budget groups, which every pass reads whole
	// (a handful of rows), as FreezeWindows.
	BudgetGroups(ctx context.Context) ([]*models.BudgetGroup, error)
	// Crashes lists the crashes of the last window, every LRP's, which
	// every pass reads for the planner's crash memory; PruneCrashes
	// deletes those older than convergence.MaxCrashWindow.
	Crashes(ctx context.Context, window time.Duration) ([]convergence.CrashRow, error)
	PruneCrashes(ctx context.Context) (int64, error)
	// QuarantineCell quarantines a cell whose crashes spike
	// (Plan.Quarantine; db.CellDB).
	QuarantineCell(ctx context.Context, cellID, reason, by string, clearedAt int64) (bool, error)
	// DrainStatus says which LRPs' disruption budgets hold a draining
	// cell's evacuations (db.CellDB), for corkboard_blocked's drain kind.
	DrainStatus(ctx context.Context, cellID string) (*models.DrainStatus, error)
}

// RunnerConfig configures a Runner; zero values take the defaults.
type RunnerConfig struct {
	// Owner names this board in the lease. It must differ between boards
	// sharing a database.
	Owner string
	// Interval between full passes (DefaultInterval).
	Interval time.Duration
	// LeaseTTL is how long the lease lasts unless renewed
	// (convergence.DefaultLeaseTTL).
	LeaseTTL time.Duration
	// RolloutInterval is how often LRPs with a rollout under way get a
	// targeted pass (convergence.DefaultRolloutInterval).
	RolloutInterval time.Duration
	// Planner configures Compute (DefaultConfig when zero).
	Planner convergence.Config
	// Now is the planner's clock (time.Now). Rows carry times from the
	// store's clock, so the two must agree; a board sharing its database
	// with others gives both the database's time (internal/dbclock).
	// Wake-ups are in it too.
	Now func() time.Time
	// OperationRetention is how long ended operations are kept
	// (DefaultOperationRetention); each LRP keeps its newest
	// KeepOperations (DefaultKeepOperations) whatever their age. Every full
	// pass deletes the rest, for up to pruneBudget: the table holds about
	// what is written in OperationRetention.
	OperationRetention time.Duration
	KeepOperations     int
	// ReceiptPruneInterval is how often the converging board deletes old
	// commit receipts (DefaultReceiptPruneInterval).
	ReceiptPruneInterval time.Duration
	// PresenceGrace, when set, says each pass what the board saw of its
	// last database outage (see PresenceGrace).
	PresenceGrace func() convergence.PresenceGrace
	// CheckFailures, when set, gives each pass the failing health checks
	// the board's signals hold (Snapshot.CheckFailures): the board's
	// memory of its cells' health reports, not the database's.
	CheckFailures func() []models.CheckFailure
	// FullReadInterval is how often passes read every row again rather
	// than what the event log says changed (DefaultFullReadInterval); see
	// Mirror.
	FullReadInterval time.Duration
	// Analyst judges the rollouts whose updates asked for analysis
	// (analysis.go); nil: none is judged.
	Analyst *analysis.Analyst
	// TriggerSpacing is the least time from the end of one triggered pass
	// to the start of the next (0: none); see triggeredPassWait.
	TriggerSpacing time.Duration
}

// Runner converges the board: while it owns the convergence lease it
// runs a pass (bring its Mirror of the snapshot up to date, Compute a
// plan, apply it) every Interval,
// again when the previous plan's NextWake comes, and for particular LRPs
// as soon as Trigger names them. Passes run one at a time. The store emits
// the events of every write it applies, after commit.
//
// Without the lease a runner only keeps trying to take it: several boards
// may share a database, and one converges. Losing the lease (another
// board took it, or it could not be renewed in time) cancels the pass in
// flight; its writes are conditional, so whatever it did apply is safe.
//
// Runner is an ifrit.Runner; it stops on any signal and then hands the
// lease back.
type Runner struct {
	logger  lager.Logger
	store   Store
	cfg     RunnerConfig
	metrics *metrics
	lease   *leaseKeeper
	// mirror is the snapshot kept between passes; only the converging
	// goroutine touches it.
	mirror *Mirror

	triggerMu sync.Mutex
	// pending are the LRPs triggered since the last pass that covered them.
	pending map[string]struct{}
	// wantFull is set when more LRPs were triggered than a targeted pass
	// names.
	wantFull  bool
	triggered chan struct{}

	// rolling are the LRPs whose rollout the last pass that covered them
	// found under way (see rolloutUnderway), or whose instances it found
	// being replaced or moved (Plan.Underway); only the converging
	// goroutine touches it.
	rolling map[string]struct{}

	// draining are the cells the latest full pass saw draining; only the
	// converging goroutine touches it.
	draining []string

	// judging are the LRPs a verdict is being made of (analysis.go).
	judgingMu sync.Mutex
	judging   map[string]bool
}

// NewRunner returns a runner over store. Its metrics are registered on
// registry (none when nil).
func NewRunner(logger lager.Logger, store Store, registry prometheus.Registerer, cfg RunnerConfig) *Runner {
	cfg = cfg.withDefaults()
	r := &Runner{
		logger:    logger.Session("convergence", lager.Data{"owner": cfg.Owner}),
		store:     store,
		cfg:       cfg,
		metrics:   newMetrics(registry),
		pending:   map[string]struct{}{},
		triggered: make(chan struct{}, 1),
		rolling:   map[string]struct{}{},
		judging:   map[string]bool{},
	}
	r.mirror = NewMirror(store, cfg.Now)
	r.mirror.FullReadInterval = cfg.FullReadInterval
	r.mirror.StartsLimited = cfg.Planner.MaxStartsPerCellPerSecond > 0
	r.lease = newLeaseKeeper(r.logger, store, cfg.Owner, cfg.LeaseTTL, r.leaseOwned)
	return r
}

// withDefaults fills in the zero values of cfg.
func (cfg RunnerConfig) withDefaults() RunnerConfig {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = convergence.DefaultLeaseTTL
	}
	if cfg.RolloutInterval <= 0 {
		cfg.RolloutInterval = convergence.DefaultRolloutInterval
	}
	if cfg.Planner == (convergence.Config{}) {
		cfg.Planner = convergence.DefaultConfig()
	}
	// This board carries the operations it converges, under leases as
	// long as its convergence lease: when it dies, both run out together
	// and the next owner adopts them.
	if cfg.Planner.Board == "" {
		cfg.Planner.Board = cfg.Owner
	}
	cfg.Planner.OperationLeaseTTL = cfg.LeaseTTL
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.OperationRetention <= 0 {
		cfg.OperationRetention = DefaultOperationRetention
	}
	if cfg.KeepOperations <= 0 {
		cfg.KeepOperations = DefaultKeepOperations
	}
	if cfg.ReceiptPruneInterval <= 0 {
		cfg.ReceiptPruneInterval = DefaultReceiptPruneInterval
	}
	return cfg
}

// Trigger asks for a pass over one LRP as soon as possible, e.g. after it
// was desired, updated or removed, or one of its instances crashed.
// Triggers that arrive while a pass runs are coalesced into the next one.
// It never blocks. A board that does not own the lease keeps the
// triggers for when it takes the lease over, whose first pass is a full
// one anyway; the owner's periodic pass covers the LRP meanwhile.
func (r *Runner) Trigger(processGuid string) {
	r.triggerMu.Lock()
	if !r.wantFull {
		r.pending[processGuid] = struct{}{}
		if len(r.pending) > maxTargeted {
			r.wantFull = true
			clear(r.pending)
		}
	}
	r.triggerMu.Unlock()
	select {
	case r.triggered <- struct{}{}:
	default:
	}
}

// takeTriggered returns the LRPs triggered since the last call, or full
// when a full pass is wanted instead.
func (r *Runner) takeTriggered() (guids []string, full bool) {
	r.triggerMu.Lock()
	defer r.triggerMu.Unlock()
	if r.wantFull {
		r.wantFull = false
		return nil, true
	}
	guids = make([]string, 0, len(r.pending))
	for guid := range r.pending {
		guids = append(guids, guid)
	}
	clear(r.pending)
	return guids, false
}

// Run is the ifrit.Runner: ready at once, converging whenever it owns the
// lease, until a signal.
//
// On a signal it stops converging first, and a board that owns the lease
// gives up its operations' leases (handOver) before the lease keeper hands
// the convergence lease back: the board that takes over then carries the
// operations at once.
func (r *Runner) Run(signals <-chan os.Signal, ready chan<- struct{}) error {
	keeping, stopKeeping := context.WithCancel(context.Background())
	converging, stopConverging := context.WithCancel(context.Background())
	kept, converged := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(kept)
		r.lease.keep(keeping)
	}()
	go func() {
		defer close(converged)
		r.converge(converging)
	}()
	r.logger.Info("started", lager.Data{"interval": r.cfg.Interval.String(), "lease_ttl": r.cfg.LeaseTTL.String()})
	close(ready)

	sig := <-signals
	r.logger.Info("stopping", lager.Data{"signal": sig.String()})
	stopConverging()
	<-converged
	stopKeeping()
	<-kept
	r.logger.Info("stopped")
	return nil
}

// converge runs passes during each tenure of the lease, until ctx ends;
// then, during a tenure, it hands the board's operations over.
func (r *Runner) converge(ctx context.Context) {
	for {
		tenure := r.lease.waitForTenure(ctx)
		if tenure == nil {
			return
		}
		r.convergeDuring(ctx, tenure)
		if ctx.Err() != nil {
			r.handOver(tenure)
			return
		}
	}
}

// handOver gives up the leases of the operations this board carries
// (convergence.ReleaseLeases), as the mirror last saw them, while the
// tenure still fences its writes. A write that fails, or finds its
// operation moved on, leaves that lease to expire as it would have.
func (r *Runner) handOver(tenure context.Context) {
	if tenure.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(tenure, r.cfg.LeaseTTL/3)
	defer cancel()
	snapshot, err := r.mirror.Snapshot(ctx, nil)
	if err != nil {
		r.logger.Error("hand-over-failed", err)
		return
	}
	writes := convergence.ConvergenceWrites{Operations: convergence.ReleaseLeases(snapshot.Operations, r.cfg.Planner.Board)}
	if writes.Empty() {
		return
	}
	result, err := r.store.ApplyConvergence(ctx, &writes)
	r.mirror.Applied(&writes, result, err)
	if err != nil {
		r.logger.Error("hand-over-failed", err)
		return
	}
	r.logger.Info("handed-over", lager.Data{"operations": len(writes.Operations)})
}

// convergeDuring runs passes until the tenure or ctx ends: a full pass at once
// (the board may have just taken over), then one every interval and at
// each plan's NextWake, and targeted passes as triggers come, spaced by
// TriggerSpacing (triggeredPassWait). It deletes
// old commit receipts every ReceiptPruneInterval.
func (r *Runner) convergeDuring(ctx, tenure context.Context) {
	// A stop ends the pass under way, as the tenure's end does.
	tenure, cancel := context.WithCancel(tenure)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	// A new owner starts from a full pass, which covers every trigger so
	// far, on everything read again: another board converged meanwhile.
	r.takeTriggered()
	r.mirror.Reset()
	s := newSchedule(r.cfg.Interval, r.cfg.Now)
	defer s.stop()
	rollouts := time.NewTimer(r.cfg.RolloutInterval)
	defer rollouts.Stop()
	receipts := time.NewTicker(r.cfg.ReceiptPruneInterval)
	defer receipts.Stop()
	r.fullPass(tenure, s)
	// lastTriggered is when the last triggered pass ended; turn fires when
	// a triggered pass waiting for it may start (triggeredPassWait), nil
	// while none waits.
	var lastTriggered time.Time
	var turn <-chan time.Time
	for {
		select {
		case <-tenure.Done():
			return
		case <-receipts.C:
			r.pruneCommitReceipts(tenure)
		case <-rollouts.C:
			rollouts.Reset(r.cfg.RolloutInterval)
			if guids := r.rollingGuids(); len(guids) > 0 {
				r.targetedPass(tenure, s, guids)
			}
		case <-s.full.C:
			r.takeTriggered()
			r.fullPass(tenure, s)
		case <-s.wake.C:
			s.woke()
			r.takeTriggered()
			r.fullPass(tenure, s)
		case <-r.triggered:
			if wait := triggeredPassWait(lastTriggered, time.Now(), r.cfg.TriggerSpacing); wait > 0 {
				// The LRPs stay pending and more may join them; the
				// pass covers them all when its turn comes.
				if turn == nil {
					turn = time.After(wait)
				}
				continue
			}
			lastTriggered = r.triggeredPass(tenure, s, lastTriggered)
		case <-turn:
			turn = nil
			lastTriggered = r.triggeredPass(tenure, s, lastTriggered)
		}
	}
}

// triggeredPass runs a pass over the LRPs triggered since the last one
// and returns when it ended; with none pending (a full pass covered them
// meanwhile) it runs none and returns last, when the last one ended.
func (r *Runner) triggeredPass(tenure context.Context, s *schedule, last time.Time) time.Time {
	guids, full := r.takeTriggered()
	switch {
	case full:
		r.fullPass(tenure, s)
	case len(guids) > 0:
		r.targetedPass(tenure, s, guids)
	default:
		return last
	}
	return time.Now()
}

// triggeredPassWait is how long a triggered pass waits before it starts:
// until spacing after the last triggered pass ended (lastEnded), or not at
// all. Under a steady stream of triggers, such as a deploy of thousands of
// LRPs, passes back to back would each cover the LRPs triggered while the
// one before ran, a few milliseconds' worth; spaced, each covers spacing's
// worth, and what a pass costs whatever its size (reading the cells and
// the event log, a write transaction and its commit) is paid fewer times.
// On SQLite, whose one writer the passes share with every API write, 50 ms
// gave desires 15% more throughput (bbs-load peer, docs/perf-writes.md).
// A trigger after a quiet spell runs at once.
//
// Worked example, spacing 50 ms: a pass ends at 10.000 s. A trigger at
// 10.010 waits 40 ms, and triggers at 10.020 and 10.045 join it: one pass
// at 10.050 covers the three. It ends at 10.070; a trigger at 10.200 runs
// at once.
func triggeredPassWait(lastEnded, now time.Time, spacing time.Duration) time.Duration {
	return max(0, lastEnded.Add(spacing).Sub(now))
}

func (r *Runner) fullPass(ctx context.Context, s *schedule) {
	// On the planner's clock, as the plan's NextWake is.
	started := r.cfg.Now()
	s.full.Reset(r.cfg.Interval)
	plan, err := r.pass(ctx, passFull, nil)
	if err != nil {
		return
	}
	r.metrics.counts.set(&plan.Counts)
	r.metrics.counts.setAutoscaled(plan.Autoscaled, nil)
	r.metrics.counts.setCrashSpikes(plan.CrashSpikes)
	r.metrics.counts.setDrainsBlocked(r.drainsBlocked(ctx))
	// A full plan knows every wake-up there is.
	s.setWake(plan.NextWake, started)
	r.pruneOperations(ctx)
	r.pruneCrashes(ctx)
}

// drainsBlocked counts, by reason, the LRPs whose evacuation from a
// draining cell waits (one per cell and LRP, as the cell's drain status
// names them), over the cells the latest full pass saw draining. A cell
// whose status cannot be read is left out and logged.
func (r *Runner) drainsBlocked(ctx context.Context) map[string]int {
	counts := map[string]int{}
	for _, cellID := range r.draining {
		status, err := r.store.DrainStatus(ctx, cellID)
		if err != nil {
			if ctx.Err() == nil {
				r.logger.Error("drain-status-failed", err, lager.Data{"cell_id": cellID})
			}
			continue
		}
		for _, b := range status.GetBlocked() {
			counts[b.GetBlockedBy().GetReason()]++
		}
	}
	return counts
}

// pruneCrashes deletes crashes no window remembers; a failure is logged
// and left for the next full pass.
func (r *Runner) pruneCrashes(ctx context.Context) {
	if _, err := r.store.PruneCrashes(ctx); err != nil && ctx.Err() == nil {
		r.logger.Error("prune-crashes-failed", err)
	}
}

// pruneCommitReceipts deletes old commit receipts; a failure is logged and
// left for the next prune, ReceiptPruneInterval later.
func (r *Runner) pruneCommitReceipts(ctx context.Context) {
	if _, err := r.store.PruneCommitReceipts(ctx); err != nil && ctx.Err() == nil {
		r.logger.Error("prune-commit-receipts-failed", err)
	}
}

// pruneOperations deletes the ended operations past their retention, for
// up to pruneBudget. A failure is logged and left for the next full pass.
func (r *Runner) pruneOperations(ctx context.Context) {
	before := r.cfg.Now().Add(-r.cfg.OperationRetention)
	n, err := pruneUntil(ctx, func(ctx context.Context, limit int) (int, error) {
		return r.store.PruneOperations(ctx, before, r.cfg.KeepOperations, limit)
	}, pruneBatch, pruneBudget)
	switch {
	case err != nil && ctx.Err() == nil:
		r.logger.Error("prune-operations-failed", err)
	case n > 0:
		r.logger.Info("pruned-operations", lager.Data{"deleted": n, "ended_before": before.UTC().Format(time.RFC3339)})
	}
}

func (r *Runner) targetedPass(ctx context.Context, s *schedule, guids []string) {
	started := r.cfg.Now()
	plan, err := r.pass(ctx, passTargeted, guids)
	if err != nil {
		return
	}
	r.metrics.counts.setAutoscaled(plan.Autoscaled, guids)
	s.wakeNoLaterThan(plan.NextWake, started)
}

// pass loads the snapshot of guids (all LRPs when nil), computes the plan
// and applies it.
func (r *Runner) pass(ctx context.Context, kind string, guids []string) (*convergence.Plan, error) {
	started := time.Now()
	data := lager.Data{"pass": kind}
	if guids != nil {
		data["lrps"] = len(guids)
		if len(guids) <= 10 {
			data["process_guids"] = guids
		}
	}
	logger := r.logger.Session("pass", data)

	fullReads, lrpsRead := r.mirror.FullReads, r.mirror.LRPsRead
	snapshot, err := r.mirror.Snapshot(ctx, guids)
	if err != nil {
		return nil, r.failed(ctx, logger, kind, "load-snapshot", err)
	}
	if snapshot.FreezeWindows, _, err = r.store.FreezeWindows(ctx); err != nil {
		return nil, r.failed(ctx, logger, kind, "load-freeze-windows", err)
	}
	if snapshot.BudgetGroups, err = r.store.BudgetGroups(ctx); err != nil {
		return nil, r.failed(ctx, logger, kind, "load-budget-groups", err)
	}
	if snapshot.Crashes, err = r.store.Crashes(ctx, r.cfg.Planner.CrashMemory.Window); err != nil {
		return nil, r.failed(ctx, logger, kind, "load-crashes", err)
	}
	if r.cfg.CheckFailures != nil {
		snapshot.CheckFailures = r.cfg.CheckFailures()
	}
	r.noteRollouts(guids, snapshot)
	if guids == nil {
		r.draining = r.draining[:0]
		for _, c := range snapshot.Cells {
			if c.Draining {
				r.draining = append(r.draining, c.CellID)
			}
		}
	}
	r.judgeDue(ctx, snapshot)
	loaded := time.Now()
	planner := r.cfg.Planner
	if r.cfg.PresenceGrace != nil {
		planner.PresenceGrace = r.cfg.PresenceGrace()
	}
	plan := convergence.Compute(snapshot, r.cfg.Now(), planner)
	for _, guid := range plan.Underway {
		r.rolling[guid] = struct{}{}
	}
	computed := time.Now()

	result := &convergence.ConvergenceResult{}
	if !plan.Writes.Empty() {
		result, err = r.store.ApplyConvergence(ctx, &plan.Writes)
		r.mirror.Applied(&plan.Writes, result, err)
		if err != nil {
			return nil, r.failed(ctx, logger, kind, "apply", err)
		}
	}
	finished := time.Now()

	elapsed := finished.Sub(started)
	r.metrics.runs.WithLabelValues(kind).Inc()
	r.metrics.duration.WithLabelValues(kind).Observe(elapsed.Seconds())
	r.metrics.applied.Add(float64(result.Applied))
	r.metrics.skipped.Add(float64(result.Skipped))

	logger.Info("done", lager.Data{
		"duration_ms": milliseconds(elapsed),
		"load_ms":     milliseconds(loaded.Sub(started)),
		"compute_ms":  milliseconds(computed.Sub(loaded)),
		"apply_ms":    milliseconds(finished.Sub(computed)),
		"rows":        len(snapshot.Actual),
		"read_all":    r.mirror.FullReads > fullReads,
		"lrps_read":   r.mirror.LRPsRead - lrpsRead,
		"counts":      countsData(&plan.Counts),
		"writes":      writeCounts(&plan.Writes),
		"applied":     result.Applied,
		"skipped":     result.Skipped,
		"next_wake":   wakeString(plan.NextWake),
	})
	logReasons(logger, plan)
	for _, spike := range plan.CrashSpikes {
		logger.Info("cell-crash-spike", lager.Data{
			"cell_id": spike.CellID, "crashes": spike.Crashes, "median": spike.Median,
			"window": r.cfg.Planner.CrashMemory.Window.String(),
		})
	}
	r.quarantine(ctx, logger, plan.Quarantine)
	return plan, nil
}

// QuarantinedBy is who a quarantine the board decides on is recorded as
// (cells.quarantined_by).
const QuarantinedBy = "board (quarantine_on_crash_spike)"

// quarantine writes the plan's quarantines, each only while the cell's
// last clear is still the one the plan counted from. A failure is logged
// and left to the next pass, which decides again.
func (r *Runner) quarantine(ctx context.Context, logger lager.Logger, cells []convergence.CellQuarantine) {
	for _, q := range cells {
		changed, err := r.store.QuarantineCell(ctx, q.CellID, q.Reason, QuarantinedBy, q.ClearedAt)
		if err != nil {
			logger.Error("quarantine-cell-failed", err, lager.Data{"cell_id": q.CellID})
			continue
		}
		if changed {
			logger.Info("cell-quarantined", lager.Data{"cell_id": q.CellID, "reason": q.Reason})
		}
	}
}

// noteRollouts updates the set of LRPs with a rollout under way from a
// snapshot of guids (every LRP when nil).
func (r *Runner) noteRollouts(guids []string, snapshot *convergence.Snapshot) {
	if guids == nil {
		clear(r.rolling)
	}
	for _, guid := range guids {
		delete(r.rolling, guid)
	}
	for i := range snapshot.Rollouts {
		if rolloutUnderway(&snapshot.Rollouts[i]) {
			r.rolling[snapshot.Rollouts[i].ProcessGuid] = struct{}{}
		}
	}
}

// rolloutUnderway reports whether a rollout record still has steps to
// take: progressing, reverting, or (state NONE) a removed LRP's
// definitions to clean up. A FAILED rollout waits for an operator, and the
// full pass keeps an eye on it.
func rolloutUnderway(rec *convergence.RolloutRow) bool {
	switch rec.State {
	case models.RolloutStatus_PROGRESSING, models.RolloutStatus_NONE:
		return true
	case models.RolloutStatus_REVERTED:
		return rec.FinishedAt == 0
	}
	return false
}

// rollingGuids lists the LRPs with a rollout under way, at most
// maxTargeted of them (the full pass covers the rest).
func (r *Runner) rollingGuids() []string {
	guids := make([]string, 0, min(len(r.rolling), maxTargeted))
	for guid := range r.rolling {
		if len(guids) == maxTargeted {
			break
		}
		guids = append(guids, guid)
	}
	return guids
}

// failed counts and logs a pass that did not complete. A pass cancelled
// because the lease was lost, or the runner is stopping, is no failure.
func (r *Runner) failed(ctx context.Context, logger lager.Logger, kind, step string, err error) error {
	if ctx.Err() != nil {
		logger.Info("abandoned", lager.Data{"step": step, "reason": context.Cause(ctx).Error()})
		return err
	}
	r.metrics.failures.WithLabelValues(kind).Inc()
	logger.Error("failed", err, lager.Data{"step": step})
	return err
}

// leaseOwned is told when a tenure begins and ends.
func (r *Runner) leaseOwned(owned bool) {
	r.metrics.counts.setOwned(owned)
	if owned {
		r.metrics.leaseOwned.Set(1)
		return
	}
	r.metrics.leaseOwned.Set(0)
}

func logReasons(logger lager.Logger, plan *convergence.Plan) {
	logged := 0
	log := func(write string, reasons []string) {
		for _, reason := range reasons {
			if logged == maxLoggedReasons {
				return
			}
			logged++
			logger.Debug("write", lager.Data{"write": write, "reason": reason})
		}
	}
	log("delete", plan.Reasons.Delete)
	log("promote", plan.Reasons.Promote)
	log("mark-suspect", plan.Reasons.MarkSuspect)
	log("create", plan.Reasons.Create)
	log("restart", plan.Reasons.Restart)
	log("unassign", plan.Reasons.Unassign)
	log("place", plan.Reasons.Place)
	log("placement-failed", plan.Reasons.PlacementFailed)
}

func countsData(c *convergence.Counts) map[string]int {
	return map[string]int{
		"desired":       c.Desired,
		"running":       c.Running,
		"claimed":       c.Claimed,
		"unclaimed":     c.Unclaimed,
		"crashed":       c.Crashed,
		"missing":       c.Missing,
		"extra":         c.Extra,
		"suspect":       c.Suspect,
		"gave_up":       c.GaveUp,
		"unplaced":      c.Unplaced,
		"present_cells": c.PresentCells,
		"suspect_cells": c.SuspectCells,
	}
}

func writeCounts(w *convergence.ConvergenceWrites) map[string]int {
	return map[string]int{
		"delete":             len(w.Delete),
		"promote":            len(w.Promote),
		"mark_suspect":       len(w.MarkSuspect),
		"retire":             len(w.Retire),
		"request_stop":       len(w.RequestStop),
		"create":             len(w.Create),
		"restart":            len(w.Restart),
		"redefine":           len(w.Redefine),
		"unassign":           len(w.Unassign),
		"place":              len(w.Place),
		"placement_failed":   len(w.PlacementFailed),
		"rollouts":           len(w.Rollouts),
		"delete_definitions": len(w.DeleteDefinitions),
	}
}

func milliseconds(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

func wakeString(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339Nano)
}
