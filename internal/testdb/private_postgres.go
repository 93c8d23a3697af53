package testdb

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoPostgresBinaries is wrapped by StartPrivatePostgres's error when no
// PostgreSQL server binaries (initdb, pg_ctl, postgres) are installed, so a
// test can tell "this machine has no Postgres" from "Postgres is broken".
var ErrNoPostgresBinaries = errors.New("no PostgreSQL server binaries found")

// PrivatePostgres is a PostgreSQL server of its own, on a temporary directory
// and a free loopback port.
//
// Tests that stop, restart or freeze a database use one of these rather than
// the shared server named by CORKBOARD_POSTGRES_DSN: that server belongs to
// the machine and to every other test running on it, so it must never be
// stopped, signalled or reconfigured. Everything here acts only on the
// cluster in dir and on processes proven to run from it.
//
// A PrivatePostgres is not safe for concurrent use by several goroutines;
// connections to it are.
type PrivatePostgres struct {
	// DSN connects to its "postgres" database as the superuser, e.g.
	// postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable
	DSN  string
	Port int

	dir    string // the cluster: data directory, unix socket, server.log
	bindir string // where initdb, pg_ctl and postgres are
	// runAs, when set, is the user the server binaries run as: they refuse
	// to run as root, so a root process runs them as "postgres".
	runAs *syscall.Credential

	running bool
	frozen  bool
	// stopped holds the pids Freeze sent SIGSTOP, so Thaw continues every
	// one of them even if one has been reparented since.
	stopped []int
	closed  bool
}

