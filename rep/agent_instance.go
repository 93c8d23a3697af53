package rep

import (
	"errors"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/executor"
)

// agentInstance is one instance the agent claimed. Its goroutine
// (runInstance) makes every board call about it, in order.
type agentInstance struct {
	key          instanceKey
	guid         string
	definitionID string
	logger       lager.Logger

	// events gets the executor's events (at most three); stopRequests and
	// evacuateRequests wake the goroutine for a stop or an evacuation.
	events           chan executor.Event
	stopRequests     chan string
	evacuateRequests chan struct{}

	// Guarded by Agent.mu.
	presence models.ActualLRP_Presence
	launched bool // Run succeeded: the process exists
	healthy  bool
	netInfo  *models.NetInfo
	occupied bool
	// running: the board has its row RUNNING, as far as the agent knows
	// (a start or a bulk report said so); occupancy changes wait for it.
	running  bool
	stopping bool
	// evacuationAsked: an evacuation call is pending or done.
	evacuationAsked bool
	// settledAt is when the agent last changed which row the instance is
	// (its claim, its evacuation): a poll that began before then may show
	// the row as it was and proves nothing.
	settledAt time.Time
}

// about names the instance in the board calls about it.
func (i *agentInstance) about() CallAbout[string] {
	return CallAbout[string]{
		Key:      i.guid,
		Instance: client.Instance{ProcessGuid: i.key.processGuid, Index: i.key.index, InstanceGuid: i.guid},
		Logger:   i.logger,
	}
}

// claim claims an UNCLAIMED row placed on the cell and runs it, in the
// background. A key already being claimed, or any claim while the cell
// evacuates, is skipped.
func (a *Agent) claim(lrp *models.ActualLRP) {
	key := instanceKey{lrp.GetProcessGuid(), lrp.GetIndex()}
	a.mu.Lock()
	if a.evacuating || a.shuttingDown || a.claiming[key] || a.runsOrdinary(key) {
		a.mu.Unlock()
		return
	}
	a.claiming[key] = true
	a.actors.Add(1)
	a.mu.Unlock()

	go func() {
		defer a.actors.Done()
		inst, def := a.claimRow(key, lrp.GetDefinitionId())
		if inst != nil {
			a.runInstance(inst, def)
		}
	}()
}

// runsOrdinary reports whether the agent runs an ORDINARY instance of key
// that is not stopping: then an UNCLAIMED row of key comes from a list
// read before the claim landed, and claiming it again would only fail.
// (An instance whose row really is gone is marked stopping first.) a.mu
// is held.
func (a *Agent) runsOrdinary(key instanceKey) bool {
	for _, inst := range a.instances {
		if inst.key == key && inst.presence == models.ActualLRP_ORDINARY && !inst.stopping {
			return true
		}
	}
	return false
}

