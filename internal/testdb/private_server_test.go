// In package testdb rather than testdb_test: the tests check that Close
// removes the server's directory and that Freeze stops the server's
// processes, which only unexported fields and methods name.
package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// privateServerCase is one private server, started, for testPrivateServer:
// the server and what the shared steps cannot know of it.
type privateServerCase struct {
	server interface {
		AdminDSN() string
		Start() error
		Stop() error
		Restart() error
		Freeze() error
		Thaw() error
		Close() error
	}
	base    *privateServer // its shared part: dir, runsOnDir
	dialect string         // for CreateOn, and the driver's name
	dsn     string
	port    int
	// mainPid is the process Freeze stops first (postmaster, mariadbd).
	mainPid func() (int, error)
	// charsetQuery answers wantCharset on a database CreateOn made: the
	// server is configured as the shared one is.
	charsetQuery string
	wantCharset  string
	// whileFrozen checks how the driver meets the frozen server, through
	// pinned, a connection opened before the freeze. What it returns, if
	// anything, runs after the thaw.
	whileFrozen func(t *testing.T, pinned *sql.Conn) (afterThaw func())
}

// testPrivateServer starts a private server and checks that it takes
// writes, hangs while frozen (still accepting TCP connections), serves again
// once thawed, keeps its data across a stop and a restart, and leaves
// nothing behind after Close. noBinaries is the error start wraps when the
// machine lacks the server binaries.
func testPrivateServer(t *testing.T, noBinaries error, start func() (privateServerCase, error)) {
	began := time.Now()
	c, err := start()
	if err != nil {
		// As Dialects does: a machine without the server runs a smaller
		// suite unless CORKBOARD_REQUIRE_DBS=1 asks for every database.
		// Anything else (the server present but failing) is a failure.
		if errors.Is(err, noBinaries) && os.Getenv(RequireEnv) != "1" {
			t.Skipf("skipping: %v (set %s=1 to make this a failure)", err, RequireEnv)
		}
		t.Fatalf("start: %v", err)
	}
	p, dir := c.server, c.base.dir
	t.Cleanup(func() { p.Close() })
	t.Logf("started on port %d in %s (%v)", c.port, dir, time.Since(began).Round(time.Millisecond))
	if !strings.HasPrefix(dir, os.TempDir()) {
		t.Fatalf("server directory %s is not under %s", dir, os.TempDir())
	}
	if p.AdminDSN() != c.dsn {
		t.Fatalf("AdminDSN %q != DSN %q", p.AdminDSN(), c.dsn)
	}
	pid, err := c.mainPid()
	if err != nil {
		t.Fatal(err)
	}
	// The guard on every signal recognises our server, and only it.
	if !c.base.runsOnDir(pid) {
		t.Fatalf("runsOnDir(%d) = false for the server itself (%s)", pid, dir)
	}
	if c.base.runsOnDir(os.Getpid()) {
		t.Fatalf("runsOnDir(%d) = true for the test process (%s)", os.Getpid(), dir)
	}

	// It serves CreateOn as an admin DSN, as the shared server does; the
	// probe table lives in the database CreateOn made.
	database, err := CreateOn(c.dialect, p.AdminDSN())
	if err != nil {
		t.Fatalf("CreateOn private server: %v", err)
	}
	db := openPrivate(t, c.dialect, database.DSN)
	mustExec(t, db, "CREATE TABLE probe (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
	mustExec(t, db, "INSERT INTO probe (id, v) VALUES (1, 'kept')")
	var charset string
	if err := db.QueryRow(c.charsetQuery).Scan(&charset); err != nil || charset != c.wantCharset {
		t.Fatalf("%s: %q (%v), want %s", c.charsetQuery, charset, err, c.wantCharset)
	}

	// A connection opened before the freeze, so the stuck query is one
	// sent on an established session, not one waiting for a handshake.
	ctx := context.Background()
	pinned, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pinned.PingContext(ctx); err != nil {
		t.Fatal(err)
	}

	began = time.Now()
	if err := p.Freeze(); err != nil {
		t.Fatalf("freeze: %v", err)
	}
	t.Logf("frozen in %v", time.Since(began).Round(time.Microsecond))
	if err := p.Freeze(); err != nil {
		t.Fatalf("second freeze: %v", err)
	}
	// Nothing of the server runs: not the main process, no thread of it,
	// no child.
	children, err := childrenOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, each := range append([]int{pid}, children...) {
		if running, err := runningThreads(each); err != nil || len(running) > 0 {
			t.Fatalf("threads of %d (server %d) not stopped while frozen: %v (%v)", each, pid, running, err)
		}
	}
	// Frozen, not down: the kernel still completes the TCP handshake.
	tcp, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", c.port), time.Second)
	if err != nil {
		t.Fatalf("TCP connect to a frozen server: %v (it should accept)", err)
	}
	tcp.Close()
	afterThaw := c.whileFrozen(t, pinned)

	if err := p.Thaw(); err != nil {
		t.Fatalf("thaw: %v", err)
	}
	if err := p.Thaw(); err != nil {
		t.Fatalf("second thaw: %v", err)
	}
	if afterThaw != nil {
		afterThaw()
	}
	pinned.Close()
	if v := selectProbe(t, db); v != "kept" {
		t.Fatalf("after thaw: v = %q", v)
	}
	db.Close()

	began = time.Now()
	if err := p.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	t.Logf("stopped in %v", time.Since(began).Round(time.Millisecond))
	began = time.Now()
	if err := p.Start(); err != nil {
		t.Fatalf("start again: %v", err)
	}
	t.Logf("started again in %v", time.Since(began).Round(time.Millisecond))
	began = time.Now()
	if err := p.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Logf("restarted in %v", time.Since(began).Round(time.Millisecond))
	db = openPrivate(t, c.dialect, database.DSN)
	if v := selectProbe(t, db); v != "kept" {
		t.Fatalf("after restart: v = %q", v)
	}
	db.Close()
	if err := database.Drop(); err != nil {
		t.Fatalf("drop: %v", err)
	}

	// Stop while frozen must thaw first, or the server would never act on
	// the signal that shuts it down.
	pid, err = c.mainPid()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Freeze(); err != nil {
		t.Fatalf("freeze before close: %v", err)
	}
	began = time.Now()
	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	t.Logf("closed (frozen, so thawed first) in %v", time.Since(began).Round(time.Millisecond))
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("server directory after Close: %v, want it gone", err)
	}
	// Gone, or a zombie (no command line) waiting for whichever process
	// inherited it to reap it.
	if c.base.runsOnDir(pid) {
		t.Fatalf("server %d still running after Close", pid)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if err := p.Start(); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

func openPrivate(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t *testing.T, db *sql.DB, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

func selectProbe(t *testing.T, db *sql.DB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var v string
	if err := db.QueryRowContext(ctx, "SELECT v FROM probe WHERE id = 1").Scan(&v); err != nil {
		t.Fatalf("select probe: %v", err)
	}
	return v
}

// hasDirOption is the guard on every signal: it must take both ways the
// servers name their directory, and nothing near them.
func TestHasDirOption(t *testing.T) {
	for _, c := range []struct {
		args   []string
		option string
		want   bool
	}{
		{[]string{"postgres", "-D", "/tmp/pg-1"}, "-D", true},
		{[]string{"postgres", "-D", "/tmp/pg-1/"}, "-D", true},
		{[]string{"postgres", "-D", "/tmp/pg-12"}, "-D", false},
		{[]string{"postgres", "-D"}, "-D", false},
		{[]string{"postgres", "-D=/tmp/pg-1"}, "-D", false},
		{[]string{"mariadbd", "--no-defaults", "--datadir=/tmp/pg-1"}, "--datadir=", true},
		{[]string{"mariadbd", "--datadir", "/tmp/pg-1"}, "--datadir=", false},
		{[]string{"mariadbd", "--datadir=/tmp/pg-1/sub"}, "--datadir=", false},
		{nil, "-D", false},
	} {
		if got := hasDirOption(c.args, c.option, "/tmp/pg-1"); got != c.want {
			t.Errorf("hasDirOption(%q, %q, /tmp/pg-1) = %v, want %v", c.args, c.option, got, c.want)
		}
	}
}
