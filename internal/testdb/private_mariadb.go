package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// ErrNoMariaDBBinaries is wrapped by StartPrivateMariaDB's error when the
// MariaDB server binaries (mariadbd, mariadb-install-db) are not installed,
// so a test can tell "this machine has no MariaDB" from "MariaDB is broken".
var ErrNoMariaDBBinaries = errors.New("no MariaDB server binaries found")

// PrivateMariaDB is a MariaDB server of its own, on a temporary data
// directory and a free loopback port: what PrivatePostgres is for Postgres.
//
// Tests that stop, restart or freeze a database use one of these rather than
// the shared server named by CORKBOARD_MYSQL_DSN, which belongs to the
// machine and to every other test running on it. Everything here signals
// only the mariadbd this value started (its own child) and checks that the
// process runs on dir before killing it.
//
// A PrivateMariaDB is not safe for concurrent use by several goroutines;
// connections to it are.
type PrivateMariaDB struct {
	// DSN connects as root (no password) with no default database:
	// root@tcp(127.0.0.1:PORT)/
	DSN  string
	Port int

	// privateServer's dir is the data directory; it also holds the
	// socket, pid file and server.log.
	privateServer
	mariadbd  string // path of the server binary
	installDB string // path of mariadb-install-db
	// extraArgs end mariadbd's command line at each start: what a
	// Galera node adds (see galera.go); none for a plain server.
	extraArgs []string

	// server is the running mariadbd, nil when stopped. It is this
	// process's child, so its pid cannot be reused by another process
	// before exited is closed (the child is reaped only then).
	server *os.Process
	exited chan struct{} // closed once server has exited and been reaped
}

// mariadbKind is what the shared code needs to know of PrivateMariaDB.
var mariadbKind = serverKind{
	name:       "private mariadb",
	user:       "mysql",
	noUser:     "running as root, and mariadbd refuses root, but there is no \"mysql\" system user to run it as",
	dirPattern: "corkboard-mariadb-",
	dirOption:  "--datadir=",
	// MYSQL_TCP_PORT, MYSQL_UNIX_PORT, MYSQL_HOME... would point the
	// binaries at the caller's idea of a server.
	envPrefixes: []string{"MYSQL_", "MARIADB_"},
}

// StartPrivateMariaDB creates a data directory in a new temporary directory
// (mariadb-install-db, root without a password) and starts mariadbd on it,
// listening on 127.0.0.1 only, on a free port, waiting until it answers a
// query. When the process runs as root, the binaries run as the "mysql"
// system user and the directory is owned by that user.
func StartPrivateMariaDB() (*PrivateMariaDB, error) {
	p, err := newPrivateMariaDB(mariadbKind)
	if err != nil {
		return nil, err
	}
	if err := p.setUp(p.installDataDir, p.Start, p.Close); err != nil {
		return nil, err
	}
	return p, nil
}

// newPrivateMariaDB finds the binaries and makes the directory and port of
// a server of kind, neither installed nor started.
func newPrivateMariaDB(kind serverKind) (*PrivateMariaDB, error) {
	mariadbd, installDB, err := findMariaDBBinaries()
	if err != nil {
		return nil, err
	}
	server, port, err := newPrivateServer(kind)
	if err != nil {
		return nil, err
	}
	return &PrivateMariaDB{
		DSN:           fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port),
		Port:          port,
		privateServer: server,
		mariadbd:      mariadbd,
		installDB:     installDB,
	}, nil
}

// AdminDSN is DSN (what testdb.CreateOn wants as an admin DSN: it creates
// the database, then names it in the DSN's path).
func (p *PrivateMariaDB) AdminDSN() string { return p.DSN }

// storageOptions are the mariadbd settings both the bootstrap
// (mariadb-install-db passes them on to mariadbd --bootstrap) and every
// start use, so that the server never resizes its redo log on start.
//
// The data is thrown away after the test, so durability against an
// operating system crash buys nothing: commits are written to the log
// but not fsynced (flush_log_at_trx_commit=2, which still survives the
// server being killed) and there is no doublewrite buffer. The buffer pool
// and the redo log are small: the default 96 MB log file alone takes
// longer to create than the rest of the bootstrap.
//
// No io_uring or native AIO: InnoDB then does its I/O on ordinary threads
// of mariadbd, which SIGSTOP stops with the rest of the process, so a
// frozen server does nothing at all.
var storageOptions = []string{
	"--skip-log-bin",
	"--innodb-buffer-pool-size=32M",
	"--innodb-log-file-size=16M",
	"--innodb-flush-log-at-trx-commit=2",
	"--innodb-doublewrite=0",
	"--innodb-use-native-aio=0",
}

