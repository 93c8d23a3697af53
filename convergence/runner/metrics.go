package runner

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// Pass kinds, the value of the "pass" label.
const (
	passFull     = "full"
	passTargeted = "targeted"
)

// metrics are the runner's Prometheus metrics. The names take Diego's BBS
// metrics as stems, which each help text names.
type metrics struct {
	runs     *prometheus.CounterVec
	failures *prometheus.CounterVec
	duration *prometheus.HistogramVec
	applied  prometheus.Counter
	skipped  prometheus.Counter
	// leaseOwned is published as corkboard_convergence_lease_held: a
	// metric's name does not change, "held" there means owned.
	leaseOwned prometheus.Gauge
	counts     *countGauges
	// verdicts counts the rollout verdicts this board stored (analysis.go).
	verdicts *prometheus.CounterVec
}

func newMetrics(registry prometheus.Registerer) *metrics {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corkboard_convergence_lrp_runs_total",
			Help: "Convergence passes completed, by pass (full or targeted at a few LRPs). Diego: ConvergenceLRPRuns.",
		}, []string{"pass"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corkboard_convergence_lrp_failures_total",
			Help: "Convergence passes that failed to load or apply, by pass; the next pass tries again.",
		}, []string{"pass"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "corkboard_convergence_lrp_duration_seconds",
			Help:    "Duration of convergence passes, load to last write, by pass. Diego: ConvergenceLRPDuration.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}, []string{"pass"}),
		applied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corkboard_convergence_writes_applied_total",
			Help: "Row writes of convergence plans that were applied.",
		}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "corkboard_convergence_writes_skipped_total",
			Help: "Row writes of convergence plans skipped because the row changed after the pass read it; the next pass looks again.",
		}),
		leaseOwned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "corkboard_convergence_lease_held",
			Help: "1 while this board owns the convergence lease and converges, 0 otherwise.",
		}),
		counts: &countGauges{},
		verdicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "corkboard_analysis_verdicts_total",
			Help: "Verdicts of rollouts' analysis this board made and stored, by outcome (PASS, MARGINAL, FAIL).",
		}, []string{"outcome"}),
	}
	for _, outcome := range []models.AnalysisOutcome{models.AnalysisOutcome_PASS, models.AnalysisOutcome_MARGINAL, models.AnalysisOutcome_FAIL} {
		m.verdicts.WithLabelValues(outcome.String())
	}
	// Passes of both kinds show up at 0 before the first one runs.
	for _, pass := range []string{passFull, passTargeted} {
		m.runs.WithLabelValues(pass)
		m.failures.WithLabelValues(pass)
	}
	if registry != nil {
		registry.MustRegister(m.runs, m.failures, m.duration, m.applied, m.skipped, m.leaseOwned, m.counts, m.verdicts)
	}
	return m
}

// countGauges publishes the Counts of the latest full pass, and only
// while this board owns the lease: a board that does not converge has no
// current counts, and two boards must not both report the same
// instances.
type countGauges struct {
	mu     sync.Mutex
	owned  bool
	counts *convergence.Counts
	// autoscaled are the figures of the autoscaled LRPs, by process guid,
	// as of the latest pass that covered each.
	autoscaled map[string]convergence.AutoscaleGauge
	// crashSpikes are the cells whose crashes spiked in the latest full
	// pass.
	crashSpikes []convergence.CellCrashSpike
	// drainsBlocked counts the LRPs whose evacuations wait, by reason, as
	// of the latest full pass (Runner.drainsBlocked).
	drainsBlocked map[string]int
}

type countGauge struct {
	desc  *prometheus.Desc
	value func(*convergence.Counts) int
}

func gauge(name, help string, value func(*convergence.Counts) int) countGauge {
	return countGauge{desc: prometheus.NewDesc(name, help, nil, nil), value: value}
}

