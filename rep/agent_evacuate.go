package rep

import (
	"context"
	"os"
	"syscall"
	"time"

	"code.cloudfoundry.org/lager/v3"
)

// drainCallTimeout bounds the call that marks the cell draining on the
// board before an evacuation; the evacuation goes on without it.
const drainCallTimeout = 10 * time.Second

// evacuate moves every instance off the cell, start-before-stop: it marks
// the cell draining (nothing new is placed here), claims nothing more,
// and asks the board to evacuate each instance. A RUNNING one becomes
// EVACUATING and keeps running until a bulk report lists it in Stop (its
// replacement runs elsewhere); anything else is stopped at once. It
// returns when nothing is left, or after EvacuationTimeout has passed and
// the rest was stopped, or on SIGINT.
func (a *Agent) evacuate(signals <-chan os.Signal, reason string) {
	logger := a.logger.Session("evacuate")
	logger.Info("starting", lager.Data{"reason": reason, "timeout": a.cfg.EvacuationTimeout.String()})
	a.mu.Lock()
	a.evacuating = true
	a.mu.Unlock()
	a.requestSync()

	ctx, cancel := context.WithTimeout(a.ctx, drainCallTimeout)
	if err := a.cfg.Board.DrainCell(ctx, a.cellID); err != nil {
		logger.Info("marking-the-cell-draining-failed", lager.Data{"error": err.Error()})
	}
	cancel()

	deadline := time.NewTimer(a.cfg.EvacuationTimeout)
	defer deadline.Stop()
	ticker := time.NewTicker(a.cfg.RetryInterval)
	defer ticker.Stop()
	var giveUp <-chan time.Time
	for {
		a.mu.Lock()
		left := len(a.instances) + len(a.claiming)
		for _, inst := range a.instances {
			a.requestEvacuation(inst)
		}
		a.mu.Unlock()
		if left == 0 {
			logger.Info("done")
			return
		}
		select {
		case <-ticker.C:
		case <-deadline.C:
			logger.Info("timed-out-stopping-the-rest", lager.Data{"instances": left})
			a.mu.Lock()
			for _, inst := range a.instances {
				a.requestStop(inst, "the evacuation timed out")
			}
			a.mu.Unlock()
			// Each stop takes at most the retries of its unroutable call,
			// the grace period and the stop timeout; the board calls
			// around them may hang on.
			giveUp = time.After(a.cfg.UnroutableRetryTimeout + a.cfg.StopGracePeriod + a.cfg.Executor.StopTimeout() + actorsExitTimeout)
		case <-giveUp:
			logger.Info("gave-up-waiting", lager.Data{"instances": left})
			return
		case sig := <-signals:
			if sig != syscall.SIGTERM {
				logger.Info("interrupted", lager.Data{"signal": sig.String(), "instances": left})
				return
			}
		}
	}
}
