package signals

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/models"
)

// Collector fills a Window from a board's event hub. Every board reads the
// whole event log, so every board's collector sees every crash and start;
// what a board has not seen since it started (its hub starts at the end of
// the log) it does not count, so a board started a minute ago shows a
// minute at most.
type Collector struct {
	mu     sync.Mutex
	window *Window
	now    func() time.Time
}

// NewCollector returns a collector over span, judging time by now (the
// board's store clock: the instances' times are the store's).
func NewCollector(span time.Duration, now func() time.Time) *Collector {
	return &Collector{window: NewWindow(span), now: now}
}

// collectedTypes are the events a collector reads.
var collectedTypes = []string{
	models.EventActualLRPCreated, models.EventActualLRPChanged, models.EventActualLRPCrashed,
	models.EventActualLRPRemoved, models.EventDesiredLRPRemoved, models.EventDefinitionHealth,
}

// Run follows hub from its last event until ctx ends. A subscription the
// hub ends (the collector fell behind) starts again from the hub's last
// event: what it missed is not counted.
func (c *Collector) Run(ctx context.Context, hub *events.Hub) {
	for ctx.Err() == nil {
		sub := hub.Subscribe(hub.LastID(), events.Filter{Types: collectedTypes})
		c.follow(ctx, sub)
		sub.Close()
	}
}

func (c *Collector) follow(ctx context.Context, sub *events.Subscription) {
	sweep := time.NewTicker(time.Minute)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sweep.C:
			c.mu.Lock()
			c.window.Sweep(c.now())
			c.mu.Unlock()
		case e, ok := <-sub.Events():
			if !ok {
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
				return
			}
			c.Observe(e.Event)
		}
	}
}

// Observe counts one event, for the definition and for the instance (its
// index of the definition):
//   - an instance created or changed: it and its definition have been seen;
//   - a change from CLAIMED to RUNNING: the instance became ready, its
//     time from start (CLAIMED) to ready the difference of the two rows'
//     since;
//   - a change from CRASHED to another state: the instance restarted, at
//     the new row's since;
//   - a crash: at the crashed row's since, with its reason;
//   - a cell's health report of a definition: at the collector's now (the
//     event carries no time; the hub hands it over within moments of its
//     logging), per instance where the report has instances;
//   - an instance's row removed: the instance is forgotten
//     (Window.InstanceRemoved);
//   - an LRP removed: its definitions are forgotten.
func (c *Collector) Observe(e models.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := func(nanos int64) time.Time {
		if nanos == 0 {
			return c.now()
		}
		return time.Unix(0, nanos)
	}
	switch p := e.Payload.(type) {
	case *models.ActualLRPCreatedEvent:
		a := p.GetActualLrp()
		c.window.InstanceSeen(a.GetProcessGuid(), a.GetDefinitionId(), a.GetIndex(), a.GetInstanceGuid(), at(a.GetSince()))
	case *models.ActualLRPChangedEvent:
		before, after := p.GetBefore(), p.GetAfter()
		guid, def, index := after.GetProcessGuid(), after.GetDefinitionId(), after.GetIndex()
		c.window.InstanceSeen(guid, def, index, after.GetInstanceGuid(), at(after.GetSince()))
		sameDefinition := before.GetDefinitionId() == def
		if before.GetState() == models.ActualLRP_CLAIMED && after.GetState() == models.ActualLRP_RUNNING &&
			sameDefinition && after.GetSince() >= before.GetSince() {
			c.window.InstanceReadied(guid, def, index, after.GetInstanceGuid(), at(after.GetSince()),
				time.Duration(after.GetSince()-before.GetSince()))
		}
		if before.GetState() == models.ActualLRP_CRASHED && after.GetState() != models.ActualLRP_CRASHED && sameDefinition {
			c.window.InstanceRestarted(guid, def, index, at(after.GetSince()))
		}
	case *models.ActualLRPCrashedEvent:
		a := p.GetActualLrp()
		c.window.InstanceCrashed(a.GetProcessGuid(), a.GetDefinitionId(), a.GetIndex(), at(a.GetSince()), p.GetCrashReason())
	case *models.ActualLRPRemovedEvent:
		a := p.GetActualLrp()
		c.window.InstanceRemoved(a.GetProcessGuid(), a.GetDefinitionId(), a.GetIndex(), a.GetPresence())
	case *models.DefinitionHealthEvent:
		c.window.Reported(p.GetHealth(), c.now())
	case *models.DesiredLRPRemovedEvent:
		c.window.Forget(p.GetDesiredLrp().GetProcessGuid())
	}
}