var countGaugeList = []countGauge{
	gauge("corkboard_lrps_desired", "Instances desired, summed over every DesiredLRP, as of the latest full convergence pass. Diego: LRPsDesired.",
		func(c *convergence.Counts) int { return c.Desired }),
	gauge("corkboard_lrps_running", "ORDINARY instances RUNNING, as of the latest full convergence pass. Diego: LRPsRunning.",
		func(c *convergence.Counts) int { return c.Running }),
	gauge("corkboard_lrps_claimed", "ORDINARY instances CLAIMED, as of the latest full convergence pass. Diego: LRPsClaimed.",
		func(c *convergence.Counts) int { return c.Claimed }),
	gauge("corkboard_lrps_unclaimed", "ORDINARY instances UNCLAIMED, as of the latest full convergence pass. Diego: LRPsUnclaimed.",
		func(c *convergence.Counts) int { return c.Unclaimed }),
	gauge("corkboard_lrps_crashed", "ORDINARY instances CRASHED, as of the latest full convergence pass. Diego: CrashedActualLRPs.",
		func(c *convergence.Counts) int { return c.Crashed }),
	gauge("corkboard_lrps_missing", "Desired instances without an ORDINARY row, as of the latest full convergence pass. Diego: LRPsMissing.",
		func(c *convergence.Counts) int { return c.Missing }),
	gauge("corkboard_lrps_extra", "ORDINARY instances beyond their LRP's instance count or of removed LRPs, as of the latest full convergence pass. Diego: LRPsExtra.",
		func(c *convergence.Counts) int { return c.Extra }),
	gauge("corkboard_lrps_suspect", "SUSPECT instances (their cell vanished), as of the latest full convergence pass. Diego: SuspectRunningActualLRPs plus SuspectClaimedActualLRPs.",
		func(c *convergence.Counts) int { return c.Suspect }),
	gauge("corkboard_lrps_crashed_given_up", "CRASHED instances the crash policy no longer restarts, as of the latest full convergence pass. Diego has no such metric.",
		func(c *convergence.Counts) int { return c.GaveUp }),
	gauge("corkboard_lrps_unplaced", "Instances the latest full convergence pass could place on no cell. Diego has no such metric.",
		func(c *convergence.Counts) int { return c.Unplaced }),
	gauge("corkboard_present_cells", "Cells whose presence has not expired, as of the latest full convergence pass. Diego: PresentCells.",
		func(c *convergence.Counts) int { return c.PresentCells }),
	gauge("corkboard_suspect_cells", "Expired cells still named by CLAIMED or RUNNING instances, as of the latest full convergence pass. Diego: SuspectCells.",
		func(c *convergence.Counts) int { return c.SuspectCells }),
	gauge("corkboard_rollouts_under_way", "Rollouts PROGRESSING, HOLDING or still reverting, as of the latest full convergence pass. Diego has no such metric.",
		func(c *convergence.Counts) int { return c.RolloutsUnderWay }),
	gauge("corkboard_rollouts_failed", "Rollouts FAILED (stopped by the progress deadline or a verdict) and waiting for a rollback or a new definition, as of the latest full convergence pass. Diego has no such metric.",
		func(c *convergence.Counts) int { return c.RolloutsFailed }),
	gauge("corkboard_rollouts_blocked_too_long", "Rollouts blocked by one cause (their blocked_by) for blocked_alert_after or longer, as of the latest full convergence pass: what an alert watches. Diego has no such metric.",
		func(c *convergence.Counts) int { return c.RolloutsBlockedTooLong }),
	gauge("corkboard_rollouts_held", "Rollouts HELD (stopped by the progress deadline or a verdict under on_failure hold) and waiting for a resume, rollback or abort, as of the latest full convergence pass. Diego has no such metric.",
		func(c *convergence.Counts) int { return c.RolloutsHeld }),
}

// set publishes counts while the lease is owned; a pass that finishes
// just after the lease was lost publishes nothing.
func (g *countGauges) set(counts *convergence.Counts) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.owned {
		g.counts = counts
	}
}

// Per-LRP autoscaler gauges, labelled by process guid.
var (
	autoscaleOccupiedDesc = prometheus.NewDesc("corkboard_autoscaler_occupied_instances",
		"Indices of an autoscaled LRP with an occupied instance, as of its latest convergence pass.", []string{"process_guid"}, nil)
	autoscaleWantedDesc = prometheus.NewDesc("corkboard_autoscaler_wanted_instances",
		"Instances an autoscaled LRP's policy wants, clamped to [min, max], as of its latest convergence pass.", []string{"process_guid"}, nil)
	autoscaleCurrentDesc = prometheus.NewDesc("corkboard_autoscaler_current_instances",
		"An autoscaled LRP's instance count after its latest convergence pass (above wanted while the scale-down window keeps it).", []string{"process_guid"}, nil)
	autoscaleMaxDesc = prometheus.NewDesc("corkboard_autoscaler_max_instances",
		"An autoscaled LRP's max; no series while its max is -1 (no limit).", []string{"process_guid"}, nil)
)

