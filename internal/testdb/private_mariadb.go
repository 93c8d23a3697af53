package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
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

	dir       string // data directory; also holds the socket, pid file and server.log
	mariadbd  string // path of the server binary
	installDB string // path of mariadb-install-db
	// runAs, when set, is the user the binaries run as: mariadbd refuses
	// to run as root, so a root process runs it as "mysql".
	runAs *syscall.Credential

	// server is the running mariadbd, nil when stopped. It is this
	// process's child, so its pid cannot be reused by another process
	// before exited is closed (the child is reaped only then).
	server *os.Process
	exited chan struct{} // closed once server has exited and been reaped
	frozen bool
	closed bool
}

// StartPrivateMariaDB creates a data directory in a new temporary directory
// (mariadb-install-db, root without a password) and starts mariadbd on it,
// listening on 127.0.0.1 only, on a free port, waiting until it answers a
// query. When the process runs as root, the binaries run as the "mysql"
// system user and the directory is owned by that user.
func StartPrivateMariaDB() (*PrivateMariaDB, error) {
	mariadbd, installDB, err := findMariaDBBinaries()
	if err != nil {
		return nil, err
	}
	var runAs *syscall.Credential
	if os.Geteuid() == 0 {
		runAs, err = mysqlUser()
		if err != nil {
			return nil, err
		}
	}
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "corkboard-mariadb-")
	if err != nil {
		return nil, fmt.Errorf("private mariadb: %w", err)
	}
	p := &PrivateMariaDB{
		DSN:       fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port),
		Port:      port,
		dir:       dir,
		mariadbd:  mariadbd,
		installDB: installDB,
		runAs:     runAs,
	}
	if err := p.installDataDir(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := p.Start(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
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
	if p.runAs != nil {
		// The bootstrap runs as mysql and must own the directory;
		// MkdirTemp made it root's, mode 0700.
		if err := os.Chown(p.dir, int(p.runAs.Uid), int(p.runAs.Gid)); err != nil {
			return fmt.Errorf("private mariadb: chown %s to mysql: %w", p.dir, err)
		}
	}
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
	cmd := exec.Command(p.installDB, args...)
	p.prepare(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		hint := ""
		if p.runAs != nil {
			hint = " (user mysql must be able to reach " + p.dir + "; is $TMPDIR under a directory only root can enter?)"
		}
		return fmt.Errorf("private mariadb: mariadb-install-db%s: %w\n%s", hint, err, out)
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
	return append(args, storageOptions...)
}

// Start starts mariadbd on the same directory and port, waiting until it
// answers a query (a few hundred milliseconds; at most 30 s, for crash
// recovery after a kill).
func (p *PrivateMariaDB) Start() error {
	if p.closed {
		return errors.New("private mariadb: start after Close")
	}
	if p.server != nil {
		return nil
	}
	logPath := filepath.Join(p.dir, "server.log")
	// The server's error log goes to its stderr (no --log-error), and
	// stderr to server.log, which this process opens: the file is then
	// written through the inherited descriptor whoever owns the directory.
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("private mariadb: %w", err)
	}
	defer logFile.Close() // the child has its own copy once started
	cmd := exec.Command(p.mariadbd, p.serverArgs()...)
	p.prepare(cmd)
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
		// as a zombie; Stop and Start learn of the exit from the channel.
		cmd.Wait()
		close(exited)
	}()
	p.server = cmd.Process
	p.exited = exited

	if err := p.waitReady(30 * time.Second); err != nil {
		stopErr := p.Stop()
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

// Stop shuts the server down (SIGTERM: a normal shutdown that flushes
// everything) and waits until it has exited, thawing it first if it is
// frozen. A server still there after 30 s is killed.
func (p *PrivateMariaDB) Stop() error {
	if p.server == nil {
		return nil
	}
	if err := p.Thaw(); err != nil {
		return err
	}
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

// kill is Stop's last resort: SIGKILL, only after checking that the pid
// still runs mariadbd on this data directory, then a wait for the exit.
func (p *PrivateMariaDB) kill() error {
	pid := p.server.Pid
	if !runsOnDataDir(pid, p.dir) {
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

// runsOnDataDir reports whether the process pid has --datadir=dir among
// its arguments: the check that keeps a kill away from every other
// mariadbd, the shared server above all.
func runsOnDataDir(pid int, dir string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	for _, arg := range strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00") {
		if value, ok := strings.CutPrefix(arg, "--datadir="); ok && filepath.Clean(value) == filepath.Clean(dir) {
			return true
		}
	}
	return false
}

// Restart is Stop then Start.
func (p *PrivateMariaDB) Restart() error {
	if err := p.Stop(); err != nil {
		return err
	}
	return p.Start()
}

// Freeze sends SIGSTOP to mariadbd and waits until every one of its
// threads has stopped. mariadbd is one process with many threads (one per
// connection, InnoDB's), and SIGSTOP stops the whole thread group. The
// kernel still completes TCP handshakes on its listening socket, so the
// server looks like one that hangs, not like one that is down.
func (p *PrivateMariaDB) Freeze() error {
	if p.frozen {
		return nil
	}
	if p.server == nil {
		return errors.New("private mariadb: freeze: server is not running")
	}
	if err := p.server.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("private mariadb: SIGSTOP %d: %w", p.server.Pid, err)
	}
	p.frozen = true
	// A signal is delivered asynchronously, and each thread stops on its
	// own: wait for all of them, so that when Freeze returns no thread of
	// the server runs and a test's next step cannot race one.
	return waitThreadsStopped(p.server.Pid)
}

// waitThreadsStopped waits until every thread in /proc/PID/task is in
// state T (stopped), or the process is gone.
func waitThreadsStopped(pid int) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		running, err := runningThreads(pid)
		if err != nil || len(running) == 0 {
			return nil // gone (an exited process cannot run either)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("private mariadb: threads of %d not stopped 5 s after SIGSTOP: %v", pid, running)
		}
		time.Sleep(time.Millisecond)
	}
}

// runningThreads lists the threads of pid not stopped, as "TID:STATE".
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

// Thaw sends SIGCONT to mariadbd: every thread runs again.
func (p *PrivateMariaDB) Thaw() error {
	if !p.frozen {
		return nil
	}
	p.frozen = false
	if err := p.server.Signal(syscall.SIGCONT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("private mariadb: SIGCONT %d: %w", p.server.Pid, err)
	}
	return nil
}

// Close stops the server if it is running (thawing it first, killing it if
// it does not stop) and removes its directory. Safe to call twice.
func (p *PrivateMariaDB) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	stopErr := p.Stop()
	if err := os.RemoveAll(p.dir); err != nil {
		return errors.Join(stopErr, fmt.Errorf("private mariadb: remove %s: %w", p.dir, err))
	}
	return stopErr
}

