package executor

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/isolation"
)

// instance is one process the executor started. Its fields up to mu are
// set by Run before the goroutines that use them start and never change.
type instance struct {
	processGuid  string
	index        int32
	instanceGuid string
	definitionId string

	hostPorts []uint32
	netInfo   *models.NetInfo
	dir       string
	log       *instanceLog
	output    *outputPipe
	cmd       *exec.Cmd
	pid       int
	// ident is the instance's own uid, gid and cgroup when instances are
	// isolated, nil otherwise; proc is its init once started.
	ident     *isolation.Identity
	proc      *isolation.Process
	startedAt time.Time
	// memory enforces memory_mb once the process started; nil without a
	// limit.
	memory *memoryWatch
	// startBegan is when Run was called: the start timeout counts from
	// then, downloads and setup included.
	startBegan time.Time
	// preparation is how long downloads and setup took, for a timeout's
	// reason; zero for a definition that has neither.
	preparation time.Duration
	// cancelStart ends the start's preparation (see CancelStart).
	cancelStart  context.CancelCauseFunc
	cancelHealth context.CancelFunc
	monitorDone  chan struct{} // closed when monitor returns
	exited       chan struct{} // closed once the process is reaped
	done         chan struct{} // closed after the last event is queued

	// running is guarded by the executor's mu: false while Run is still
	// setting the instance up.
	running bool

	mu          sync.Mutex
	healthy     bool
	stopping    bool
	hasExited   bool
	crashReason string
	// unhealthyReason is set once the instance, healthy before, failed
	// its checks failure_threshold times in a row.
	unhealthyReason string
	// tally counts its checks once healthy, until the executor's next
	// TakeHealth (health_report.go).
	tally healthTally
	// failing is its latest check's failure, startup checks included;
	// zero once a check passes (noteCheck).
	failing failingCheck
}

func (i *instance) status() InstanceStatus {
	i.mu.Lock()
	defer i.mu.Unlock()
	return InstanceStatus{
		ProcessGuid:  i.processGuid,
		Index:        i.index,
		InstanceGuid: i.instanceGuid,
		DefinitionId: i.definitionId,
		Healthy:      i.healthy,
		Stopping:     i.stopping,
		NetInfo:      cloneNetInfo(i.netInfo),
		Pid:          i.pid,
		StartedAt:    i.startedAt,
	}
}

// markHealthy records the first passed health check and queues Healthy,
// unless the instance is stopping, crashing or gone: then it does nothing
// and reports false. Queuing under the lock keeps Healthy ahead of the
// instance's last event.
func (i *instance) markHealthy(events *eventQueue) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.healthy || i.stopping || i.hasExited || i.crashReason != "" {
		return false
	}
	i.healthy = true
	events.push(Event{
		InstanceGuid: i.instanceGuid,
		ProcessGuid:  i.processGuid,
		Index:        i.index,
		Kind:         Healthy,
		NetInfo:      cloneNetInfo(i.netInfo),
	})
	return true
}

// markUnhealthy records that the healthy instance failed its checks too
// often and queues Unhealthy, unless the instance is stopping or gone:
// then it does nothing and reports false. Queuing under the lock keeps
// Unhealthy ahead of the instance's last event.
func (i *instance) markUnhealthy(events *eventQueue, reason string) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.healthy || i.stopping || i.hasExited || i.unhealthyReason != "" {
		return false
	}
	i.unhealthyReason = reason
	events.push(Event{
		InstanceGuid: i.instanceGuid,
		ProcessGuid:  i.processGuid,
		Index:        i.index,
		Kind:         Unhealthy,
		Reason:       reason,
	})
	return true
}

// beginStop marks the instance stopping. It reports false when the
// process already exited on its own (a crash is on its way); a second Stop
// gets true and waits along with the first.
func (i *instance) beginStop() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.hasExited && !i.stopping {
		return false
	}
	i.stopping = true
	return true
}

// setCrashReason records why the executor kills the instance; it reports
// false when the instance is already stopping or gone.
func (i *instance) setCrashReason(reason string) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.stopping || i.hasExited || i.crashReason != "" {
		return false
	}
	i.crashReason = reason
	return true
}

// markExited records the exit and says whether it was asked for, and
// whether the executor had judged the instance unhealthy.
func (i *instance) markExited() (stopping bool, crashReason, unhealthyReason string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.hasExited = true
	return i.stopping, i.crashReason, i.unhealthyReason
}

// logLine writes a line of the rep's own into the instance's log, so a
// person reading it sees what happened to the process.
func (i *instance) logLine(format string, args ...any) {
	i.log.repLine(fmt.Sprintf(format, args...))
}

// closeLog closes the instance's log; later lines are dropped.
func (i *instance) closeLog() {
	i.log.Close()
}

func netInfo(address string, containerPorts, hostPorts []uint32) *models.NetInfo {
	info := &models.NetInfo{Address: address, InstanceAddress: address}
	for n, port := range containerPorts {
		info.Ports = append(info.Ports, &models.PortMapping{ContainerPort: port, HostPort: hostPorts[n]})
	}
	return info
}

func cloneNetInfo(info *models.NetInfo) *models.NetInfo {
	if info == nil {
		return nil
	}
	return proto.Clone(info).(*models.NetInfo)
}
