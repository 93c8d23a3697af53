package executor

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"code.cloudfoundry.org/lager/v3"
)

// A memoryGuard enforces instances' memory limits (a definition's
// memory_mb) on their process groups. MB here means MiB, 2^20 bytes, as
// memory_mb counts. Each instance gets one of two mechanisms:
//
// # cgroup v2
//
// When /sys/fs/cgroup is a cgroup v2 mount, the memory controller is
// enabled for the children of the rep's own cgroup (its
// cgroup.subtree_control lists "memory") and the rep may create cgroups
// there, the instance gets a cgroup of its own, <rep's cgroup>/corkboard-
// <instance guid>, with memory.max = memory_mb × 2^20 bytes, memory.swap.max
// = 0 (swap would let it hold more, out of sight), memory.oom.group = 1
// (the kernel kills the whole instance, not only its largest process),
// and its leader moved into it. The kernel then enforces the limit: it
// reclaims what it can (page cache counts, unlike below) and, when that is
// not enough, kills the instance. Exceeded reads memory.events: oom_kill
// above 0 means it was killed for memory. Only the leader is moved, so
// Watch must come right after the process starts, before it forks;
// processes it forked earlier stay outside the limit.
//
// Each step can fail (a cgroup v1 or hybrid host, a rep without
// delegation, a read-only /sys/fs/cgroup); then the instance falls back to
// the watchdog and the guard logs why, once. Note that the kernel lets a
// cgroup hold processes and enable controllers for its children at once
// only when it is the root of the hierarchy: a rep anywhere else (say a
// systemd service) finds "memory" missing from its cgroup.subtree_control
// and uses the watchdog.
//
// # Watchdog
//
// Everywhere else a single goroutine per guard, however many instances it
// watches, reads /proc every Interval (250ms by default): for every
// process, /proc/<pid>/stat gives its process group (field 5) and its
// resident set in pages (field 24). It sums the pages of each watched
// group, and when a group holds more than its limit it SIGKILLs the whole
// group and records why. Processes that vanish while it reads are
// skipped.
//
// For example, with a limit of 64 MB (67,108,864 bytes) and pages of
// 4 KiB: an instance whose leader has 9,000 resident pages (35.2 MB) and
// whose child has 8,000 (31.3 MB) holds 17,000 pages = 69,632,000 bytes =
// 66.4 MB > 64 MB, so the next pass kills the group, each process being
// under the limit on its own; Exceeded then says "exceeded its memory
// limit of 64 MB (resident 66.4 MB in 2 processes)".
//
// The watchdog is coarser than the kernel: an instance may go past its
// limit for up to an Interval before it is seen (and, growing fast, take
// much more in that time); pages that processes of the group share (after
// a fork, or shared memory) count once per process; and page cache does
// not count at all.
type memoryGuard struct {
	interval time.Duration
	logger   lager.Logger
	pageSize int64

	// cgroupParent is the rep's own cgroup, under which instances get
	// cgroups of their own; "" when they do not, for the reason in
	// noCgroup. Set once by newMemoryGuard.
	cgroupParent string
	// maxProcesses is pids.max of each instance's cgroup; 0 when there is
	// none to write (no limit asked, or no pids controller there).
	maxProcesses uint64
	noCgroup     string

	mu     sync.Mutex
	groups map[int]*memoryWatch // watched by the watchdog, by process group id
	closed bool

	stop chan struct{}
	done chan struct{} // closed when the watchdog's goroutine returns
	// passes counts the watchdog's reads of /proc, for tests.
	passes atomic.Int64
}

// memoryGuardConfig configures a memoryGuard.
type memoryGuardConfig struct {
	// Interval is how often the watchdog reads /proc. Zero means
	// defaultMemoryInterval.
	Interval time.Duration
	// CgroupRoot is where the cgroup v2 hierarchy is mounted: "" means
	// /sys/fs/cgroup, "-" never to use cgroups (the watchdog only).
	CgroupRoot string
	// Logger may be nil (logs nothing).
	Logger lager.Logger
	// MaxProcesses, when above 0, is written as pids.max of each
	// instance's cgroup v2 where the pids controller is enabled for the
	// children of the rep's cgroup: isolated instances' process limit on
	// a cgroup v2 host (a hybrid host enforces it in its v1 pids
	// controller instead, see rep/isolation).
	MaxProcesses uint64

	// selfCgroup is the file that names the rep's own cgroup; "" means
	// /proc/self/cgroup. Tests point it at a fake.
	selfCgroup string
}