// installDataDir runs mariadb-install-db on p.dir: system tables, and a
// root account (root@localhost, @127.0.0.1, @::1) with no password and
// normal (password) authentication, so that root can log in over TCP. The
// default, unix_socket authentication, would only let in the system user
// named root over the socket.
func (p *PrivateMariaDB) installDataDir() error {
	// --no-defaults first (the scripts insist): no /etc/mysql/my.cnf,
	// whose datadir, port and socket are the shared server's.
	args := append([]string{
		"--no-defaults",
		"--datadir=" + p.dir,
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
		// Grants by address rather than host name: no DNS lookup of
		// this machine's name during the bootstrap.
		"--skip-name-resolve",
	}, storageOptions...)
	out, err := p.command(p.installDB, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("private mariadb: mariadb-install-db%s: %w\n%s", p.reachHint(), err, out)
	}
	return nil
}

// serverArgs are mariadbd's arguments: the data directory, a TCP port on
// loopback only, and a socket and pid file inside the data directory, so
// that nothing meets the shared server's (/run/mysqld/...).
func (p *PrivateMariaDB) serverArgs() []string {
	args := []string{
		"--no-defaults", // must come first
		"--datadir=" + p.dir,
		"--port=" + strconv.Itoa(p.Port),
		"--bind-address=127.0.0.1",
		"--socket=" + filepath.Join(p.dir, "mysql.sock"),
		"--pid-file=" + filepath.Join(p.dir, "mysqld.pid"),
		"--skip-name-resolve",
		// What the shared server is configured with (MariaDB's own
		// default is latin1): code must meet the same character set
		// and collation here as there.
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_general_ci",
	}
	args = append(args, storageOptions...)
	return append(args, p.extraArgs...)
}

// Start starts mariadbd on the same directory and port, waiting until it
// answers a query (a few hundred milliseconds; at most 30 s, for crash
// recovery after a kill).
func (p *PrivateMariaDB) Start() error { return p.start(p) }

// Stop shuts the server down (SIGTERM: a normal shutdown that flushes
// everything) and waits until it has exited, thawing it first if it is
// frozen. A server still there after 30 s is killed.
func (p *PrivateMariaDB) Stop() error { return p.stop(p) }

// Restart is Stop then Start.
func (p *PrivateMariaDB) Restart() error { return p.restart(p) }

// Freeze sends SIGSTOP to mariadbd and waits until every one of its
// threads has stopped. mariadbd is one process with many threads (one per
// connection, InnoDB's), and SIGSTOP stops the whole thread group. The
// kernel still completes TCP handshakes on its listening socket, so the
// server looks like one that hangs, not like one that is down.
func (p *PrivateMariaDB) Freeze() error { return p.freeze(p) }

// Thaw sends SIGCONT to mariadbd: every thread runs again.
func (p *PrivateMariaDB) Thaw() error { return p.thaw(p) }

// Close stops the server if it is running (thawing it first, killing it if
// it does not stop) and removes its directory. Safe to call twice.
func (p *PrivateMariaDB) Close() error { return p.close(p) }

// The serverProcess methods, for privateServer.

func (p *PrivateMariaDB) isRunning() bool { return p.server != nil }

func (p *PrivateMariaDB) launch() error {
	logPath := filepath.Join(p.dir, "server.log")
	// The server's error log goes to its stderr (no --log-error), and
	// stderr to server.log, which this process opens: the file is then
	// written through the inherited descriptor whoever owns the directory.
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("private mariadb: %w", err)
	}
	defer logFile.Close() // the child has its own copy once started
	cmd := p.command(p.mariadbd, p.serverArgs()...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// If the test binary dies (a panic, go test's -timeout), the kernel
	// kills the server with it rather than leaving it running on a
	// directory nobody will remove. Go sets this after switching
	// credentials, so the switch to mysql does not clear it. (It fires
	// when the OS thread that started the child ends; Go ends a thread
	// only when a goroutine locked to it exits, which nothing here does.)
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("private mariadb: start mariadbd: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		// Reaps the child whenever it exits, so that it never lingers
		// as a zombie; shutdown and launch learn of the exit from the
		// channel.
		cmd.Wait()
		close(exited)
	}()
	p.server = cmd.Process
	p.exited = exited

	if err := p.waitReady(30 * time.Second); err != nil {
		// Not frozen (Freeze needs a running server, and Stop thaws),
		// so shutdown directly.
		stopErr := p.shutdown()
		return errors.Join(fmt.Errorf("private mariadb: mariadbd on port %d: %w\nserver.log:\n%s", p.Port, err, tailOf(logPath, 20)), stopErr)
	}
	return nil
}

