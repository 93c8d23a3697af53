package executor

// Hooks for memory_test.go (package executor_test) into the memory guard,
// which is unexported until the executor uses it.

type (
	MemoryGuardConfig = memoryGuardConfig
	MemoryGuard       = memoryGuard
	MemoryWatch       = memoryWatch
)

func NewMemoryGuard(cfg MemoryGuardConfig) *MemoryGuard {
	return newMemoryGuard(cfg)
}

// NewMemoryGuardWithSelfCgroup makes a guard that reads the rep's own
// cgroup from selfCgroupFile instead of /proc/self/cgroup, for a fake
// cgroup tree.
func NewMemoryGuardWithSelfCgroup(cfg MemoryGuardConfig, selfCgroupFile string) *MemoryGuard {
	cfg.selfCgroup = selfCgroupFile
	return newMemoryGuard(cfg)
}

// CgroupParent is the cgroup under which instances get theirs, or "" and
// why not.
func (g *memoryGuard) CgroupParent() (dir, whyNot string) {
	return g.cgroupParent, g.noCgroup
}

// Passes counts the watchdog's passes over /proc so far.
func (g *memoryGuard) Passes() int64 {
	return g.passes.Load()
}

// LastSeen is what the watchdog saw of the group on its last pass.
func (w *memoryWatch) LastSeen() (residentBytes int64, processes int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.residentBytes, w.processes
}

// CgroupDir is the instance's cgroup, "" for the watchdog.
func (w *memoryWatch) CgroupDir() string {
	return w.cgroupDir
}

// ProcScan is the watchdog's pass over /proc for a fixed set of groups,
// killing nothing, for tests and the benchmark.
type ProcScan struct {
	scan    *procScan
	watched map[int]*memoryWatch
}

func NewProcScan(pgids ...int) *ProcScan {
	p := &ProcScan{scan: newProcScan("/proc"), watched: map[int]*memoryWatch{}}
	for _, pgid := range pgids {
		p.watched[pgid] = nil
	}
	return p
}

// Pass reads /proc once, as the watchdog does on each tick.
func (p *ProcScan) Pass() error {
	return p.scan.run(p.watched)
}

// Seen is what the last pass saw of the group pgid.
func (p *ProcScan) Seen(pgid int) (pages int64, processes int) {
	u := p.scan.usage[pgid]
	return u.pages, u.processes
}

// ParseProcStat is parseProcStat.
func ParseProcStat(line string) (ppid, pgrp int, pages int64, ok bool) {
	return parseProcStat([]byte(line))
}
