package testdb

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// child is a process this one started and reaps: HAProxy in front of a
// Galera cluster or a Patroni pair, and the pair's etcd and Patronis.
type child struct {
	name   string
	proc   *os.Process
	exited chan struct{} // closed once it has exited and been reaped
}

// startChild starts cmd with its output appended to logPath. If the test
// binary dies, the kernel SIGKILLs the child with it (Pdeathsig, as
// PrivateMariaDB does).
func startChild(cmd *exec.Cmd, logPath string) (*child, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child has its own copy once started
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	c := &child{name: filepath.Base(cmd.Path), proc: cmd.Process, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// touch creates path if it is missing, leaving it as it is otherwise.
func touch(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

func (c *child) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// kill SIGKILLs the child and waits until it has been reaped.
func (c *child) kill() error {
	if err := c.proc.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGKILL %s %d: %w", c.name, c.proc.Pid, err)
	}
	select {
	case <-c.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s %d still there 10 s after SIGKILL", c.name, c.proc.Pid)
	}
}

// stop sends SIGTERM and waits for the exit, killing the child after limit.
func (c *child) stop(limit time.Duration) error {
	if err := c.proc.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGTERM %s %d: %w", c.name, c.proc.Pid, err)
	}
	select {
	case <-c.exited:
		return nil
	case <-time.After(limit):
		return errors.Join(fmt.Errorf("%s %d still running %v after SIGTERM, killed", c.name, c.proc.Pid, limit), c.kill())
	}
}
