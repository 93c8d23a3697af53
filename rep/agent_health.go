package rep

import (
	"cmp"
	"slices"

	"code.cloudfoundry.org/lager/v3"

	"github.com/corkboard/corkboard/models"
)

// healthLoop sends a health report every HealthReportInterval: what the
// cell's instances' health checks did since the last report the board
// took, and what each running instance holds in memory now (see
// reportHealth).
func (a *Agent) healthLoop() {
	defer a.loops.Done()
	for sleepCtx(a.ctx, a.cfg.HealthReportInterval) {
		a.reportHealth()
	}
}

// reportHealth adds what the executor counted since the last call to the
// pending report and sends it, one DefinitionHealth per (process guid,
// definition id), at most models.MaxHealthEntries per call, each with its
// instances (models.ReportedInstances). Checks add up until a call
// carrying them succeeds, so a failed call's counts go with the next
// report; memory and an instance's failing check are samples at report
// time, so the pending report keeps only the newest (a definition or an
// instance that no longer runs, or whose checks pass again, has none). A call that applied but lost its answer is counted again
// with the next report: the client never repeats one (it would count
// twice every time), and the board's signals tolerate the rare overcount
// better than a lost report.
func (a *Agent) reportHealth() {
	taken := map[definitionKey]*models.DefinitionHealth{}
	for _, h := range a.cfg.Executor.TakeHealth() {
		taken[definitionKey{h.GetProcessGuid(), h.GetDefinitionId()}] = h
	}
	for key, pending := range a.pendingHealth {
		clear(pending.MemoryBucketCounts)
		for _, in := range pending.Instances {
			in.MemoryMb = nil
			in.LastCheckFailure, in.LastCheckFailureAt, in.CheckFailingSince = "", 0, 0
		}
		if h, ok := taken[key]; ok {
			pending.Checks += h.GetChecks()
			pending.CheckFailures += h.GetCheckFailures()
			pending.LatencyBucketCounts = models.AddBucketCounts(pending.LatencyBucketCounts, h.GetLatencyBucketCounts())
			pending.MemoryBucketCounts = models.AddBucketCounts(pending.MemoryBucketCounts, h.GetMemoryBucketCounts())
			pending.Instances = addInstanceHealth(pending.Instances, h.GetInstances())
			delete(taken, key)
		}
		pending.Instances = models.ReportedInstances(pending.Instances)
	}
	for key, h := range taken {
		a.pendingHealth[key] = h
	}

	report := make([]*models.DefinitionHealth, 0, len(a.pendingHealth))
	for key, h := range a.pendingHealth {
		if !h.HasNews() {
			// Nothing to say: no checks since the last report, no
			// instance of it runs, none fails its check.
			delete(a.pendingHealth, key)
			continue
		}
		report = append(report, h)
	}
	slices.SortFunc(report, func(x, y *models.DefinitionHealth) int {
		return cmp.Or(cmp.Compare(x.GetProcessGuid(), y.GetProcessGuid()), cmp.Compare(x.GetDefinitionId(), y.GetDefinitionId()))
	})
	for start := 0; start < len(report); start += models.MaxHealthEntries {
		batch := report[start:min(start+models.MaxHealthEntries, len(report))]
		if err := a.cellCalls.ReportHealth(a.ctx, batch); err != nil {
			if a.ctx.Err() == nil {
				a.logger.Info("health-report-failed", lager.Data{"definitions": len(report) - start, "error": err.Error()})
			}
			return
		}
		for _, h := range batch {
			delete(a.pendingHealth, definitionKey{h.GetProcessGuid(), h.GetDefinitionId()})
		}
	}
	a.logger.Debug("health-reported", lager.Data{"definitions": len(report)})
}

// addInstanceHealth adds taken to pending, instance by instance guid:
// checks, failures and latencies add up, the memory sample and the
// failing check are taken's.
func addInstanceHealth(pending, taken []*models.InstanceHealth) []*models.InstanceHealth {
	byGuid := make(map[string]*models.InstanceHealth, len(pending))
	for _, in := range pending {
		byGuid[in.GetInstanceGuid()] = in
	}
	for _, t := range taken {
		in, ok := byGuid[t.GetInstanceGuid()]
		if !ok {
			pending = append(pending, t)
			byGuid[t.GetInstanceGuid()] = t
			continue
		}
		in.Checks += t.GetChecks()
		in.CheckFailures += t.GetCheckFailures()
		in.LatencyBucketCounts = models.AddBucketCounts(in.LatencyBucketCounts, t.GetLatencyBucketCounts())
		in.MemoryMb = t.MemoryMb
		in.LastCheckFailure, in.LastCheckFailureAt, in.CheckFailingSince = t.GetLastCheckFailure(), t.GetLastCheckFailureAt(), t.GetCheckFailingSince()
	}
	return pending
}