// claimRow fetches the definition first (nothing is claimed when that
// fails; the next poll tries again), then claims the row under a new
// instance guid, repeated until the board answers (see CellCalls.Claim).
//
// The instance runs the definition of the row as claimed, which may not
// be the one listed: a rolling update moves a row that serves nothing
// onto the new definition in place, and a claim names no definition. Run
// as listed, the old definition would serve under a row the board
// records on the new one, until a bulk report said otherwise. When the
// claimed row's definition cannot be fetched, the row is given back
// (removed) for convergence to place again.
func (a *Agent) claimRow(key instanceKey, definitionID string) (*agentInstance, *models.LRPDefinition) {
	release := func() {
		a.mu.Lock()
		delete(a.claiming, key)
		a.mu.Unlock()
	}
	logger := a.logger.Session("claim", lager.Data{"process_guid": key.processGuid, "index": key.index, "definition_id": definitionID})
	def, err := a.definition(key.processGuid, definitionID)
	if err != nil {
		if a.ctx.Err() == nil {
			logger.Error("fetching-definition-failed", err)
		}
		release()
		return nil, nil
	}
	inst := &agentInstance{
		key:              key,
		guid:             a.newInstanceGuid(),
		definitionID:     definitionID,
		events:           make(chan executor.Event, 3),
		stopRequests:     make(chan string, 1),
		evacuateRequests: make(chan struct{}, 1),
		presence:         models.ActualLRP_ORDINARY,
	}
	inst.logger = a.logger.Session("instance", lager.Data{
		"process_guid": key.processGuid, "index": key.index, "instance_guid": inst.guid, "definition_id": definitionID,
	})
	claimed, err := a.cellCalls.Claim(a.ctx, inst.about())
	if err != nil {
		if a.ctx.Err() == nil {
			logger.Info("claim-failed", lager.Data{"error": err.Error()})
		}
		release()
		return nil, nil
	}
	if claimedID := claimed.GetDefinitionId(); claimedID != definitionID {
		inst.logger.Info("claimed-row-moved-to-another-definition", lager.Data{"listed": definitionID, "claimed": claimedID})
		def, err = a.definition(key.processGuid, claimedID)
		if err != nil {
			inst.logger.Error("fetching-claimed-definition-failed", err)
			a.removeRow(inst, models.ActualLRP_ORDINARY, "its definition "+claimedID+" could not be fetched")
			release()
			return nil, nil
		}
		inst.definitionID = claimedID
		inst.logger = a.logger.Session("instance", lager.Data{
			"process_guid": key.processGuid, "index": key.index, "instance_guid": inst.guid, "definition_id": claimedID,
		})
	}
	inst.logger.Info("claimed")
	a.mu.Lock()
	delete(a.claiming, key)
	inst.settledAt = time.Now()
	a.instances[inst.guid] = inst
	a.mu.Unlock()
	return inst, def
}

// runInstance runs the instance and reports what becomes of it until it
// is gone.
func (a *Agent) runInstance(inst *agentInstance, def *models.LRPDefinition) {
	defer a.forget(inst)
	if a.isShuttingDown() {
		a.removeRow(inst, models.ActualLRP_ORDINARY, "the rep is exiting")
		return
	}
	_, err := a.cfg.Executor.Run(executor.InstanceSpec{
		ProcessGuid: inst.key.processGuid, Index: inst.key.index, InstanceGuid: inst.guid, Definition: def,
	})
	if err != nil {
		if a.isShuttingDown() {
			a.removeRow(inst, models.ActualLRP_ORDINARY, "the rep is exiting")
			return
		}
		a.mu.Lock()
		stopping := inst.stopping
		a.mu.Unlock()
		if stopping {
			// The board wants it gone (requestStop cancelled its start):
			// no crash to report.
			a.removeRow(inst, a.presenceOf(inst), "stopped before it started: "+err.Error())
			return
		}
		inst.logger.Error("run-failed", err)
		a.reportCrash(inst, models.CrashCouldNotStart+err.Error())
		return
	}
	a.mu.Lock()
	inst.launched = true
	a.mu.Unlock()

	for {
		select {
		case ev := <-inst.events:
			switch ev.Kind {
			case executor.Healthy:
				if moved := a.reportHealthy(inst, ev.NetInfo); moved != "" {
					a.mu.Lock()
					inst.stopping = true
					a.mu.Unlock()
					a.stopInstance(inst, "its row moved to definition "+moved+" before its start")
					return
				}
			case executor.Unhealthy:
				a.stopUnhealthy(inst, ev.Reason)
				return
			case executor.Crashed:
				a.mu.Lock()
				stopping, presence := inst.stopping, inst.presence
				a.mu.Unlock()
				if stopping || presence != models.ActualLRP_ORDINARY {
					// The board wants it gone anyway, or its row is not
					// one a crash applies to.
					a.removeRow(inst, presence, "it exited: "+ev.Reason)
				} else {
					a.reportCrash(inst, ev.Reason)
				}
				return
			case executor.Exited:
				// Only Shutdown stops an instance its goroutine did not.
				a.removeRow(inst, a.presenceOf(inst), "the rep is exiting")
				return
			}
		case reason := <-inst.stopRequests:
			a.stopInstance(inst, reason)
			return
		case <-inst.evacuateRequests:
			if a.evacuateInstance(inst) {
				return
			}
		}
	}
}