// waitReady polls until the server answers SELECT @@datadir with p.dir.
// Checking the data directory, not just that something answers on the
// port: another process could have taken the port between
// freeLoopbackPort and mariadbd's bind, and must not pass for ours.
func (p *PrivateMariaDB) waitReady(limit time.Duration) error {
	db, err := sql.Open("mysql", p.DSN+"?timeout=1s&readTimeout=2s&writeTimeout=2s")
	if err != nil {
		return err
	}
	defer db.Close()
	want := []string{filepath.Clean(p.dir)}
	if real, err := filepath.EvalSymlinks(p.dir); err == nil {
		want = append(want, filepath.Clean(real))
	}
	deadline := time.Now().Add(limit)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return errors.New("exited while starting")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var datadir string
		lastErr = db.QueryRowContext(ctx, "SELECT @@datadir").Scan(&datadir)
		cancel()
		if lastErr == nil {
			for _, w := range want {
				if filepath.Clean(datadir) == w {
					return nil
				}
			}
			return fmt.Errorf("port %d answers with datadir %q, not %s: another server took the port", p.Port, datadir, p.dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("not answering after %v: %w", limit, lastErr)
}

// shutdown sends SIGTERM and waits for the exit; whatever happens, the
// server no longer counts as running afterwards (it is killed at worst).
func (p *PrivateMariaDB) shutdown() error {
	var errs []error
	// An error here is a server that already exited (crashed, say):
	// the wait below then returns at once.
	if err := p.server.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		errs = append(errs, fmt.Errorf("private mariadb: SIGTERM %d: %w", p.server.Pid, err))
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		errs = append(errs, fmt.Errorf("private mariadb: mariadbd %d still running 30 s after SIGTERM, killed", p.server.Pid))
		if err := p.kill(); err != nil {
			errs = append(errs, err)
		}
	}
	p.server = nil
	p.exited = nil
	return errors.Join(errs...)
}

// kill is shutdown's last resort: SIGKILL, only after checking that the
// pid still runs mariadbd on this data directory, then a wait for the exit.
func (p *PrivateMariaDB) kill() error {
	pid := p.server.Pid
	if !p.runsOnDir(pid) {
		return fmt.Errorf("private mariadb: not killing pid %d: it does not run with --datadir=%s", pid, p.dir)
	}
	if err := p.server.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("private mariadb: SIGKILL %d: %w", pid, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("private mariadb: mariadbd %d still there 10 s after SIGKILL", pid)
	}
}

// stopFirst stops mariadbd, every thread of it: there is no other process.
func (p *PrivateMariaDB) stopFirst() error {
	if err := p.server.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("private mariadb: SIGSTOP %d: %w", p.server.Pid, err)
	}
	return nil
}

// stopRest waits until every thread has taken the SIGSTOP, so that when
// Freeze returns no thread of the server runs and a test's next step cannot
// race one.
func (p *PrivateMariaDB) stopRest() error { return p.waitStopped(p.server.Pid) }

func (p *PrivateMariaDB) resume() error {
	if err := p.server.Signal(syscall.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("private mariadb: SIGCONT %d: %w", p.server.Pid, err)
	}
	return nil
}

// killLeftovers has nothing to do: mariadbd is this process's own child,
// which shutdown has already killed if it would not stop.
func (p *PrivateMariaDB) killLeftovers() {}

// findMariaDBBinaries finds mariadbd and mariadb-install-db on PATH or
// where distributions put them off a root-less PATH (/usr/sbin on Debian,
// /usr/libexec on Fedora).
func findMariaDBBinaries() (mariadbd, installDB string, err error) {
	mariadbd = findBinary("mariadbd", "/usr/sbin", "/usr/libexec", "/usr/local/mysql/bin")
	installDB = findBinary("mariadb-install-db", "/usr/bin", "/usr/local/mysql/scripts")
	if mariadbd == "" || installDB == "" {
		return "", "", fmt.Errorf("private mariadb: %w: need mariadbd and mariadb-install-db (install mariadb-server, e.g. apt-get install mariadb-server)", ErrNoMariaDBBinaries)
	}
	return mariadbd, installDB, nil
}

// findBinary is the path of name on PATH, else in the first of dirs that
// holds an executable of that name, else "".
func findBinary(name string, dirs ...string) string {
	if path, err := exec.LookPath(name); err == nil {
		return path
	}
	for _, dir := range dirs {
		path := filepath.Join(dir, name)
		if isExecutable(path) {
			return path
		}
	}
	return ""
}
