package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// cpuMeter measures the CPU time the board process and, on Postgres and
// MySQL, the database server's processes spend over one step, so that a
// figure says what an operation costs the servers and not only how fast
// it returned (on a loaded machine the rate mostly says how much CPU was
// left). The database's figure is the whole server's: on a server other
// clients share, theirs too.
type cpuMeter struct {
	board    int // the board's pid
	database int // the Postgres postmaster's or the MySQL server's pid, 0 when unknown
	// threaded: the server is one process (MySQL), not a parent and its
	// backends (Postgres).
	threaded bool
}

// newCPUMeter finds the Postgres postmaster behind d (the parent of one of
// its backends) or the MySQL server (by its pid file, when it runs on this
// machine); otherwise only the board is measured.
func newCPUMeter(ctx context.Context, d *database, board int) cpuMeter {
	m := cpuMeter{board: board}
	switch d.driver {
	case "postgres":
		var backend int
		if err := d.conn.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
			return m
		}
		if stat, err := readStat(backend); err == nil {
			m.database = stat.ppid
		}
	case "mysql":
		var pidFile string
		if err := d.conn.QueryRowContext(ctx, "SELECT @@pid_file").Scan(&pidFile); err != nil {
			return m
		}
		raw, err := os.ReadFile(pidFile)
		if err != nil {
			return m // a server on another machine, or one whose files this user cannot read
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil {
			return m
		}
		if _, err := readStat(pid); err == nil {
			m.database, m.threaded = pid, true
		}
	}
	return m
}

// cpuSample is the CPU time spent so far.
type cpuSample struct{ board, database time.Duration }

func (m cpuMeter) sample() cpuSample {
	var s cpuSample
	if stat, err := readStat(m.board); err == nil {
		s.board = stat.cpu
	}
	if m.database == 0 {
		return s
	}
	if m.threaded {
		if stat, err := readStat(m.database); err == nil {
			s.database = stat.cpu
		}
		return s
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return s
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := readStat(pid)
		if err != nil {
			continue
		}
		// Exited backends' time is lost; the peer's backends live as long
		// as the board's pool does.
		if pid == m.database || stat.ppid == m.database {
			s.database += stat.cpu
		}
	}
	return s
}

// perOp is the CPU spent since before, per operation, as a figure's words.
func (m cpuMeter) perOp(before cpuSample, ops int) string {
	after := m.sample()
	line := fmt.Sprintf("board CPU %s/op", microseconds((after.board-before.board)/time.Duration(ops)))
	if m.database != 0 {
		line += fmt.Sprintf(", database CPU %s/op", microseconds((after.database-before.database)/time.Duration(ops)))
	}
	return line
}

func microseconds(d time.Duration) time.Duration { return d.Round(time.Microsecond) }

type procStat struct {
	ppid int
	cpu  time.Duration
}

// readStat reads a process's parent and CPU time (user + system) from
// /proc/PID/stat; the kernel counts in clock ticks of 1/100 s.
func readStat(pid int) (procStat, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name is in parentheses and may hold spaces.
	text := string(raw)
	fields := strings.Fields(text[strings.LastIndexByte(text, ')')+1:])
	if len(fields) < 13 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ppid, _ := strconv.Atoi(fields[1])
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return procStat{ppid: ppid, cpu: time.Duration(utime+stime) * 10 * time.Millisecond}, nil
}