// StartPrivatePostgres initdb's a cluster in a new temporary directory and
// starts it (pg_ctl -w), trust auth, listening on 127.0.0.1 only, on a free
// port. When the process runs as root, the binaries run as the "postgres"
// system user and the directory is owned by that user.
func StartPrivatePostgres() (*PrivatePostgres, error) {
	bindir, err := findPostgresBindir()
	if err != nil {
		return nil, err
	}
	var runAs *syscall.Credential
	if os.Geteuid() == 0 {
		runAs, err = postgresUser()
		if err != nil {
			return nil, err
		}
	}
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}

	dir, err := os.MkdirTemp("", "corkboard-pg-")
	if err != nil {
		return nil, fmt.Errorf("private postgres: %w", err)
	}
	p := &PrivatePostgres{
		DSN:    fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		Port:   port,
		dir:    dir,
		bindir: bindir,
		runAs:  runAs,
	}
	if err := p.initCluster(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := p.Start(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// AdminDSN is DSN (what testdb.CreateOn wants as an admin DSN).
func (p *PrivatePostgres) AdminDSN() string { return p.DSN }

// initCluster runs initdb on p.dir and writes the server's settings into its
// postgresql.conf, so that every later start (pg_ctl start, with no options)
// comes up the same way on the same port.
func (p *PrivatePostgres) initCluster() error {
	if p.runAs != nil {
		// initdb runs as postgres and must own the directory; MkdirTemp
		// made it root's, mode 0700.
		if err := os.Chown(p.dir, int(p.runAs.Uid), int(p.runAs.Gid)); err != nil {
			return fmt.Errorf("private postgres: chown %s to postgres: %w", p.dir, err)
		}
	}
	// UTF8 and a C.UTF-8 locale whatever the caller's environment says:
	// CreateOn makes ICU databases from template0, which a SQL_ASCII
	// cluster (what initdb picks under LANG=C or no LANG) refuses.
	out, err := p.run("initdb", "-D", p.dir, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions")
	if err != nil {
		hint := ""
		if p.runAs != nil {
			hint = " (user postgres must be able to reach " + p.dir + "; is $TMPDIR under a directory only root can enter?)"
		}
		return fmt.Errorf("private postgres: initdb%s: %w\n%s", hint, err, out)
	}
	// fsync off and small buffers: a start in well under a second, and the
	// data is thrown away anyway. listen_addresses keeps it off every
	// interface but loopback; the socket lives in the cluster so that it
	// never meets the shared server's socket in /var/run/postgresql.
	settings := fmt.Sprintf(`
# corkboard testdb.PrivatePostgres
port = %d
listen_addresses = '127.0.0.1'
unix_socket_directories = '%s'
fsync = off
shared_buffers = 16MB
max_connections = 100
`, p.Port, p.dir)
	f, err := os.OpenFile(filepath.Join(p.dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("private postgres: %w", err)
	}
	if _, err := f.WriteString(settings); err != nil {
		f.Close()
		return fmt.Errorf("private postgres: write postgresql.conf: %w", err)
	}
	return f.Close()
}

// Start starts the server again on the same directory and port, waiting
// until it accepts connections (-w).
func (p *PrivatePostgres) Start() error {
	if p.closed {
		return errors.New("private postgres: start after Close")
	}
	if p.running {
		return nil
	}
	logPath := filepath.Join(p.dir, "server.log")
	out, err := p.run("pg_ctl", "-D", p.dir, "-l", logPath, "-w", "-t", "30", "start")
	if err != nil {
		return fmt.Errorf("private postgres: pg_ctl start on port %d: %w\n%s\nserver.log:\n%s", p.Port, err, out, tailOf(logPath, 20))
	}
	p.running = true
	return nil
}

// Stop stops the server (pg_ctl stop -m fast), thawing it first if it is
// frozen: a stopped postmaster cannot act on pg_ctl's shutdown signal.
func (p *PrivatePostgres) Stop() error {
	if !p.running {
		return nil
	}
	if err := p.Thaw(); err != nil {
		return err
	}
	out, err := p.run("pg_ctl", "-D", p.dir, "-m", "fast", "-w", "-t", "30", "stop")
	if err != nil {
		return fmt.Errorf("private postgres: pg_ctl stop: %w\n%s", err, out)
	}
	p.running = false
	return nil
}

// Restart is Stop then Start.
func (p *PrivatePostgres) Restart() error {
	if err := p.Stop(); err != nil {
		return err
	}
	return p.Start()
}

// Freeze sends SIGSTOP to the postmaster and every one of its children
// (backends, checkpointer, walwriter...). The kernel still completes TCP
// handshakes on the listening socket, so the server looks like one that
// hangs while accepting connections, not like one that is down.
func (p *PrivatePostgres) Freeze() error {
	if p.frozen {
		return nil
	}
	if !p.running {
		return errors.New("private postgres: freeze: server is not running")
	}
	pm, err := p.postmasterPid()
	if err != nil {
		return err
	}
	// The postmaster first: once it is stopped it cannot fork a child
	// that the scan below would miss.
	if err := syscall.Kill(pm, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("private postgres: SIGSTOP postmaster %d: %w", pm, err)
	}
	p.stopped = []int{pm}
	p.frozen = true
	// A signal is delivered asynchronously: wait until the postmaster is
	// really stopped, so that it is not halfway through a fork while the
	// children are listed.
	if err := waitStopped(pm); err != nil {
		return err
	}
	children, err := childrenOf(pm)
	if err != nil {
		return err
	}
	for _, pid := range children {
		// A child that exited between the scan and now is no error.
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil && err != syscall.ESRCH {
			return fmt.Errorf("private postgres: SIGSTOP %d: %w", pid, err)
		}
		p.stopped = append(p.stopped, pid)
	}
	// And every child too, so that when Freeze returns nothing of the
	// server runs: a test's next step cannot race a backend that has not
	// yet taken its SIGSTOP.
	for _, pid := range children {
		if err := waitStopped(pid); err != nil {
			return err
		}
	}
	return nil
}

// waitStopped waits until the process is in state T (stopped), or gone: a
// child that exited before its SIGSTOP stays a zombie (Z) while the stopped
// postmaster cannot reap it.
func waitStopped(pid int) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		state, err := processStateOf(pid)
		if err != nil || state == "T" || state == "Z" || state == "X" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("private postgres: process %d still in state %s 5 s after SIGSTOP", pid, state)
		}
		time.Sleep(time.Millisecond)
	}
}

// processStateOf is the state letter from /proc/PID/stat (R, S, T, Z...).
func processStateOf(pid int) (string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	fields := statFieldsAfterComm(string(stat))
	if len(fields) < 1 {
		return "", fmt.Errorf("private postgres: unreadable /proc/%d/stat", pid)
	}
	return fields[0], nil
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

// Thaw sends SIGCONT to every process Freeze stopped and to any child of the
// postmaster started since.
func (p *PrivatePostgres) Thaw() error {
	if !p.frozen {
		return nil
	}
	pids := append([]int(nil), p.stopped...)
	if pm, err := p.postmasterPid(); err == nil {
		if children, err := childrenOf(pm); err == nil {
			pids = append(pids, children...)
		}
	}
	// Every pid even after an error: one process left stopped would hang
	// the server as surely as all of them.
	var firstErr error
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && err != syscall.ESRCH && firstErr == nil {
			firstErr = fmt.Errorf("private postgres: SIGCONT %d: %w", pid, err)
		}
	}
	p.frozen = false
	p.stopped = nil
	return firstErr
}

// Close stops the server if it is running (thawing it first) and removes its
// directory. Safe to call twice.
func (p *PrivatePostgres) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	stopErr := p.Stop()
	// A postmaster still there means pg_ctl stop failed, or a pg_ctl start
	// gave up waiting on a server that came up later: kill it, so that no
	// test leaves a server behind. postmasterPid only names a live
	// postgres running on this directory (after a clean stop there is no
	// postmaster.pid at all).
	if pm, err := p.postmasterPid(); err == nil {
		children, _ := childrenOf(pm)
		for _, pid := range append([]int{pm}, children...) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	p.running = false
	p.frozen = false
	if err := os.RemoveAll(p.dir); err != nil {
		return errors.Join(stopErr, fmt.Errorf("private postgres: remove %s: %w", p.dir, err))
	}
	return stopErr
}

// postmasterPid reads the postmaster's pid from the first line of
// postmaster.pid and checks that the process with that pid is a postgres
// running on this directory: a stale pid file whose pid has been reused must
// never lead to signalling someone else's process (the shared server above
// all).
func (p *PrivatePostgres) postmasterPid() (int, error) {
	data, err := os.ReadFile(filepath.Join(p.dir, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("private postgres: %w", err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("private postgres: bad postmaster.pid first line %q", first)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0, fmt.Errorf("private postgres: postmaster %d: %w", pid, err)
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-D" && filepath.Clean(args[i+1]) == filepath.Clean(p.dir) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("private postgres: pid %d in postmaster.pid is not a postgres on %s (%q)", pid, p.dir, args)
}

// childrenOf lists the processes whose parent is ppid, from /proc/*/stat.
func childrenOf(ppid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("private postgres: %w", err)
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

// run runs one of the server binaries in the cluster directory, as the
// postgres user when this process is root, and returns its combined output.
func (p *PrivatePostgres) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(p.bindir, name), args...)
	// The cluster directory as working directory: the caller's (a
	// checkout under /root, say) may be one the postgres user cannot enter.
	cmd.Dir = p.dir
	cmd.Env = environWithoutPG()
	if p.runAs != nil {
		// Switching uid/gid in the child directly, rather than through
		// runuser or su: no dependence on either being installed, and no
		// shell quoting of the arguments.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.runAs}
	}
	return cmd.CombinedOutput()
}

// environWithoutPG is the environment without PG* variables (PGDATA,
// PGPORT, PGHOST, PGOPTIONS...), which would otherwise point pg_ctl or the
// server at the caller's idea of a database rather than this one.
func environWithoutPG() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

// findPostgresBindir finds a directory holding initdb, pg_ctl and postgres:
// the one pg_config names, else the newest /usr/lib/postgresql/*/bin (Debian
// and Ubuntu keep them there, off PATH).
func findPostgresBindir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if hasServerBinaries(dir) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// Newest first by major version: 9.6 < 10 < 15, which a string sort
	// gets wrong.
	sort.Slice(dirs, func(i, j int) bool {
		return majorVersion(dirs[i]) > majorVersion(dirs[j])
	})
	for _, dir := range dirs {
		if hasServerBinaries(dir) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("private postgres: %w: need initdb, pg_ctl and postgres in `pg_config --bindir` or /usr/lib/postgresql/*/bin (install postgresql, e.g. apt-get install postgresql)", ErrNoPostgresBinaries)
}

func hasServerBinaries(dir string) bool {
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		if info, err := os.Stat(filepath.Join(dir, name)); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// majorVersion reads the version from /usr/lib/postgresql/VERSION/bin as a
// number ("9.6" → 9.6), 0 when it is not one.
func majorVersion(bindir string) float64 {
	v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(bindir)), 64)
	if err != nil {
		return 0
	}
	return v
}

// postgresUser is the credential of the "postgres" system user, which the
// server binaries run as when this process is root.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("private postgres: running as root, and initdb/pg_ctl refuse root, but there is no \"postgres\" system user to run them as: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("private postgres: user postgres: uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("private postgres: user postgres: gid %q: %w", u.Gid, err)
	}
	// No supplementary groups: root's must not carry over.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// freeLoopbackPort asks the kernel for a free port on 127.0.0.1. Another
// process could take it between Close and the server's bind; the start
// error then says so, and that race is rare enough for tests.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("private postgres: find a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, err
	}
	return port, nil
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