// reportHealthy tells the board the instance runs, where it listens. A
// failed call is left to the next bulk report (which says RUNNING too),
// or, when the row is no longer this instance's, to the next poll.
//
// It returns the definition the started row is on when that is not the
// instance's, "" otherwise. Starts name no definition: a rolling update
// may have moved the row, CLAIMED by this instance, onto a new definition
// in place and placed it on this cell again, and any cell may start an
// UNCLAIMED row placed on it. The row the start took is then on a
// definition this instance does not run; the caller stops the instance
// and removes the row, which convergence places anew.
func (a *Agent) reportHealthy(inst *agentInstance, netInfo *models.NetInfo) string {
	a.mu.Lock()
	inst.healthy = true
	inst.netInfo = netInfo
	presence := inst.presence
	a.mu.Unlock()
	if presence != models.ActualLRP_ORDINARY {
		return ""
	}
	var moved string
	// The call stays open until the answer is recorded: a report taken
	// before that would say CLAIMED after the board heard RUNNING. Its end
	// sends the occupancy changes that waited for the start.
	a.beginCall(inst.guid)
	started, err := a.cellCalls.Start(a.ctx, inst.about(), netInfo)
	if err == nil && started.GetDefinitionId() != inst.definitionID {
		moved = started.GetDefinitionId()
	} else if err == nil {
		a.mu.Lock()
		inst.running = true
		a.mu.Unlock()
	}
	a.endCall(inst.guid)
	if err != nil {
		inst.logger.Info("start-call-failed", lager.Data{"error": err.Error()})
		return ""
	}
	if moved != "" {
		inst.logger.Info("started-row-on-another-definition", lager.Data{"row_definition_id": moved})
		return moved
	}
	inst.logger.Info("running", lager.Data{"net_info": netInfo.String()})
	return ""
}

// reportCrash tells the board the instance crashed, trying until the
// board answers: otherwise its row would stay RUNNING.
func (a *Agent) reportCrash(inst *agentInstance, reason string) {
	inst.logger.Info("crashed", lager.Data{"reason": reason})
	if _, err := a.cellCalls.Crash(a.ctx, inst.about(), reason); err != nil {
		inst.logger.Info("crash-call-failed", lager.Data{"error": err.Error()})
		// A rolling update may have made the instance RETIRING since the
		// rep last looked: its row must not stay RUNNING and routable.
		a.removeRow(inst, models.ActualLRP_RETIRING, "it exited: "+reason)
	}
}

// stopInstance is the stop sequence: unroutable, the grace period, the
// executor's stop (SIGTERM, SIGKILL after its timeout), the row's removal.
func (a *Agent) stopInstance(inst *agentInstance, reason string) {
	presence := a.takeOutOfService(inst, reason)
	a.removeRow(inst, presence, reason)
}

// stopUnhealthy takes an instance the executor judged unhealthy out of
// service the way a stop does (routers learn first, then it stops), then
// reports the crash, so the board restarts it. When the board wanted it
// gone anyway, or its row is not one a crash applies to, the row is
// removed instead.
func (a *Agent) stopUnhealthy(inst *agentInstance, reason string) {
	a.mu.Lock()
	stopRequested := inst.stopping
	// Stopping keeps it out of bulk reports, which would say it is
	// routable, and out of the polls' stop requests.
	inst.stopping = true
	a.mu.Unlock()
	presence := a.takeOutOfService(inst, reason)
	if stopRequested || presence != models.ActualLRP_ORDINARY {
		a.removeRow(inst, presence, "unhealthy: "+reason)
		return
	}
	a.reportCrash(inst, reason)
}

