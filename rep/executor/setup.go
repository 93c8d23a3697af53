package executor

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/isolation"
)

// Bounds of the output a failed setup's reason quotes: its last lines,
// enough to show the error without flooding the board.
const (
	setupReasonLines = 5
	setupReasonBytes = 1 << 10
)

// setupRun is what runSetup needs besides the instance.
type setupRun struct {
	spec InstanceSpec
	// base is where a relative setup path and dir resolve: the instance's
	// directory when the definition has assets, else the apps dir;
	// baseName says which, in errors.
	base, baseName string
	instanceURL    string
}

// runSetup runs the definition's setup action in the instance's directory
// with the instance's environment (see instanceEnv), its output into the
// instance's log, to completion. It runs in its own process group, which
// is killed when setup ends, when it runs past setup_timeout_ms, or when
// ctx ends (start timeout, CancelStart, Shutdown). A setup that does not
// exit 0 is an error quoting its last lines: "setup exited with code 2:
// npm ERR! missing script: build".
func (e *Executor) runSetup(ctx context.Context, inst *instance, run setupRun) error {
	def := run.spec.Definition
	setup := def.GetSetup()
	path, err := resolveExecutable("setup.path", run.base, run.baseName, setup.GetPath())
	if err != nil {
		return err
	}
	dir, err := resolveDir("setup.dir", run.base, inst.dir, setup.GetDir())
	if err != nil {
		return err
	}
	if ms := def.GetSetupTimeoutMs(); ms > 0 {
		timeout := models.Millis(ms)
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, setupTimeoutError{timeout})
		defer cancel()
	}

	// instanceEnv takes the run action's env from the definition; the
	// setup's own env stands in for it, the rest is the instance's.
	setupSpec := run.spec
	setupSpec.Definition = &models.LRPDefinition{DefinitionId: def.GetDefinitionId(), Action: setup}
	tail := &outputTail{limit: setupReasonBytes}
	// One writer for both: exec then gives them one pipe, which keeps the
	// order the setup wrote in.
	output := &setupOutput{log: inst.log, tail: tail}
	env := instanceEnv(envInputs{
		spec:        setupSpec,
		cellID:      e.cfg.CellID,
		home:        inst.dir,
		instanceURL: run.instanceURL,
		ports:       inst.netInfo.GetPorts(),
	})
	newCmd := func() *exec.Cmd {
		cmd := exec.Command(path, setup.GetArgs()...)
		cmd.Dir = dir
		cmd.Env = env
		cmd.Stdout = output
		cmd.Stderr = output
		cmd.SysProcAttr = childProcAttr()
		// A process that left the group may hold the pipe open; Wait
		// stops waiting for it this long after the setup exited.
		cmd.WaitDelay = outputDrainTimeout
		return cmd
	}

	inst.logLine("running setup %s", strings.Join(append([]string{path}, setup.GetArgs()...), " "))
	began := time.Now()
	var cmd *exec.Cmd
	var proc *isolation.Process
	if inst.ident != nil {
		// Setup is the app's code too: it runs isolated like the action.
		proc, err = inst.ident.Start(isolation.Action{Path: path, Args: setup.GetArgs(), Env: env, Dir: dir, WaitDelay: outputDrainTimeout},
			output, output, childProcAttr(), func(pid int) error {
				writePidFile(inst.dir, pid)
				return nil
			})
		if proc != nil {
			cmd = proc.Cmd()
		}
	} else {
		cmd, err = startCommand(newCmd)
	}
	if err != nil {
		removePidFile(inst.dir)
		return fmt.Errorf("setup: starting %s: %w", path, err)
	}
	pid := cmd.Process.Pid
	// So that the next rep on the data dir kills a setup this one left.
	writePidFile(inst.dir, pid)
	defer removePidFile(inst.dir)

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-waited:
		// Whatever it started in its group goes with it.
		signalGroup(pid, syscall.SIGKILL)
	case <-ctx.Done():
		signalGroup(pid, syscall.SIGKILL)
		<-waited
		return withOutput(interruption(ctx, "setup", ""), tail)
	}
	if errors.Is(waitErr, exec.ErrWaitDelay) {
		inst.logLine("setup's output still held open %s after it exited, by a process that left its group: closed the rep's end", outputDrainTimeout)
	}
	reason, ok := "", false
	if proc != nil {
		reason, ok = proc.Exit()
	}
	if state := cmd.ProcessState; state == nil || !state.Success() || (ok && reason != "exited with code 0") {
		if !ok {
			reason = describeExit(state, waitErr)
		}
		return withOutput(errors.New("setup "+reason), tail)
	}
	inst.logLine("setup finished in %s", formatDuration(time.Since(began)))
	return nil
}

// startAttempts bounds how often startCommand tries: its pauses add up
// to about 0.6s.
const startAttempts = 8

// startCommand starts the command newCmd makes. While the executable is
// busy (ETXTBSY) it tries again, with a fresh command, after a pause that
// doubles each time: a file the rep just wrote (an asset, or what setup
// made) stays busy while a process forked meanwhile, for another
// instance, still holds the descriptor it was written through, which
// that process inherited and keeps until it execs.
func startCommand(newCmd func() *exec.Cmd) (*exec.Cmd, error) {
	pause := 5 * time.Millisecond
	for attempt := 1; ; attempt++ {
		cmd := newCmd()
		err := cmd.Start()
		if err == nil || !errors.Is(err, syscall.ETXTBSY) || attempt == startAttempts {
			return cmd, err
		}
		time.Sleep(pause)
		pause *= 2
	}
}

// withOutput adds a setup's last lines to its error, keeping the error
// to unwrap.
func withOutput(err error, tail *outputTail) error {
	last := tail.lastLines(setupReasonLines)
	if last == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, last)
}

// setupOutput takes a setup's output into the instance's log and keeps
// its end for the reason of a failure.
type setupOutput struct {
	log  *instanceLog
	tail *outputTail
}

func (o *setupOutput) Write(p []byte) (int, error) {
	_, _ = o.log.Write(p)
	_, _ = o.tail.Write(p)
	return len(p), nil
}

// outputTail keeps the last limit bytes written to it.
type outputTail struct {
	limit int
	mu    sync.Mutex
	buf   []byte
}

func (t *outputTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if extra := len(t.buf) - t.limit; extra > 0 {
		t.buf = append(t.buf[:0], t.buf[extra:]...)
	}
	return len(p), nil
}

// lastLines is the last n non-blank lines kept, joined by " | " so that a
// reason stays one line: "fetching deps | error: no such package foo".
func (t *outputTail) lastLines(n int) string {
	t.mu.Lock()
	text := strings.ToValidUTF8(string(t.buf), "")
	t.mu.Unlock()
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