// defaultMemoryInterval keeps the watchdog's cost low (see the benchmark
// in memory_test.go) while catching a growing instance within a quarter
// of a second.
const defaultMemoryInterval = 250 * time.Millisecond

// newMemoryGuard finds out, once, whether instances can get cgroups (and
// logs why not), and starts the watchdog's goroutine. Close stops it.
func newMemoryGuard(cfg memoryGuardConfig) *memoryGuard {
	if cfg.Interval <= 0 {
		cfg.Interval = defaultMemoryInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = lager.NewLogger("rep")
	}
	if cfg.selfCgroup == "" {
		cfg.selfCgroup = "/proc/self/cgroup"
	}
	g := &memoryGuard{
		interval: cfg.Interval,
		logger:   cfg.Logger.Session("memory-guard"),
		pageSize: int64(os.Getpagesize()),
		groups:   map[int]*memoryWatch{},
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	parent, err := detectMemoryCgroup(cfg.CgroupRoot, cfg.selfCgroup)
	if err != nil {
		g.noCgroup = err.Error()
		g.logger.Info("using-watchdog", lager.Data{"why_no_cgroups": g.noCgroup, "interval": g.interval.String()})
	} else {
		g.cgroupParent = parent
		if cfg.MaxProcesses > 0 && cgroupControllerEnabled(parent, "pids") {
			g.maxProcesses = cfg.MaxProcesses
		}
		g.logger.Info("using-cgroups", lager.Data{"parent": parent, "pids_max": g.maxProcesses})
	}
	go g.watchdog()
	return g
}

// memoryWatch is the limit of one instance, from Watch until Stop.
type memoryWatch struct {
	guard        *memoryGuard
	instanceGuid string
	pgid         int
	limitMB      int32
	limitBytes   int64
	mechanism    string
	// cgroupDir is the instance's cgroup, or "" when the watchdog (or
	// nothing) enforces its limit.
	cgroupDir string
	// watched is true when the watchdog watches the group.
	watched bool

	mu     sync.Mutex
	reason string // why it was killed; "" until it was
	// residentBytes and processes are what the watchdog saw last.
	residentBytes int64
	processes     int
	stopped       bool
}

// Watch starts enforcing limitMB on the process group pgid (the
// instance's leader's pid) of instanceGuid: in a cgroup when the guard can
// make one, with the watchdog otherwise. A limit of 0 or less enforces
// nothing. Call it right after the process starts, and Stop once it is
// reaped.
func (g *memoryGuard) Watch(instanceGuid string, pgid int, limitMB int32) (*memoryWatch, error) {
	if pgid <= 0 {
		return nil, fmt.Errorf("watching the memory of instance %s: bad process group %d", instanceGuid, pgid)
	}
	w := &memoryWatch{
		guard:        g,
		instanceGuid: instanceGuid,
		pgid:         pgid,
		limitMB:      limitMB,
		limitBytes:   int64(limitMB) << 20,
	}
	if limitMB <= 0 {
		w.mechanism = "none: no memory limit"
		return w, nil
	}
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("watching the memory of instance %s: the memory guard is closed", instanceGuid)
	}

	if g.cgroupParent != "" {
		dir, err := createInstanceCgroup(g.cgroupParent, instanceGuid, pgid, w.limitBytes, g.maxProcesses)
		if err == nil {
			w.cgroupDir = dir
			w.mechanism = "cgroup v2 memory.max"
			return w, nil
		}
		g.logger.Info("cgroup-failed-using-watchdog", lager.Data{
			"instance_guid": instanceGuid, "pgid": pgid, "limit_mb": limitMB, "error": err.Error(),
		})
	}

	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("watching the memory of instance %s: memory limits need Linux (cgroups or /proc)", instanceGuid)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, fmt.Errorf("watching the memory of instance %s: the memory guard is closed", instanceGuid)
	}
	if other, ok := g.groups[pgid]; ok {
		return nil, fmt.Errorf("watching the memory of instance %s: process group %d is already watched for instance %s", instanceGuid, pgid, other.instanceGuid)
	}
	g.groups[pgid] = w
	w.watched = true
	w.mechanism = fmt.Sprintf("watchdog: RSS of the process group every %s", g.interval)
	return w, nil
}

// Mechanism says how the limit is enforced, for logs: "cgroup v2
// memory.max", "watchdog: RSS of the process group every 250ms" or
// "none: no memory limit".
func (w *memoryWatch) Mechanism() string {
	return w.mechanism
}