// Figures is Window.Figures at the collector's now.
func (c *Collector) Figures(processGuid, definitionID string, instances int) *models.DefinitionSignals {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.window.Figures(processGuid, definitionID, instances, c.now())
}

// CheckFailures is Window.CheckFailures at the collector's now.
func (c *Collector) CheckFailures() []models.CheckFailure {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.window.CheckFailures(c.now())
}

// Instances is Window.Instances at the collector's now.
func (c *Collector) Instances(processGuid, definitionID string) []*models.InstanceSignals {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.window.Instances(processGuid, definitionID, c.now())
}

var (
	crashesDesc = prometheus.NewDesc("corkboard_definition_crashes",
		"Crashes of the definition's instances within the signal window (cork rollout status shows the rate).",
		[]string{"process_guid", "definition_id"}, nil)
	readyDesc = prometheus.NewDesc("corkboard_definition_time_to_ready_seconds",
		"Time from start (CLAIMED) to ready (RUNNING) of the definition's instances that became ready within the signal window.",
		[]string{"process_guid", "definition_id", "quantile"}, nil)
	healthChecksDesc = prometheus.NewDesc("corkboard_definition_health_checks",
		"Health checks the definition's healthy instances ran within the signal window, as their cells reported them.",
		[]string{"process_guid", "definition_id"}, nil)
	healthFailuresDesc = prometheus.NewDesc("corkboard_definition_health_check_failures",
		"Of the definition's health checks within the signal window, those that failed.",
		[]string{"process_guid", "definition_id"}, nil)
	healthLatencyDesc = prometheus.NewDesc("corkboard_definition_health_latency_p99_seconds",
		"The 99th percentile of the latency of the definition's health checks within the signal window (the upper bound of its bucket).",
		[]string{"process_guid", "definition_id"}, nil)
	memoryDesc = prometheus.NewDesc("corkboard_definition_memory_p99_bytes",
		"The 99th percentile of the memory the definition's running instances held at their cells' health reports within the signal window (the upper bound of its bucket).",
		[]string{"process_guid", "definition_id"}, nil)
	windowDesc = prometheus.NewDesc("corkboard_definition_signal_window_seconds",
		"The span the definition's signals cover: the window, or less while the board has seen the definition for less.",
		[]string{"process_guid", "definition_id"}, nil)
)

// The per-instance gauges: one series per instance the window knows (an
// index of a definition whose row is there), gone from the next scrape
// once the window forgets the instance (Window.InstanceRemoved), so the
// series count stays within the instances that run.
var (
	instanceLabels       = []string{"process_guid", "definition_id", "index"}
	instanceCrashesDesc  = prometheus.NewDesc("corkboard_instance_crashes", "Crashes of the instance within the signal window.", instanceLabels, nil)
	instanceRestartsDesc = prometheus.NewDesc("corkboard_instance_restarts", "Starts of the instance after a crash within the signal window.", instanceLabels, nil)
	instanceReadyDesc    = prometheus.NewDesc("corkboard_instance_time_to_ready_seconds", "Time from start (CLAIMED) to ready (RUNNING) of the instance's latest start that became ready within the signal window.", instanceLabels, nil)
	instanceChecksDesc   = prometheus.NewDesc("corkboard_instance_health_checks", "Health checks the instance ran once healthy within the signal window, as its cell reported them.", instanceLabels, nil)
	instanceFailuresDesc = prometheus.NewDesc("corkboard_instance_health_check_failures", "Of the instance's health checks within the signal window, those that failed.", instanceLabels, nil)
	instanceLatencyDesc  = prometheus.NewDesc("corkboard_instance_health_latency_p99_seconds", "The 99th percentile of the latency of the instance's health checks within the signal window (the upper bound of its bucket).", instanceLabels, nil)
	instanceMemoryDesc   = prometheus.NewDesc("corkboard_instance_memory_p99_bytes", "The 99th percentile of the memory the instance held at its cell's health reports within the signal window.", instanceLabels, nil)
	instanceDescriptions = []*prometheus.Desc{instanceCrashesDesc, instanceRestartsDesc, instanceReadyDesc, instanceChecksDesc, instanceFailuresDesc, instanceLatencyDesc, instanceMemoryDesc}
)

