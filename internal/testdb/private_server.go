package testdb

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What PrivatePostgres and PrivateMariaDB share: a temporary directory on a
// free loopback port, binaries run as a system user when this process is
// root, the Start/Stop/Freeze/Thaw/Close bookkeeping, and the /proc reading
// that tells when a frozen server has really stopped and whether a pid is
// one of ours. How each server is installed, started, stopped and signalled
// stays in its own file, behind serverProcess.

// serverKind is what tells the private servers apart in the shared code.
type serverKind struct {
	name string // how its errors begin: "private postgres"
	// user is the system user its binaries run as when this process is
	// root (they refuse to run as root); noUser says so, for the error
	// when there is no such user.
	user   string
	noUser string
	// dirPattern is os.MkdirTemp's pattern for its directory.
	dirPattern string
	// dirOption is how its command line names that directory: an option
	// whose value is the next argument ("-D"), or one ending in '=' whose
	// value is joined to it ("--datadir=").
	dirOption string
	// envPrefixes are the environment variables its binaries must not
	// see: they would point them at the caller's idea of a server.
	envPrefixes []string
}

// serverProcess is what each kind of private server does its own way;
// privateServer does the bookkeeping around it.
type serverProcess interface {
	// isRunning reports whether the server has been started and not
	// stopped since.
	isRunning() bool
	// launch starts the server on its directory and returns once it
	// serves. Only called when it is not running.
	launch() error
	// shutdown stops the running server, thawed, and waits until it has.
	shutdown() error
	// stopFirst sends SIGSTOP to the process Freeze stops first; once it
	// has, the server counts as frozen, so that Thaw continues it even if
	// stopRest fails.
	stopFirst() error
	// stopRest stops whatever stopFirst did not stop and waits until
	// nothing of the server runs.
	stopRest() error
	// resume sends SIGCONT to everything Freeze stopped.
	resume() error
	// killLeftovers is Close's last resort after Stop: it kills whatever
	// of the server still runs on its directory.
	killLeftovers()
}

// privateServer is the shared part of a private server, embedded in
// PrivatePostgres and PrivateMariaDB.
type privateServer struct {
	kind serverKind
	dir  string // the server's directory, removed by Close
	// runAs, when set, is the credential of kind.user, which every binary
	// runs as: this process is root.
	runAs *syscall.Credential

	frozen bool
	closed bool
}

// newPrivateServer makes the directory of a new private server, owned by
// kind.user when this process is root, and picks its port.
func newPrivateServer(kind serverKind) (privateServer, int, error) {
	var runAs *syscall.Credential
	if os.Geteuid() == 0 {
		var err error
		runAs, err = systemUser(kind)
		if err != nil {
			return privateServer{}, 0, err
		}
	}
	port, err := freeLoopbackPort(kind.name)
	if err != nil {
		return privateServer{}, 0, err
	}
	dir, err := os.MkdirTemp("", kind.dirPattern)
	if err != nil {
		return privateServer{}, 0, fmt.Errorf("%s: %w", kind.name, err)
	}
	if runAs != nil {
		// The binaries run as kind.user and must own the directory;
		// MkdirTemp made it root's, mode 0700.
		if err := os.Chown(dir, int(runAs.Uid), int(runAs.Gid)); err != nil {
			os.RemoveAll(dir)
			return privateServer{}, 0, fmt.Errorf("%s: chown %s to %s: %w", kind.name, dir, kind.user, err)
		}
	}
	return privateServer{kind: kind, dir: dir, runAs: runAs}, port, nil
}

// setUp runs initDir on the new directory, then start. On an error it
// leaves nothing behind: just the directory to remove when the server has
// never run, close (which also stops it) once it may have.
func (s *privateServer) setUp(initDir, start, close func() error) error {
	if err := initDir(); err != nil {
		os.RemoveAll(s.dir)
		return err
	}
	if err := start(); err != nil {
		close()
		return err
	}
	return nil
}

func (s *privateServer) start(sp serverProcess) error {
	if s.closed {
		return fmt.Errorf("%s: start after Close", s.kind.name)
	}
	if sp.isRunning() {
		return nil
	}
	return sp.launch()
}

// stop thaws the server first: a stopped process cannot act on the signal
// that shuts it down.
func (s *privateServer) stop(sp serverProcess) error {
	if !sp.isRunning() {
		return nil
	}
	if err := s.thaw(sp); err != nil {
		return err
	}
	return sp.shutdown()
}

func (s *privateServer) restart(sp serverProcess) error {
	if err := s.stop(sp); err != nil {
		return err
	}
	return s.start(sp)
}

func (s *privateServer) freeze(sp serverProcess) error {
	if s.frozen {
		return nil
	}
	if !sp.isRunning() {
		return fmt.Errorf("%s: freeze: server is not running", s.kind.name)
	}
	if err := sp.stopFirst(); err != nil {
		return err
	}
	s.frozen = true
	return sp.stopRest()
}

func (s *privateServer) thaw(sp serverProcess) error {
	if !s.frozen {
		return nil
	}
	s.frozen = false
	return sp.resume()
}

// close stops the server, kills what is left of it, and removes its
// directory. Safe to call twice.
func (s *privateServer) close(sp serverProcess) error {
	if s.closed {
		return nil
	}
	s.closed = true
	stopErr := s.stop(sp)
	sp.killLeftovers()
	s.frozen = false
	if err := os.RemoveAll(s.dir); err != nil {
		return errors.Join(stopErr, fmt.Errorf("%s: remove %s: %w", s.kind.name, s.dir, err))
	}
	return stopErr
}

