package testdb

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
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

	// privateServer's dir is the cluster: data directory, unix socket,
	// server.log.
	privateServer
	bindir string // where initdb, pg_ctl and postgres are

	running bool
	// stopped holds the pids Freeze sent SIGSTOP, so Thaw continues every
	// one of them even if one has been reparented since.
	stopped []int
}

// postgresKind is what the shared code needs to know of PrivatePostgres.
var postgresKind = serverKind{
	name:       "private postgres",
	user:       "postgres",
	noUser:     "running as root, and initdb/pg_ctl refuse root, but there is no \"postgres\" system user to run them as",
	dirPattern: "corkboard-pg-",
	dirOption:  "-D",
	// PGDATA, PGPORT, PGHOST, PGOPTIONS... would point pg_ctl or the
	// server at the caller's idea of a database rather than this one.
	envPrefixes: []string{"PG"},
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
	server, port, err := newPrivateServer(postgresKind)
	if err != nil {
		return nil, err
	}
	p := &PrivatePostgres{
		DSN:           fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		Port:          port,
		privateServer: server,
		bindir:        bindir,
	}
	if err := p.setUp(p.initCluster, p.Start, p.Close); err != nil {
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
	// UTF8 and a C.UTF-8 locale whatever the caller's environment says:
	// CreateOn makes ICU databases from template0, which a SQL_ASCII
	// cluster (what initdb picks under LANG=C or no LANG) refuses.
	out, err := p.run("initdb", "-D", p.dir, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions")
	if err != nil {
		return fmt.Errorf("private postgres: initdb%s: %w\n%s", p.reachHint(), err, out)
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
func (p *PrivatePostgres) Start() error { return p.start(p) }

// Stop stops the server (pg_ctl stop -m fast), thawing it first if it is
// frozen: a stopped postmaster cannot act on pg_ctl's shutdown signal.
func (p *PrivatePostgres) Stop() error { return p.stop(p) }

// Restart is Stop then Start.
func (p *PrivatePostgres) Restart() error { return p.restart(p) }

// Freeze sends SIGSTOP to the postmaster and every one of its children
// (backends, checkpointer, walwriter...). The kernel still completes TCP
// handshakes on the listening socket, so the server looks like one that
// hangs while accepting connections, not like one that is down.
func (p *PrivatePostgres) Freeze() error { return p.freeze(p) }

// Thaw sends SIGCONT to every process Freeze stopped and to any child of the
// postmaster started since.
func (p *PrivatePostgres) Thaw() error { return p.thaw(p) }

// Close stops the server if it is running (thawing it first) and removes its
// directory. Safe to call twice.
func (p *PrivatePostgres) Close() error { return p.close(p) }

// The serverProcess methods, for privateServer.

func (p *PrivatePostgres) isRunning() bool { return p.running }

func (p *PrivatePostgres) launch() error {
	logPath := filepath.Join(p.dir, "server.log")
	out, err := p.run("pg_ctl", "-D", p.dir, "-l", logPath, "-w", "-t", "30", "start")
	if err != nil {
		return fmt.Errorf("private postgres: pg_ctl start on port %d: %w\n%s\nserver.log:\n%s", p.Port, err, out, tailOf(logPath, 20))
	}
	p.running = true
	return nil
}

func (p *PrivatePostgres) shutdown() error {
	out, err := p.run("pg_ctl", "-D", p.dir, "-m", "fast", "-w", "-t", "30", "stop")
	if err != nil {
		return fmt.Errorf("private postgres: pg_ctl stop: %w\n%s", err, out)
	}
	p.running = false
	return nil
}

// stopFirst stops the postmaster: once it is stopped it cannot fork a child
// that stopRest's scan would miss.
func (p *PrivatePostgres) stopFirst() error {
	pm, err := p.postmasterPid()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pm, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("private postgres: SIGSTOP postmaster %d: %w", pm, err)
	}
	p.stopped = []int{pm}
	return nil
}

func (p *PrivatePostgres) stopRest() error {
	pm := p.stopped[0]
	// Wait until the postmaster is really stopped, so that it is not
	// halfway through a fork while the children are listed.
	if err := p.waitStopped(pm); err != nil {
		return err
	}
	children, err := childrenOf(pm)
	if err != nil {
		return fmt.Errorf("private postgres: %w", err)
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
		if err := p.waitStopped(pid); err != nil {
			return err
		}
	}
	return nil
}

func (p *PrivatePostgres) resume() error {
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
	p.stopped = nil
	return firstErr
}

// killLeftovers kills a postmaster still there after Stop: pg_ctl stop
// failed, or a pg_ctl start gave up waiting on a server that came up later.
// No test may leave a server behind. postmasterPid only names a live
// postgres running on this directory (after a clean stop there is no
// postmaster.pid at all).
func (p *PrivatePostgres) killLeftovers() {
	if pm, err := p.postmasterPid(); err == nil {
		children, _ := childrenOf(pm)
		for _, pid := range append([]int{pm}, children...) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	p.running = false
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
	args, err := processArgs(pid)
	if err != nil {
		return 0, fmt.Errorf("private postgres: postmaster %d: %w", pid, err)
	}
	if !hasDirOption(args, p.kind.dirOption, p.dir) {
		return 0, fmt.Errorf("private postgres: pid %d in postmaster.pid is not a postgres on %s (%q)", pid, p.dir, args)
	}
	return pid, nil
}

// run runs one of the server binaries (see privateServer.command) and
// returns its combined output.
func (p *PrivatePostgres) run(name string, args ...string) ([]byte, error) {
	return p.command(filepath.Join(p.bindir, name), args...).CombinedOutput()
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
		if !isExecutable(filepath.Join(dir, name)) {
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
