//go:build !linux

package executor

import (
	"errors"
	"syscall"
)

// childProcAttr puts the instance in its own process group, so Stop
// reaches everything it started. Only Linux can tie the child's life to
// the rep's (Pdeathsig); elsewhere NewExecutor kills what an earlier rep
// left behind (see reapLeftovers).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// processStartTime is unknown without /proc, so leftovers are left alone.
func processStartTime(pid int) (uint64, error) {
	return 0, errors.New("process start times need /proc")
}