// prepare sets what every binary runs with: the data directory as working
// directory (the caller's, a checkout under /root say, may be one mysql
// cannot enter), no MYSQL_*/MARIADB_* variables (MYSQL_TCP_PORT,
// MYSQL_UNIX_PORT, MYSQL_HOME... would point it at the caller's idea of a
// server), and the mysql user when this process is root.
func (p *PrivateMariaDB) prepare(cmd *exec.Cmd) {
	cmd.Dir = p.dir
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MYSQL_") && !strings.HasPrefix(kv, "MARIADB_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if p.runAs != nil {
		// Switching uid/gid in the child directly, as PrivatePostgres
		// does: no runuser or su, no shell quoting.
		cmd.SysProcAttr.Credential = p.runAs
	}
}

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
		if info, err := os.Stat(path); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return path
		}
	}
	return ""
}

// mysqlUser is the credential of the "mysql" system user, which the
// binaries run as when this process is root.
func mysqlUser() (*syscall.Credential, error) {
	u, err := user.Lookup("mysql")
	if err != nil {
		return nil, fmt.Errorf("private mariadb: running as root, and mariadbd refuses root, but there is no \"mysql\" system user to run it as: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("private mariadb: user mysql: uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("private mariadb: user mysql: gid %q: %w", u.Gid, err)
	}
	// No supplementary groups: root's must not carry over.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}
