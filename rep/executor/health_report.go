package executor

import (
	"cmp"
	"os"
	"slices"
	"time"

	"github.com/corkboard/corkboard/models"
)

// What the executor tells the rep's health reports (TakeHealth): per
// definition, the health checks its instances ran once healthy since the
// previous take, and what each running instance holds in memory now.
//
// The checks an instance runs while it starts are not counted: they fail
// until it listens, and that wait is its time to ready, which the board
// measures on its own. Failures counted here are those of an instance
// that had been healthy. What the latest check said when it failed is
// reported for every running instance, starting or healthy: an instance
// whose startup checks keep failing shows why before its start timeout
// makes it a crash.

// healthTally is what an instance's checks did since the last take.
type healthTally struct {
	checks, failures int64
	// latency counts the checks by models.HealthLatencyBucketsMs, with
	// the +Inf bucket last.
	latency []int64
}

func (t *healthTally) add(other healthTally) {
	t.checks += other.checks
	t.failures += other.failures
	t.latency = models.AddBucketCounts(t.latency, other.latency)
}

// recordCheck counts one check of a healthy instance that took took.
func (i *instance) recordCheck(took time.Duration, failed bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.tally.latency == nil {
		i.tally.latency = make([]int64, len(models.HealthLatencyBucketsMs)+1)
	}
	i.tally.checks++
	if failed {
		i.tally.failures++
	}
	i.tally.latency[models.BucketOf(models.HealthLatencyBucketsMs, took.Milliseconds())]++
}

// takeTally returns what the instance's checks did since the last take
// and starts counting again.
func (i *instance) takeTally() healthTally {
	i.mu.Lock()
	defer i.mu.Unlock()
	t := i.tally
	i.tally = healthTally{}
	return t
}

// failingCheck is an instance's latest check, when it failed: what it
// said (checkOutput), when it ran, and when the first of the checks
// failing in a row up to it ran. The zero value: the latest check passed,
// or none ran yet.
type failingCheck struct {
	output    string
	at, since time.Time
}

// noteCheck records the outcome of a check of the instance that began at
// began, startup checks included: a failure becomes its failing check
// (since stays that of the first failure in a row), a pass clears it.
func (i *instance) noteCheck(began time.Time, err error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if err == nil {
		i.failing = failingCheck{}
		return
	}
	since := i.failing.since
	if since.IsZero() {
		since = began
	}
	i.failing = failingCheck{output: checkOutput(err), at: began, since: since}
}

// failingNow is the instance's failing check, the zero value when its
// latest check passed.
func (i *instance) failingNow() failingCheck {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.failing
}

// healthKey is a definition of an LRP.
type healthKey struct {
	processGuid, definitionID string
}

// instanceKey is one instance (one start, by its guid) of a definition.
type instanceKey struct {
	healthKey
	index        int32
	instanceGuid string
}

func keyOf(inst *instance) instanceKey {
	return instanceKey{healthKey{inst.processGuid, inst.definitionId}, inst.index, inst.instanceGuid}
}

// TakeHealth returns, per definition of the instances it runs or ran
// since the previous call, the health checks they ran once healthy (how
// many, how many failed, by latency) since that call, and one memory
// sample per instance running now (what its process group holds:
// memory.current of its cgroup, else the resident pages of its
// processes); and the same per instance, each with its part of the
// checks, its own sample, and, when its latest check failed (a startup
// check too: an instance that never becomes healthy is reported), that
// failure. Counts are taken: the next call starts from zero. An instance
// whose memory cannot be read is not sampled.
// Definitions come sorted by process guid, then definition id; their
// instances by index, then instance guid.
func (e *Executor) TakeHealth() []*models.DefinitionHealth {
	e.mu.Lock()
	tallies := e.endedTallies
	e.endedTallies = map[instanceKey]healthTally{}
	var running []*instance
	for _, inst := range e.instances {
		if inst.running {
			running = append(running, inst)
		}
	}
	e.mu.Unlock()

	var targets []memoryTarget
	for _, inst := range running {
		key := keyOf(inst)
		t := tallies[key]
		t.add(inst.takeTally())
		tallies[key] = t
		inst.mu.Lock()
		exited := inst.hasExited
		inst.mu.Unlock()
		if !exited {
			target := memoryTarget{pgid: inst.pid}
			if inst.memory != nil {
				target.cgroupDir = inst.memory.cgroupDir
			}
			targets = append(targets, target)
		}
	}
	inUse := readMemoryInUse("/proc", int64(os.Getpagesize()), targets)

	byKey := map[healthKey]*models.DefinitionHealth{}
	byInstance := map[instanceKey]*models.InstanceHealth{}
	entry := func(key instanceKey) (*models.DefinitionHealth, *models.InstanceHealth) {
		h, ok := byKey[key.healthKey]
		if !ok {
			h = &models.DefinitionHealth{
				ProcessGuid: key.processGuid, DefinitionId: key.definitionID,
				LatencyBucketCounts: make([]int64, len(models.HealthLatencyBucketsMs)+1),
				MemoryBucketCounts:  make([]int64, len(models.MemoryBucketsMB)+1),
			}
			byKey[key.healthKey] = h
		}
		in, ok := byInstance[key]
		if !ok {
			in = &models.InstanceHealth{
				Index: key.index, InstanceGuid: key.instanceGuid,
				LatencyBucketCounts: make([]int64, len(models.HealthLatencyBucketsMs)+1),
			}
			byInstance[key] = in
			h.Instances = append(h.Instances, in)
		}
		return h, in
	}
	for key, t := range tallies {
		h, in := entry(key)
		h.Checks += int32(t.checks)
		h.CheckFailures += int32(t.failures)
		h.LatencyBucketCounts = models.AddBucketCounts(h.LatencyBucketCounts, t.latency)
		in.Checks += int32(t.checks)
		in.CheckFailures += int32(t.failures)
		in.LatencyBucketCounts = models.AddBucketCounts(in.LatencyBucketCounts, t.latency)
	}
	for _, inst := range running {
		f := inst.failingNow()
		if f.output == "" {
			continue
		}
		_, in := entry(keyOf(inst))
		in.LastCheckFailure, in.LastCheckFailureAt, in.CheckFailingSince = f.output, f.at.UnixNano(), f.since.UnixNano()
	}
	for _, inst := range running {
		bytes, ok := inUse[inst.pid]
		if !ok {
			continue
		}
		h, in := entry(keyOf(inst))
		// Rounded up: 100 KiB is in use, not 0 MB.
		mb := (bytes + 1<<20 - 1) >> 20
		h.MemoryBucketCounts[models.BucketOf(models.MemoryBucketsMB, mb)]++
		in.MemoryMb = &mb
	}
	out := make([]*models.DefinitionHealth, 0, len(byKey))
	for _, h := range byKey {
		h.Instances = models.ReportedInstances(h.Instances)
		// A definition whose instances ran no check, could not be
		// read and fail no check has nothing to say.
		if h.HasNews() {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b *models.DefinitionHealth) int {
		return cmp.Or(cmp.Compare(a.GetProcessGuid(), b.GetProcessGuid()), cmp.Compare(a.GetDefinitionId(), b.GetDefinitionId()))
	})
	return out
}

// keepEndedTallyLocked keeps what an instance that ended counted since the last
// take, for the next one. e.mu must be held.
func (e *Executor) keepEndedTallyLocked(inst *instance) {
	t := inst.takeTally()
	if t.checks == 0 {
		return
	}
	key := keyOf(inst)
	kept := e.endedTallies[key]
	kept.add(t)
	e.endedTallies[key] = kept
}