// Exceeded reports whether the instance was killed for going past its
// limit, and why, for a person: "exceeded its memory limit of 64 MB
// (resident 66.4 MB in 2 processes)". It still answers after Stop.
func (w *memoryWatch) Exceeded() (reason string, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reason == "" && w.cgroupDir != "" && !w.stopped {
		w.checkCgroupLocked()
	}
	return w.reason, w.reason != ""
}

// checkCgroupLocked sets the reason when the kernel killed anything in
// the instance's cgroup for memory. w.mu must be held.
func (w *memoryWatch) checkCgroupLocked() {
	kills, err := cgroupOOMKills(w.cgroupDir)
	if err != nil || kills == 0 {
		return
	}
	w.reason = fmt.Sprintf("%s (the kernel's OOM killer killed %d %s in its cgroup)",
		exceededLimit(w.limitMB), kills, plural(int(kills), "process", "processes"))
}

// Stop ends the watch, once the process is reaped: the watchdog forgets
// the group (and kills nothing of it from now on), and the instance's
// cgroup, if any, is removed, killing whatever is left in it. Exceeded
// keeps its answer. Stopping twice does nothing.
func (w *memoryWatch) Stop() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.stopped = true
	if w.reason == "" && w.cgroupDir != "" {
		// The last look: memory.events goes with the cgroup.
		w.checkCgroupLocked()
	}
	w.mu.Unlock()

	g := w.guard
	if w.watched {
		g.mu.Lock()
		if g.groups[w.pgid] == w {
			delete(g.groups, w.pgid)
		}
		g.mu.Unlock()
	}
	if w.cgroupDir != "" {
		if err := removeInstanceCgroup(w.cgroupDir); err != nil {
			g.logger.Info("cgroup-not-removed", lager.Data{"instance_guid": w.instanceGuid, "cgroup": w.cgroupDir, "error": err.Error()})
		}
	}
}

// observe is the watchdog's look at the group: it holds pages resident
// pages in processes processes. Over the limit, it is killed.
func (w *memoryWatch) observe(pages int64, processes int) {
	resident := pages * w.guard.pageSize
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		// The process is reaped: its pgid may be someone else's soon.
		return
	}
	w.residentBytes, w.processes = resident, processes
	if resident <= w.limitBytes {
		return
	}
	if w.reason == "" {
		w.reason = fmt.Sprintf("%s (resident %.1f MB in %d %s)",
			exceededLimit(w.limitMB), float64(resident)/(1<<20), processes, plural(processes, "process", "processes"))
		w.guard.logger.Info("memory-limit-exceeded", lager.Data{
			"instance_guid": w.instanceGuid, "pgid": w.pgid, "reason": w.reason,
		})
	}
	// Again on every pass it is seen over: SIGKILL cannot be caught, but
	// a process forked after the first kill would be missed.
	_ = syscall.Kill(-w.pgid, syscall.SIGKILL)
}

// Close stops the watchdog's goroutine; Watch fails afterwards. Watches
// still need their Stop (to remove their cgroups).
func (g *memoryGuard) Close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	g.mu.Unlock()
	close(g.stop)
	<-g.done
}

func exceededLimit(limitMB int32) string {
	return fmt.Sprintf("exceeded its memory limit of %d MB", limitMB)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// memoryTarget is an instance whose memory in use is read: its process
// group, and its cgroup when it has one.
type memoryTarget struct {
	pgid      int
	cgroupDir string
}

// readMemoryInUse reads what each target holds now, in bytes, by process
// group: memory.current of its cgroup (page cache included, as the kernel
// counts it against memory.max), else the resident pages of its group's
// processes from one pass over procDir (as the watchdog counts them). A
// target whose memory cannot be read is absent.
func readMemoryInUse(procDir string, pageSize int64, targets []memoryTarget) map[int]int64 {
	inUse := map[int]int64{}
	scanned := map[int]*memoryWatch{}
	for _, t := range targets {
		if t.cgroupDir != "" {
			if bytes, err := cgroupMemoryCurrent(t.cgroupDir); err == nil {
				inUse[t.pgid] = bytes
				continue
			}
		}
		scanned[t.pgid] = nil
	}
	if len(scanned) == 0 {
		return inUse
	}
	scan := newProcScan(procDir)
	if err := scan.run(scanned); err != nil {
		return inUse
	}
	for pgid := range scanned {
		if usage, ok := scan.usage[pgid]; ok && usage.processes > 0 {
			inUse[pgid] = usage.pages * pageSize
		}
	}
	return inUse
}
