package rep

import (
	"sort"

	"code.cloudfoundry.org/lager/v3"

	"github.com/corkboard/corkboard/models"
)

// requestOccupancyReport wakes occupancyLoop; requests coalesce.
func (a *Agent) requestOccupancyReport() {
	select {
	case a.occupancySoon <- struct{}{}:
	default:
	}
}

// occupancyLoop sends what instances say of themselves in small batches:
// woken by a change, it waits OccupancyBatchInterval for more, then sends
// every pending change (see reportOccupancy). Changes that come in while
// it sends wake it again.
func (a *Agent) occupancyLoop() {
	defer a.loops.Done()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-a.occupancySoon:
		}
		if !sleepCtx(a.ctx, a.cfg.OccupancyBatchInterval) {
			return
		}
		a.reportOccupancy()
	}
}

// reportOccupancy sends the pending changes, at most
// models.MaxOccupancyChanges per call. A failed call puts its changes back
// (where no newer one came since) and asks for a bulk report, which
// carries every instance's occupancy too: the changes reach the board
// either way, and the next change sends them again.
func (a *Agent) reportOccupancy() {
	a.reportMu.Lock()
	defer a.reportMu.Unlock()
	for {
		changes := a.takeOccupancyChanges(models.MaxOccupancyChanges)
		if len(changes) == 0 {
			return
		}
		applied, err := a.cellCalls.ReportOccupancy(a.ctx, changes)
		if err != nil {
			a.mu.Lock()
			for _, c := range changes {
				if _, newer := a.pendingOccupancy[c.GetInstanceGuid()]; !newer {
					a.pendingOccupancy[c.GetInstanceGuid()] = c.GetOccupied()
				}
			}
			a.mu.Unlock()
			if a.ctx.Err() == nil {
				a.logger.Info("occupancy-report-failed", lager.Data{"changes": len(changes), "error": err.Error()})
				a.requestSync()
			}
			return
		}
		a.logger.Debug("occupancy-reported", lager.Data{"changes": len(changes), "applied": applied})
	}
}

// takeOccupancyChanges takes up to limit pending changes out of the
// pending set, naming each instance's row as the agent knows it now. A
// change of an instance that is gone or stopping is dropped: its row goes
// too. One whose instance the board does not know RUNNING yet, or that
// has a call in flight (its start, say), stays pending: the board would
// ignore it. The end of that call, or a bulk report, sends it.
func (a *Agent) takeOccupancyChanges(limit int) []*models.OccupancyChange {
	a.mu.Lock()
	defer a.mu.Unlock()
	guids := make([]string, 0, len(a.pendingOccupancy))
	for guid := range a.pendingOccupancy {
		guids = append(guids, guid)
	}
	sort.Strings(guids)
	var changes []*models.OccupancyChange
	for _, guid := range guids {
		inst := a.instances[guid]
		switch {
		case inst == nil || inst.stopping:
			delete(a.pendingOccupancy, guid)
			continue
		case !inst.running || a.cellCalls.Gate().InCall(guid):
			continue
		case len(changes) == limit:
			return changes
		}
		changes = append(changes, &models.OccupancyChange{
			ProcessGuid:  inst.key.processGuid,
			Index:        inst.key.index,
			Presence:     inst.presence,
			InstanceGuid: guid,
			Occupied:     a.pendingOccupancy[guid],
		})
		delete(a.pendingOccupancy, guid)
	}
	return changes
}