// command is a binary of the server set up as every one of them runs:
// in the server's directory (the caller's working directory, a checkout
// under /root say, may be one kind.user cannot enter), without the
// kind.envPrefixes variables, and as kind.user when this process is root.
func (s *privateServer) command(path string, args ...string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.Dir = s.dir
	cmd.Env = environWithout(s.kind.envPrefixes)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if s.runAs != nil {
		// Switching uid/gid in the child directly, rather than through
		// runuser or su: no dependence on either being installed, and
		// no shell quoting of the arguments.
		cmd.SysProcAttr.Credential = s.runAs
	}
	return cmd
}

// reachHint is what to add to the error of a binary that failed on the
// directory: when it runs as another user, the likely cause.
func (s *privateServer) reachHint() string {
	if s.runAs == nil {
		return ""
	}
	return " (user " + s.kind.user + " must be able to reach " + s.dir + "; is $TMPDIR under a directory only root can enter?)"
}

// runsOnDir reports whether the process pid names this server's directory
// on its command line: the check that keeps a signal away from every
// other server, the machine's shared ones above all. A zombie has no
// command line, so it does not run on the directory either.
func (s *privateServer) runsOnDir(pid int) bool {
	args, err := processArgs(pid)
	return err == nil && hasDirOption(args, s.kind.dirOption, s.dir)
}

// processArgs is the command line of process pid, from /proc/PID/cmdline.
func processArgs(pid int) ([]string, error) {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"), nil
}

// hasDirOption reports whether args give option the value dir: as the next
// argument ("-D", dir), or joined when option ends in '=' ("--datadir="+dir).
func hasDirOption(args []string, option, dir string) bool {
	for i, arg := range args {
		value := ""
		if strings.HasSuffix(option, "=") {
			v, ok := strings.CutPrefix(arg, option)
			if !ok {
				continue
			}
			value = v
		} else {
			if arg != option || i+1 >= len(args) {
				continue
			}
			value = args[i+1]
		}
		if filepath.Clean(value) == filepath.Clean(dir) {
			return true
		}
	}
	return false
}

// waitStopped waits until every thread of pid is in state T (stopped), or
// the process is gone. A signal is delivered asynchronously and each thread
// stops on its own; a process that exited before its SIGSTOP stays a
// zombie (Z) while its stopped parent cannot reap it.
func (s *privateServer) waitStopped(pid int) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		running, err := runningThreads(pid)
		if err != nil || len(running) == 0 {
			return nil // gone (an exited process cannot run either)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: threads of %d not stopped 5 s after SIGSTOP: %v", s.kind.name, pid, running)
		}
		time.Sleep(time.Millisecond)
	}
}

// runningThreads lists the threads of pid not stopped, as "TID:STATE"
// (a single-threaded process has one, whose state is the process's).
func runningThreads(pid int) ([]string, error) {
	taskDir := fmt.Sprintf("/proc/%d/task", pid)
	entries, err := os.ReadDir(taskDir)
	if err != nil {
		return nil, err
	}
	var running []string
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join(taskDir, e.Name(), "stat"))
		if err != nil {
			continue // the thread exited since ReadDir
		}
		fields := statFieldsAfterComm(string(stat))
		if len(fields) < 1 {
			continue
		}
		if state := fields[0]; state != "T" && state != "Z" && state != "X" {
			running = append(running, e.Name()+":"+state)
		}
	}
	return running, nil
}

// childrenOf lists the processes whose parent is ppid, from /proc/*/stat.
func childrenOf(ppid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited since ReadDir
		}
		fields := statFieldsAfterComm(string(stat))
		if len(fields) < 2 {
			continue
		}
		if parent, err := strconv.Atoi(fields[1]); err == nil && parent == ppid {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// statFieldsAfterComm splits a /proc/PID/stat line after its "(comm)":
// comm may hold spaces and parentheses, so the fields are counted from the
// last ')'. The first is the state, the second the parent pid.
func statFieldsAfterComm(stat string) []string {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return nil
	}
	return strings.Fields(stat[end+1:])
}

// environWithout is this process's environment without the variables whose
// names begin with one of prefixes.
func environWithout(prefixes []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		dropped := false
		for _, prefix := range prefixes {
			if strings.HasPrefix(kv, prefix) {
				dropped = true
				break
			}
		}
		if !dropped {
			env = append(env, kv)
		}
	}
	return env
}

// systemUser is the credential of kind.user, which the binaries run as
// when this process is root.
func systemUser(kind serverKind) (*syscall.Credential, error) {
	u, err := user.Lookup(kind.user)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", kind.name, kind.noUser, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%s: user %s: uid %q: %w", kind.name, kind.user, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%s: user %s: gid %q: %w", kind.name, kind.user, u.Gid, err)
	}
	// No supplementary groups: root's must not carry over.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// freeLoopbackPort asks the kernel for a free port on 127.0.0.1. Another
// process could take it between Close and the server's bind; the start
// error then says so, and that race is rare enough for tests.
func freeLoopbackPort(name string) (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("%s: find a free port: %w", name, err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, err
	}
	return port, nil
}

// isExecutable reports whether path is a file someone may execute.
func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
}

// tailOf returns the last n lines of a file, for error messages.
func tailOf(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