// Describe and Collect export the window's figures (prometheus.Collector).
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- crashesDesc
	ch <- readyDesc
	ch <- windowDesc
	ch <- healthChecksDesc
	ch <- healthFailuresDesc
	ch <- healthLatencyDesc
	ch <- memoryDesc
	for _, d := range instanceDescriptions {
		ch <- d
	}
}

func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.window.each(c.now(), func(processGuid, definitionID string, f *models.DefinitionSignals, instances []*models.InstanceSignals) {
		for _, in := range instances {
			collectInstance(ch, processGuid, definitionID, in)
		}
		ch <- prometheus.MustNewConstMetric(windowDesc, prometheus.GaugeValue, float64(f.GetWindowMs())/1000, processGuid, definitionID)
		ch <- prometheus.MustNewConstMetric(crashesDesc, prometheus.GaugeValue, float64(f.GetCrashes()), processGuid, definitionID)
		if f.GetReadied() > 0 {
			ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, float64(f.GetTimeToReadyP50Ms())/1000, processGuid, definitionID, "0.5")
			ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, float64(f.GetTimeToReadyP99Ms())/1000, processGuid, definitionID, "0.99")
		}
		ch <- prometheus.MustNewConstMetric(healthChecksDesc, prometheus.GaugeValue, float64(f.GetHealthChecks()), processGuid, definitionID)
		ch <- prometheus.MustNewConstMetric(healthFailuresDesc, prometheus.GaugeValue, float64(f.GetHealthCheckFailures()), processGuid, definitionID)
		if f.HealthLatencyP99Ms != nil {
			ch <- prometheus.MustNewConstMetric(healthLatencyDesc, prometheus.GaugeValue, float64(f.GetHealthLatencyP99Ms())/1000, processGuid, definitionID)
		}
		if f.MemoryMbP99 != nil {
			ch <- prometheus.MustNewConstMetric(memoryDesc, prometheus.GaugeValue, float64(f.GetMemoryMbP99())*(1<<20), processGuid, definitionID)
		}
	})
}

// collectInstance sends the instance's gauges; those without samples in
// the window (time to ready, latency, memory) are left out.
func collectInstance(ch chan<- prometheus.Metric, processGuid, definitionID string, in *models.InstanceSignals) {
	labels := []string{processGuid, definitionID, strconv.Itoa(int(in.GetIndex()))}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(instanceCrashesDesc, float64(in.GetCrashes()))
	gauge(instanceRestartsDesc, float64(in.GetRestarts()))
	gauge(instanceChecksDesc, float64(in.GetHealthChecks()))
	gauge(instanceFailuresDesc, float64(in.GetHealthCheckFailures()))
	if in.TimeToReadyMs != nil {
		gauge(instanceReadyDesc, float64(in.GetTimeToReadyMs())/1000)
	}
	if in.HealthLatencyP99Ms != nil {
		gauge(instanceLatencyDesc, float64(in.GetHealthLatencyP99Ms())/1000)
	}
	if in.MemoryMbP99 != nil {
		gauge(instanceMemoryDesc, float64(in.GetMemoryMbP99())*(1<<20))
	}
}