// takeOutOfService marks a healthy instance unroutable (see
// markUnroutable), waits the grace period so that routers stop sending it
// requests, and stops it (SIGTERM, SIGKILL after the executor's timeout).
// It returns the presence of the row the instance was.
func (a *Agent) takeOutOfService(inst *agentInstance, reason string) models.ActualLRP_Presence {
	a.mu.Lock()
	presence, healthy, netInfo := inst.presence, inst.healthy, inst.netInfo
	a.mu.Unlock()
	inst.logger.Info("stopping", lager.Data{"reason": reason, "presence": presence.String()})
	if healthy {
		a.markUnroutable(inst, presence, netInfo)
		sleepCtx(a.ctx, a.cfg.StopGracePeriod)
	}
	if err := a.cfg.Executor.Stop(inst.guid); err != nil && !errors.Is(err, executor.ErrInstanceNotFound) {
		inst.logger.Error("stop-failed", err)
	}
	return presence
}

// markUnroutable tells the board that the instance takes no more
// requests, trying while the board does not answer, for a bounded time
// (see CellCalls.MarkUnroutable).
func (a *Agent) markUnroutable(inst *agentInstance, presence models.ActualLRP_Presence, netInfo *models.NetInfo) {
	// Refusals and giving up are logged there; the stop goes ahead either way.
	_ = a.cellCalls.MarkUnroutable(a.ctx, inst.about(), presence, netInfo)
}

// evacuateInstance hands the instance over to a replacement elsewhere. It
// reports true when the instance is gone (the board needed nothing of it
// running, so it was stopped at once).
func (a *Agent) evacuateInstance(inst *agentInstance) bool {
	keepRunning, err := a.cellCalls.Evacuate(a.ctx, inst.about())
	if err != nil {
		if a.ctx.Err() == nil {
			inst.logger.Info("evacuate-call-failed", lager.Data{"error": err.Error()})
		}
		a.mu.Lock()
		inst.evacuationAsked = false // asked again on the next tick
		a.mu.Unlock()
		return false
	}
	if !keepRunning {
		a.stopInstance(inst, "evacuating: nothing of it needs to keep running")
		return true
	}
	a.mu.Lock()
	inst.presence = models.ActualLRP_EVACUATING
	inst.settledAt = time.Now()
	a.mu.Unlock()
	inst.logger.Info("evacuating")
	a.requestSync()
	return false
}

// removeRow removes the instance's row, trying until the board answers
// (see CellCalls.Remove).
func (a *Agent) removeRow(inst *agentInstance, presence models.ActualLRP_Presence, reason string) {
	err := a.cellCalls.Remove(a.ctx, inst.about(), presence)
	switch {
	case err == nil:
		inst.logger.Info("removed", lager.Data{"reason": reason, "presence": presence.String()})
	case models.IsErrorType(err, models.Error_ResourceNotFound):
		inst.logger.Info("stopped", lager.Data{"reason": reason, "presence": presence.String()})
	default:
		inst.logger.Info("remove-call-failed", lager.Data{"error": err.Error(), "presence": presence.String()})
	}
}

// requestStop asks the instance's goroutine to stop it; a.mu must be
// held. Asking twice changes nothing.
func (a *Agent) requestStop(inst *agentInstance, reason string) {
	if inst.stopping {
		return
	}
	inst.stopping = true
	inst.stopRequests <- reason
	if !inst.launched {
		// Its goroutine waits in Run, maybe on a slow download or setup:
		// cut that short rather than start what is to be stopped.
		a.cfg.Executor.CancelStart(inst.guid)
	}
}

// requestEvacuation asks the instance's goroutine to evacuate it; a.mu
// must be held.
func (a *Agent) requestEvacuation(inst *agentInstance) {
	if inst.stopping || inst.evacuationAsked || inst.presence != models.ActualLRP_ORDINARY {
		return
	}
	inst.evacuationAsked = true
	select {
	case inst.evacuateRequests <- struct{}{}:
	default:
	}
}

func (a *Agent) forget(inst *agentInstance) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.instances, inst.guid)
}

func (a *Agent) presenceOf(inst *agentInstance) models.ActualLRP_Presence {
	a.mu.Lock()
	defer a.mu.Unlock()
	return inst.presence
}

func (a *Agent) isShuttingDown() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.shuttingDown
}