// blockedDesc counts what does not move, by kind (rollout, operation,
// drain) and reason (models.BlockedReasons): every pair has a series, 0
// when nothing is so blocked.
var blockedDesc = prometheus.NewDesc("corkboard_blocked",
	"Rollouts under way, operations whose rollout or validation is under way, and LRPs whose evacuation from a draining cell waits, that are blocked (their blocked_by), by kind and reason, as of the latest full convergence pass. Diego has no such metric.",
	[]string{"kind", "reason"}, nil)

// crashSpikeDesc is a cell whose crashes spike (convergence.CrashMemory):
// one series per such cell, its value the crashes within the window.
var crashSpikeDesc = prometheus.NewDesc("corkboard_cell_crash_spike",
	"Crashes within the crash memory's window on a cell whose crashes spike (at least spike_min and spike_factor times the median of the cells), as of the latest full convergence pass; no series for other cells.",
	[]string{"cell"}, nil)

// setCrashSpikes publishes the crash spikes of a full pass, replacing the
// previous ones.
func (g *countGauges) setCrashSpikes(spikes []convergence.CellCrashSpike) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.owned {
		g.crashSpikes = spikes
	}
}

// setDrainsBlocked publishes the drains' blocked LRPs of a full pass,
// replacing the previous ones.
func (g *countGauges) setDrainsBlocked(blocked map[string]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.owned {
		g.drainsBlocked = blocked
	}
}

// setAutoscaled publishes the autoscaler figures of a pass over guids (nil:
// a full pass, which replaces them all); an LRP of guids without figures is
// no longer autoscaled.
func (g *countGauges) setAutoscaled(gauges []convergence.AutoscaleGauge, guids []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.owned {
		return
	}
	if guids == nil || g.autoscaled == nil {
		g.autoscaled = make(map[string]convergence.AutoscaleGauge, len(gauges))
	}
	for _, guid := range guids {
		delete(g.autoscaled, guid)
	}
	for _, a := range gauges {
		g.autoscaled[a.ProcessGuid] = a
	}
}

// setOwned says whether the board owns the lease; losing it withdraws the
// counts.
func (g *countGauges) setOwned(owned bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.owned = owned
	if !owned {
		g.counts = nil
		g.autoscaled = nil
		g.crashSpikes = nil
		g.drainsBlocked = nil
	}
}

func (g *countGauges) Describe(ch chan<- *prometheus.Desc) {
	for _, gauge := range countGaugeList {
		ch <- gauge.desc
	}
	ch <- autoscaleOccupiedDesc
	ch <- autoscaleWantedDesc
	ch <- autoscaleCurrentDesc
	ch <- autoscaleMaxDesc
	ch <- crashSpikeDesc
	ch <- blockedDesc
}

func (g *countGauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	counts := g.counts
	autoscaled := make([]convergence.AutoscaleGauge, 0, len(g.autoscaled))
	for _, a := range g.autoscaled {
		autoscaled = append(autoscaled, a)
	}
	spikes := g.crashSpikes
	drains := g.drainsBlocked
	g.mu.Unlock()
	for _, s := range spikes {
		ch <- prometheus.MustNewConstMetric(crashSpikeDesc, prometheus.GaugeValue, float64(s.Crashes), s.CellID)
	}
	for _, a := range autoscaled {
		ch <- prometheus.MustNewConstMetric(autoscaleOccupiedDesc, prometheus.GaugeValue, float64(a.Occupied), a.ProcessGuid)
		ch <- prometheus.MustNewConstMetric(autoscaleWantedDesc, prometheus.GaugeValue, float64(a.Wanted), a.ProcessGuid)
		ch <- prometheus.MustNewConstMetric(autoscaleCurrentDesc, prometheus.GaugeValue, float64(a.Instances), a.ProcessGuid)
		if a.Max >= 0 {
			ch <- prometheus.MustNewConstMetric(autoscaleMaxDesc, prometheus.GaugeValue, float64(a.Max), a.ProcessGuid)
		}
	}
	if counts == nil {
		return
	}
	for _, gauge := range countGaugeList {
		ch <- prometheus.MustNewConstMetric(gauge.desc, prometheus.GaugeValue, float64(gauge.value(counts)))
	}
	for _, reason := range models.BlockedReasons {
		ch <- prometheus.MustNewConstMetric(blockedDesc, prometheus.GaugeValue, float64(counts.RolloutsBlocked[reason]), "rollout", reason)
		ch <- prometheus.MustNewConstMetric(blockedDesc, prometheus.GaugeValue, float64(counts.OperationsBlocked[reason]), "operation", reason)
		ch <- prometheus.MustNewConstMetric(blockedDesc, prometheus.GaugeValue, float64(drains[reason]), "drain", reason)
	}
}
