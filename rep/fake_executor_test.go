package rep_test

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
	"github.com/corkboard/corkboard/rep/executor"
)

// fakeExecutor is the agent's executor in specs where only the agent's
// side of the seam matters: it runs nothing. Run records the spec and the
// instance becomes healthy at once (a Healthy event with made-up net
// info); Stop and Shutdown end it with Exited; Crash ends one with
// Crashed, as a process that died would. It keeps the executor's
// contract (see rep.Executor): one Crashed or Exited per started
// instance, Stop of an unknown instance an ErrInstanceNotFound.
type fakeExecutor struct {
	events chan executor.Event

	mu       sync.Mutex
	running  map[string]executor.InstanceSpec // by instance guid
	runs     []executor.InstanceSpec
	stops    []string
	cancels  []string
	shutDown bool
	health   []*models.DefinitionHealth
}

var _ rep.Executor = (*fakeExecutor)(nil)

func newFakeExecutor() *fakeExecutor {
	// Room for every event a spec makes: the agent drains it, and a full
	// channel would only hang a spec that went wrong.
	return &fakeExecutor{events: make(chan executor.Event, 1000), running: map[string]executor.InstanceSpec{}}
}

func (f *fakeExecutor) Run(spec executor.InstanceSpec) (*models.NetInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shutDown {
		return nil, fmt.Errorf("running %s: the executor is shutting down", spec.InstanceGuid)
	}
	if _, ok := f.running[spec.InstanceGuid]; ok {
		return nil, fmt.Errorf("instance %s is already running", spec.InstanceGuid)
	}
	f.running[spec.InstanceGuid] = spec
	f.runs = append(f.runs, spec)
	netInfo := fakeNetInfo(spec.Index)
	f.send(spec, executor.Healthy, "", netInfo)
	return netInfo, nil
}

func (f *fakeExecutor) Stop(instanceGuid string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops = append(f.stops, instanceGuid)
	spec, ok := f.running[instanceGuid]
	if !ok {
		return fmt.Errorf("stopping instance %s: %w", instanceGuid, executor.ErrInstanceNotFound)
	}
	delete(f.running, instanceGuid)
	f.send(spec, executor.Exited, "", nil)
	return nil
}

// CancelStart records the call; a fake Run never waits, so there is no
// start to cut short.
func (f *fakeExecutor) CancelStart(instanceGuid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels = append(f.cancels, instanceGuid)
}

func (f *fakeExecutor) Events() <-chan executor.Event { return f.events }

func (f *fakeExecutor) Shutdown() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shutDown = true
	for guid, spec := range f.running {
		delete(f.running, guid)
		f.send(spec, executor.Exited, "", nil)
	}
}

func (f *fakeExecutor) StopTimeout() time.Duration { return executor.DefaultStopTimeout }

func (f *fakeExecutor) SetMaxAssetDownloads(int32) {}

// Crash ends a running instance on its own, as a process that died: the
// agent gets Crashed with reason. It reports whether the instance ran.
func (f *fakeExecutor) Crash(instanceGuid, reason string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	spec, ok := f.running[instanceGuid]
	if ok {
		delete(f.running, instanceGuid)
		f.send(spec, executor.Crashed, reason, nil)
	}
	return ok
}

// Instances lists the specs of the instances running now (started, not
// yet stopped or crashed), in no order.
func (f *fakeExecutor) Instances() []executor.InstanceSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]executor.InstanceSpec, 0, len(f.running))
	for _, spec := range f.running {
		out = append(out, spec)
	}
	return out
}

// Running reports whether the instance runs.
func (f *fakeExecutor) Running(instanceGuid string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.running[instanceGuid]
	return ok
}

// Runs lists the specs Run was called with, in order.
func (f *fakeExecutor) Runs() []executor.InstanceSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.runs)
}

// Stops lists the instance guids Stop was called with, in order.
func (f *fakeExecutor) Stops() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.stops)
}

// send queues an event; f.mu is held, which keeps each instance's events
// in order.
func (f *fakeExecutor) send(spec executor.InstanceSpec, kind executor.EventKind, reason string, netInfo *models.NetInfo) {
	f.events <- executor.Event{
		InstanceGuid: spec.InstanceGuid, ProcessGuid: spec.ProcessGuid, Index: spec.Index,
		Kind: kind, Reason: reason, NetInfo: netInfo,
	}
}

// fakeNetInfo is a made-up address of an instance: a port per index.
func fakeNetInfo(index int32) *models.NetInfo {
	return &models.NetInfo{
		Address: "127.0.0.1",
		Ports:   []*models.PortMapping{{ContainerPort: 8080, HostPort: uint32(61000 + index)}},
	}
}

// TakeHealth returns what OfferHealth queued since the last call.
func (f *fakeExecutor) TakeHealth() []*models.DefinitionHealth {
	f.mu.Lock()
	defer f.mu.Unlock()
	taken := f.health
	f.health = nil
	return taken
}

// OfferHealth queues what the next TakeHealth returns, as if the
// instances had run those checks.
func (f *fakeExecutor) OfferHealth(health ...*models.DefinitionHealth) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.health = append(f.health, health...)
}
