// In package testdb rather than testdb_test: the test checks that Close
// removes the data directory, which only the unexported field names.
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

// A private MariaDB takes writes, answers nothing while frozen (still
// accepting TCP connections), serves again once thawed, keeps its data
// across a restart, and leaves nothing behind after Close.
func TestPrivateMariaDB(t *testing.T) {
	began := time.Now()
	p, err := StartPrivateMariaDB()
	if err != nil {
		// As TestPrivatePostgres does: a machine without MariaDB skips
		// unless CORKBOARD_REQUIRE_DBS=1 asks for every database.
		// Anything else (MariaDB present but failing) is a failure.
		if errors.Is(err, ErrNoMariaDBBinaries) && os.Getenv(RequireEnv) != "1" {
			t.Skipf("skipping: %v (set %s=1 to make this a failure)", err, RequireEnv)
		}
		t.Fatalf("start private mariadb: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	t.Logf("started on port %d in %s (%v)", p.Port, p.dir, time.Since(began).Round(time.Millisecond))
	if !strings.HasPrefix(p.dir, os.TempDir()) {
		t.Fatalf("data directory %s is not under %s", p.dir, os.TempDir())
	}
	if p.AdminDSN() != p.DSN {
		t.Fatalf("AdminDSN %q != DSN %q", p.AdminDSN(), p.DSN)
	}
	pid := p.server.Pid
	// The guard on Close's last-resort kill recognises our server, and
	// only it.
	if !runsOnDataDir(pid, p.dir) {
		t.Fatalf("runsOnDataDir(%d, %s) = false for the server itself", pid, p.dir)
	}
	if runsOnDataDir(os.Getpid(), p.dir) {
		t.Fatalf("runsOnDataDir(%d, %s) = true for the test process", os.Getpid(), p.dir)
	}

	// It serves CreateOn as an admin DSN, as the shared server does; the
	// probe table lives in the database CreateOn made.
	database, err := CreateOn(MySQL, p.AdminDSN())
	if err != nil {
		t.Fatalf("CreateOn private server: %v", err)
	}
	db := openPrivateMySQL(t, database.DSN)
	mustExec(t, db, "CREATE TABLE probe (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
	mustExec(t, db, "INSERT INTO probe (id, v) VALUES (1, 'kept')")
	// Configured as the shared server is, not with MariaDB's latin1.
	var charset string
	if err := db.QueryRow("SELECT @@character_set_database").Scan(&charset); err != nil || charset != "utf8mb4" {
		t.Fatalf("character_set_database %q (%v), want utf8mb4", charset, err)
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
	if running, err := runningThreads(pid); err != nil || len(running) > 0 {
		t.Fatalf("threads of mariadbd %d not stopped while frozen: %v (%v)", pid, running, err)
	}
	// Frozen, not down: the kernel still completes the TCP handshake.
	tcp, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p.Port), time.Second)
	if err != nil {
		t.Fatalf("TCP connect to a frozen server: %v (it should accept)", err)
	}
	tcp.Close()

	// Unlike lib/pq (see TestPrivatePostgres), go-sql-driver/mysql gives
	// up when the context ends: its watcher closes the connection, the
	// blocked read fails, and the query returns the context's error. So
	// the query does come back, but only when its 1 s context ends: no
	// answer comes from a frozen server before that.
	began = time.Now()
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	var v string
	err = pinned.QueryRowContext(qctx, "SELECT v FROM probe WHERE id = 1").Scan(&v)
	cancel()
	took := time.Since(began)
	t.Logf("query with a 1 s context on a frozen server: %v after %v", err, took.Round(time.Millisecond))
	if err == nil || took < time.Second || took > 2500*time.Millisecond {
		t.Fatalf("query with a 1 s context on a frozen server: %q, %v after %v; want an error after 1 s", v, err, took)
	}
	pinned.Close()

	// Without a context deadline, the driver's readTimeout bounds the
	// wait: a new connection gets its TCP handshake from the kernel, then
	// waits for the server's greeting, which never comes. This is what
	// the board's database_timeout relies on for MySQL.
	bounded := openPrivateMySQL(t, p.DSN+"?timeout=1s&readTimeout=1s&writeTimeout=1s")
	began = time.Now()
	err = bounded.PingContext(ctx)
	took = time.Since(began)
	t.Logf("new connection with readTimeout=1s to a frozen server: %v after %v", err, took.Round(time.Millisecond))
	if err == nil || took > 5*time.Second {
		t.Fatalf("new connection with readTimeout=1s to a frozen server: %v after %v; want an error within 5 s", err, took)
	}
	bounded.Close()

	if err := p.Thaw(); err != nil {
		t.Fatalf("thaw: %v", err)
	}
	if err := p.Thaw(); err != nil {
		t.Fatalf("second thaw: %v", err)
	}
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
	db = openPrivateMySQL(t, database.DSN)
	if v := selectProbe(t, db); v != "kept" {
		t.Fatalf("after restart: v = %q", v)
	}
	db.Close()
	if err := database.Drop(); err != nil {
		t.Fatalf("drop: %v", err)
	}

	// Stop while frozen must thaw first, or the server would never act
	// on its SIGTERM.
	pid = p.server.Pid
	if err := p.Freeze(); err != nil {
		t.Fatalf("freeze before close: %v", err)
	}
	began = time.Now()
	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	t.Logf("closed (frozen, so thawed first) in %v", time.Since(began).Round(time.Millisecond))
	if _, err := os.Stat(p.dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("data directory after Close: %v, want it gone", err)
	}
	// Gone and reaped: the server is this process's child, and Close
	// returns only after waiting for it.
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil && runsOnDataDir(pid, p.dir) {
		t.Fatalf("mariadbd %d still running after Close", pid)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if err := p.Start(); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

func openPrivateMySQL(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
