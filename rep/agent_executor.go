package rep

import (
	"time"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/executor"
)

// Executor is what the agent needs of whatever runs its cell's instances:
// on a real cell, rep/executor's Executor (child processes); in the
// agent's specs, a double that runs nothing, records what it was asked
// and sends the events a spec wants. Its contract is rep/executor's:
//
//   - Run returns once the instance's process started, or with an error,
//     and then nothing of it runs and no event comes for it.
//   - Every instance Run started gets exactly one Crashed or Exited event,
//     after at most one Healthy and at most one Unhealthy one, on the
//     channel Events returns, in order; Exited only after Stop or
//     Shutdown.
//   - Stop ends a started instance and returns once it is gone; for an
//     instance it does not run (or that already ended on its own) it
//     returns an error wrapping executor.ErrInstanceNotFound.
//   - CancelStart makes a Run still preparing the instance return an
//     error; it does nothing to a started or unknown instance.
//   - Shutdown stops every instance (each gets its Exited event) and makes
//     later Runs fail.
type Executor interface {
	Run(spec executor.InstanceSpec) (*models.NetInfo, error)
	Stop(instanceGuid string) error
	CancelStart(instanceGuid string)
	Events() <-chan executor.Event
	Shutdown()
	// StopTimeout bounds how long Stop takes once it signalled the
	// instance; an evacuation that timed out waits for it.
	StopTimeout() time.Duration
	// TakeHealth returns, per definition, what its instances' health
	// checks did since the previous call and a memory sample of each
	// instance running now (see rep/executor's TakeHealth).
	TakeHealth() []*models.DefinitionHealth
	// SetMaxAssetDownloads sets how many asset downloads run at once, as
	// the board's heartbeat answers say (0: no limit).
	SetMaxAssetDownloads(n int32)
}

// The executor of a real cell is an Executor.
var _ Executor = (*executor.Executor)(nil)
