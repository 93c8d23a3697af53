package executor

import (
	"bytes"
	"os"
	"syscall"
	"time"
)

// watchdog is the guard's one goroutine: every interval, one pass over
// /proc for all the groups it watches, until Close.
func (g *memoryGuard) watchdog() {
	defer close(g.done)
	ticker := time.NewTicker(g.interval)
	defer ticker.Stop()
	scan := newProcScan("/proc")
	watched := map[int]*memoryWatch{}
	failing := false
	for {
		select {
		case <-g.stop:
			return
		case <-ticker.C:
		}

		// A copy, so Watch and Stop need not wait for the pass.
		clear(watched)
		g.mu.Lock()
		for pgid, w := range g.groups {
			watched[pgid] = w
		}
		g.mu.Unlock()
		if len(watched) == 0 {
			continue
		}

		if err := scan.run(watched); err != nil {
			if !failing {
				g.logger.Error("reading-proc-failed", err)
			}
			failing = true
			continue
		}
		if failing {
			g.logger.Info("reading-proc-again")
			failing = false
		}
		g.passes.Add(1)
		for pgid, w := range watched {
			usage := scan.usage[pgid]
			w.observe(usage.pages, usage.processes)
		}
	}
}

// groupUsage is what one pass saw of a process group.
type groupUsage struct {
	pages     int64 // resident pages, summed over its processes
	processes int
}

// procScan reads /proc for the watchdog. It keeps its buffers from one
// pass to the next: the watchdog runs all the time, on cells that may run
// a hundred instances or more.
type procScan struct {
	procDir string
	buf     []byte
	usage   map[int]groupUsage // by process group, watched groups only
	// procs and groupOf are one pass's processes, kept to be reused.
	procs   map[int]procStat
	groupOf map[int]int
}

// procStat is what a pass reads of one process.
type procStat struct {
	ppid, pgrp int
	pages      int64
}

func newProcScan(procDir string) *procScan {
	return &procScan{
		procDir: procDir,
		// A stat line is a few hundred bytes; the fields read here come
		// early in it, so a longer one cut short would do as well.
		buf:     make([]byte, 2048),
		usage:   map[int]groupUsage{},
		procs:   map[int]procStat{},
		groupOf: map[int]int{},
	}
}

// run does one pass: it sums the resident pages of the processes of each
// watched group into s.usage. A process belongs to a group when it is in
// it, or when its parent does: a child that left the instance's process
// group (setsid) is still the instance's, and one whose parent died is
// the child of the instance's init, its namespace's PID 1 (an isolated
// instance), and counts with it. Only listing /proc can fail a pass; a
// process that ends while it is read is skipped.
func (s *procScan) run(watched map[int]*memoryWatch) error {
	clear(s.usage)
	clear(s.procs)
	clear(s.groupOf)
	dir, err := os.Open(s.procDir)
	if err != nil {
		return err
	}
	// Readdirnames, not ReadDir: no sorting, no stat of each entry.
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return err
	}
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue // not a process: "self", "meminfo", ...
		}
		ppid, pgrp, pages, ok := s.readStat(name)
		if !ok {
			continue
		}
		pid, ok := parseDecimal([]byte(name))
		if !ok {
			continue
		}
		s.procs[int(pid)] = procStat{ppid: ppid, pgrp: pgrp, pages: pages}
	}
	for pid, p := range s.procs {
		group := s.group(pid, watched, 0)
		if group == 0 {
			continue
		}
		u := s.usage[group]
		u.pages += p.pages
		u.processes++
		s.usage[group] = u
	}
	return nil
}

// maxAncestry bounds the walk up a process's parents: process trees are
// shallow, and a pid reused within a pass could make a loop.
const maxAncestry = 64

// group is the watched group process pid counts with, or 0: its own
// process group if watched, else its parent's group.
func (s *procScan) group(pid int, watched map[int]*memoryWatch, depth int) int {
	if g, ok := s.groupOf[pid]; ok {
		return g
	}
	p, ok := s.procs[pid]
	if !ok || depth > maxAncestry {
		return 0
	}
	group := 0
	if _, ok := watched[p.pgrp]; ok {
		group = p.pgrp
	} else if p.ppid > 1 && p.ppid != pid {
		group = s.group(p.ppid, watched, depth+1)
	}
	s.groupOf[pid] = group
	return group
}

// readStat reads the process group and resident pages of process pid
// (a name in /proc). It uses the syscalls directly because it runs for
// every process on every pass: os.Open would also try to register each
// file with the runtime's poller and give it a finalizer.
func (s *procScan) readStat(pid string) (ppid, pgrp int, pages int64, ok bool) {
	fd, err := syscall.Open(s.procDir+"/"+pid+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, 0, false // gone already
	}
	n, err := syscall.Read(fd, s.buf)
	syscall.Close(fd)
	if err != nil || n <= 0 {
		return 0, 0, 0, false // gone while read
	}
	return parseProcStat(s.buf[:n])
}

// parseProcStat takes the parent (field 4), the process group (field 5)
// and the resident set in pages (field 24) from a /proc/<pid>/stat line,
// such as
//
//	1234 (my app) S 1 1234 1234 0 -1 4194560 ... 20 0 1 0 8812 10743808 9000 ...
//
// The command name, field 2, is in parentheses and may hold spaces and
// parentheses of its own; everything after the last ')' is plain
// numbers, which it reads without allocating.
func parseProcStat(line []byte) (ppid, pgrp int, pages int64, ok bool) {
	end := bytes.LastIndexByte(line, ')')
	if end < 0 {
		return 0, 0, 0, false
	}
	rest := line[end+1:]
	// rest holds fields 3 (state) onwards, each after a space.
	field := 2
	for len(rest) > 0 && field < 24 {
		rest = bytes.TrimLeft(rest, " ")
		i := bytes.IndexByte(rest, ' ')
		if i < 0 {
			i = len(rest)
		}
		value := rest[:i]
		rest = rest[i:]
		field++
		switch field {
		case 4, 5:
			v, ok := parseDecimal(value)
			if !ok {
				return 0, 0, 0, false
			}
			if field == 4 {
				ppid = int(v)
			} else {
				pgrp = int(v)
			}
		case 24:
			v, ok := parseDecimal(value)
			if !ok {
				return 0, 0, 0, false
			}
			return ppid, pgrp, v, true
		}
	}
	return 0, 0, 0, false
}

// parseDecimal parses a non-negative decimal number, as strconv would,
// without the string it needs.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}
