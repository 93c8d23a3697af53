package rep

import (
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// rowKey names one row of the board: an index and one of its presences.
type rowKey struct {
	processGuid string
	index       int32
	presence    models.ActualLRP_Presence
}

// pollLoop lists the cell's rows every pollWait, and at once when asked
// (pollNow): it claims what is placed on the cell, stops instances whose
// row is gone or taken, and removes rows a previous rep on this cell left
// behind.
func (a *Agent) pollLoop() {
	defer a.loops.Done()
	for a.waitForPoll() {
		began := time.Now()
		rows, err := a.cfg.Board.ActualLRPs(a.ctx, client.ActualLRPFilter{CellID: a.cellID})
		if err != nil {
			if a.ctx.Err() == nil {
				a.logger.Debug("poll-failed", lager.Data{"error": err.Error()})
			}
			continue
		}
		a.reconcileRows(rows, began)
	}
}

// waitForPoll waits until the next list is due or asked for; it reports
// whether the agent is still running. When a stream opens or ends on the
// way, the wait is measured again from its start. With a poll interval of
// 1h and a retry interval of 1s:
//  1. no stream: the wait is 1s; a stream opens 0.5s in: it becomes 1h
//     from its start, 59m59.5s more;
//  2. a stream: the wait is 1h; the stream ends 10s in: the 1s wait it
//     becomes is over, and the list goes at once.
func (a *Agent) waitForPoll() bool {
	began := time.Now()
	for {
		timer := time.NewTimer(a.pollWait() - time.Since(began))
		select {
		case <-a.ctx.Done():
			timer.Stop()
			return false
		case <-timer.C:
			return true
		case <-a.pollSoon:
			timer.Stop()
			return true
		case <-a.streamChanged:
			timer.Stop()
		}
	}
}

// reconcileRows acts on the cell's rows as a poll that began at began
// saw them.
func (a *Agent) reconcileRows(rows []*models.ActualLRP, began time.Time) {
	byKey := make(map[rowKey]*models.ActualLRP, len(rows))
	for _, row := range rows {
		byKey[rowKey{row.GetProcessGuid(), row.GetIndex(), row.GetPresence()}] = row
	}

	a.mu.Lock()
	for _, inst := range a.instances {
		// An instance with a call in flight, or whose row changed after
		// the poll began, is judged on the next poll.
		if inst.stopping || a.cellCalls.Gate().InCall(inst.guid) || !inst.settledAt.Before(began) {
			continue
		}
		if a.promotedBack(byKey, inst) {
			continue
		}
		if row := a.retiringRowOf(byKey, inst); row != nil {
			a.retire(inst, row)
			continue
		}
		if !a.rowIsInstances(byKey, inst) {
			a.requestStop(inst, "its row on the board is gone or belongs to another instance")
		}
	}
	var stale []*models.ActualLRP
	for _, row := range rows {
		if a.isStale(row) && !a.staleRemovals[row.GetInstanceGuid()] {
			a.staleRemovals[row.GetInstanceGuid()] = true
			stale = append(stale, row)
		}
	}
	claiming := !a.evacuating && !a.shuttingDown
	if len(stale) > 0 {
		a.loops.Add(len(stale))
	}
	a.mu.Unlock()

	for _, row := range stale {
		go a.removeStale(row)
	}
	if !claiming {
		return
	}
	for _, row := range rows {
		if row.GetPresence() == models.ActualLRP_ORDINARY && row.GetState() == models.ActualLRP_UNCLAIMED && row.GetCellId() == a.cellID {
			a.claim(row)
		}
	}
}

// rowIsInstances reports whether the rows hold inst's row: its presence
// (or, for an ORDINARY instance, SUSPECT: the board lost the cell for a
// while), its instance guid on this cell, CLAIMED or RUNNING. a.mu is
// held.
func (a *Agent) rowIsInstances(byKey map[rowKey]*models.ActualLRP, inst *agentInstance) bool {
	presences := []models.ActualLRP_Presence{inst.presence}
	if inst.presence == models.ActualLRP_ORDINARY {
		presences = append(presences, models.ActualLRP_SUSPECT)
	}
	for _, presence := range presences {
		row := byKey[rowKey{inst.key.processGuid, inst.key.index, presence}]
		if row.BelongsTo(inst.guid, a.cellID) &&
			(row.GetState() == models.ActualLRP_CLAIMED || row.GetState() == models.ActualLRP_RUNNING) {
			return true
		}
	}
	return false
}

// retiringRowOf is the RETIRING row that is inst, or nil: a rolling
// update turned the instance's ORDINARY row into it. a.mu is held.
func (a *Agent) retiringRowOf(byKey map[rowKey]*models.ActualLRP, inst *agentInstance) *models.ActualLRP {
	if inst.presence != models.ActualLRP_ORDINARY && inst.presence != models.ActualLRP_RETIRING {
		return nil
	}
	row := byKey[rowKey{inst.key.processGuid, inst.key.index, models.ActualLRP_RETIRING}]
	if !row.BelongsTo(inst.guid, a.cellID) {
		return nil
	}
	return row
}

// promotedBack follows the board when it made inst, a RETIRING instance,
// its index's ORDINARY instance again (its definition is active once
// more): it keeps running as ORDINARY. It reports whether that happened.
// a.mu is held.
func (a *Agent) promotedBack(byKey map[rowKey]*models.ActualLRP, inst *agentInstance) bool {
	if inst.presence != models.ActualLRP_RETIRING {
		return false
	}
	row := byKey[rowKey{inst.key.processGuid, inst.key.index, models.ActualLRP_ORDINARY}]
	if !row.BelongsTo(inst.guid, a.cellID) ||
		(row.GetState() != models.ActualLRP_CLAIMED && row.GetState() != models.ActualLRP_RUNNING) {
		return false
	}
	inst.presence = models.ActualLRP_ORDINARY
	inst.settledAt = time.Now()
	inst.logger.Info("promoted-back", lager.Data{"definition_id": row.GetDefinitionId()})
	return true
}

// retire follows the board's RETIRING row of inst: the instance keeps
// running and serving while its replacement starts, and is drained once
// the board asks it to stop. a.mu is held.
func (a *Agent) retire(inst *agentInstance, row *models.ActualLRP) {
	if inst.presence != models.ActualLRP_RETIRING {
		inst.presence = models.ActualLRP_RETIRING
		inst.settledAt = time.Now()
		inst.logger.Info("retiring", lager.Data{"definition_id": row.GetDefinitionId()})
	}
	if row.GetStopRequested() {
		a.requestStop(inst, "its replacement took over (a rollout or a move)")
	}
}

// isStale reports whether row is a CLAIMED or RUNNING instance of an
// earlier rep on this cell: nothing runs it any more (the executor killed
// what that rep left), but the board would believe it forever.
func (a *Agent) isStale(row *models.ActualLRP) bool {
	state := row.GetState()
	return row.GetCellId() == a.cellID && row.GetInstanceGuid() != "" && !a.ownGuid(row.GetInstanceGuid()) &&
		(state == models.ActualLRP_CLAIMED || state == models.ActualLRP_RUNNING)
}

func (a *Agent) removeStale(row *models.ActualLRP) {
	defer a.loops.Done()
	instance := client.Instance{ProcessGuid: row.GetProcessGuid(), Index: row.GetIndex(), InstanceGuid: row.GetInstanceGuid()}
	err := a.cellCalls.RemoveLeftover(a.ctx, instance, row.GetPresence())
	data := lager.Data{
		"process_guid": row.GetProcessGuid(), "index": row.GetIndex(), "instance_guid": row.GetInstanceGuid(),
		"presence": row.GetPresence().String(),
	}
	if err != nil && a.ctx.Err() == nil {
		data["error"] = err.Error()
		a.logger.Info("removing-stale-row-failed", data)
	} else if err == nil {
		a.logger.Info("removed-stale-row", data)
	}
	a.mu.Lock()
	delete(a.staleRemovals, row.GetInstanceGuid())
	a.mu.Unlock()
}

// bulkSyncLoop reports everything the cell runs every BulkSyncInterval
// (every RetryInterval while evacuating), and soon after requestSync.
func (a *Agent) bulkSyncLoop() {
	defer a.loops.Done()
	for {
		a.mu.Lock()
		interval := a.cfg.BulkSyncInterval
		if a.evacuating {
			interval = a.cfg.RetryInterval
		}
		a.mu.Unlock()
		timer := time.NewTimer(interval)
		select {
		case <-a.ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		case <-a.syncSoon:
			timer.Stop()
		}
		a.bulkReport()
	}
}

// bulkReport tells the board what the cell runs, stops what the board
// says to stop and claims what it says is assigned.
func (a *Agent) bulkReport() {
	a.reportMu.Lock()
	defer a.reportMu.Unlock()
	a.mu.Lock()
	reported := make([]*models.ReportedInstance, 0, len(a.instances))
	for _, inst := range a.instances {
		if !inst.launched || inst.stopping || !a.cellCalls.Gate().Report(inst.guid) {
			continue
		}
		r := &models.ReportedInstance{
			ProcessGuid:  inst.key.processGuid,
			Index:        inst.key.index,
			Presence:     inst.presence,
			InstanceGuid: inst.guid,
			DefinitionId: inst.definitionID,
			State:        models.ActualLRP_CLAIMED,
		}
		if inst.healthy {
			r.State = models.ActualLRP_RUNNING
			r.NetInfo = inst.netInfo
			r.Routable = true
			r.Occupied = inst.occupied
		}
		reported = append(reported, r)
	}
	a.mu.Unlock()

	guids := make([]string, 0, len(reported))
	for _, r := range reported {
		guids = append(guids, r.GetInstanceGuid())
	}
	result, err := a.cellCalls.BulkReport(a.ctx, reported, guids)

	a.mu.Lock()
	if err != nil {
		a.mu.Unlock()
		if a.ctx.Err() == nil {
			a.logger.Info("bulk-report-failed", lager.Data{"error": err.Error()})
		}
		return
	}
	stopped := map[string]bool{}
	for _, s := range result.Stop {
		stopped[s.GetInstanceGuid()] = true
		if inst := a.instances[s.GetInstanceGuid()]; inst != nil && inst.presence == s.GetPresence() {
			a.requestStop(inst, "the board does not want it on this cell (bulk report)")
		}
	}
	// What the board kept of what was reported RUNNING is RUNNING now:
	// occupancy changes that waited for that may go.
	for _, r := range reported {
		if inst := a.instances[r.GetInstanceGuid()]; inst != nil && r.GetState() == models.ActualLRP_RUNNING && !stopped[r.GetInstanceGuid()] {
			inst.running = true
		}
	}
	occupancyPending := len(a.pendingOccupancy) > 0
	claiming := !a.evacuating && !a.shuttingDown
	a.mu.Unlock()
	if occupancyPending {
		a.requestOccupancyReport()
	}
	if claiming {
		for _, lrp := range result.Assigned {
			a.claim(lrp)
		}
	}
}
