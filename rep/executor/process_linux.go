package executor

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// childProcAttr puts the instance in its own process group, so Stop
// reaches everything it started, and has the kernel SIGKILL it when the
// rep dies, so a killed rep leaves no orphan.
//
// Pdeathsig fires when the thread that started the child exits, not the
// process. The Go runtime only ends a thread when a goroutine locked to it
// returns, and Run does not lock its thread, so in practice it fires when
// the rep dies. It reaches only the direct child; NewExecutor kills what
// is left of earlier groups (see reapLeftovers).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// processStartTime is when pid started, in clock ticks since boot (field
// 22 of /proc/<pid>/stat). An error wrapping os.ErrNotExist means no such
// process.
func processStartTime(pid int) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// the fields after it are plain.
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(data[end+1:]))
	// fields[0] is field 3 (state), so field 22 is fields[19].
	if len(fields) < 20 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}
