// In package testdb rather than testdb_test: the test checks that Close
// removes the cluster directory, which only the unexported field names.
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

// A private server takes writes, hangs while frozen (still accepting TCP
// connections), serves again once thawed, keeps its data across a restart,
// and leaves nothing behind after Close.
func TestPrivatePostgres(t *testing.T) {
	began := time.Now()
	p, err := StartPrivatePostgres()
	if err != nil {
		// As Dialects does: a machine without Postgres runs a smaller
		// suite unless CORKBOARD_REQUIRE_DBS=1 asks for every database.
		// Anything else (Postgres present but failing) is a failure.
		if errors.Is(err, ErrNoPostgresBinaries) && os.Getenv(RequireEnv) != "1" {
			t.Skipf("skipping: %v (set %s=1 to make this a failure)", err, RequireEnv)
		}
		t.Fatalf("start private postgres: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	t.Logf("started on port %d in %s (%v)", p.Port, p.dir, time.Since(began).Round(time.Millisecond))
	if !strings.HasPrefix(p.dir, os.TempDir()) {
		t.Fatalf("cluster directory %s is not under %s", p.dir, os.TempDir())
	}
	if p.AdminDSN() != p.DSN {
		t.Fatalf("AdminDSN %q != DSN %q", p.AdminDSN(), p.DSN)
	}

	db := openPrivate(t, p.DSN)
	mustExec(t, db, "CREATE TABLE probe (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
	mustExec(t, db, "INSERT INTO probe (id, v) VALUES (1, 'kept')")

	// It serves CreateOn as an admin DSN, as the shared server does.
	fresh, err := CreateOn(Postgres, p.AdminDSN())
	if err != nil {
		t.Fatalf("CreateOn private server: %v", err)
	}
	if err := fresh.Drop(); err != nil {
		t.Fatalf("drop: %v", err)
	}

	// A connection opened before the freeze, so the stuck query is one
	// sent to a stopped backend, not one waiting on a stopped postmaster.
	ctx := context.Background()
	pinned, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pinned.PingContext(ctx); err != nil {
		t.Fatal(err)
	}

	if err := p.Freeze(); err != nil {
		t.Fatalf("freeze: %v", err)
	}
	if err := p.Freeze(); err != nil {
		t.Fatalf("second freeze: %v", err)
	}
	pm, err := p.postmasterPid()
	if err != nil {
		t.Fatal(err)
	}
	if state, err := processStateOf(pm); err != nil || state != "T" {
		t.Fatalf("postmaster %d state %q (%v) while frozen, want T (stopped)", pm, state, err)
	}
	// Frozen, not down: the kernel still completes the TCP handshake.
	tcp, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p.Port), time.Second)
	if err != nil {
		t.Fatalf("TCP connect to a frozen server: %v (it should accept)", err)
	}
	tcp.Close()

	type result struct {
		v   string
		err error
	}
	stuck := make(chan result, 1)
	go func() {
		// lib/pq does not give up when this context expires: it tries to
		// send a cancel request (to the frozen postmaster) and keeps
		// waiting for the backend. Code under test must cope with that.
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		var r result
		r.err = pinned.QueryRowContext(qctx, "SELECT v FROM probe WHERE id = 1").Scan(&r.v)
		stuck <- r
	}()
	select {
	case r := <-stuck:
		t.Fatalf("query on a frozen server returned within 1.5 s: %q, %v", r.v, r.err)
	case <-time.After(1500 * time.Millisecond):
	}

	if err := p.Thaw(); err != nil {
		t.Fatalf("thaw: %v", err)
	}
	if err := p.Thaw(); err != nil {
		t.Fatalf("second thaw: %v", err)
	}
	select {
	case r := <-stuck:
		// Either outcome is fine: the query ran, or the cancel request
		// (delivered once the postmaster woke) cancelled it.
		t.Logf("stuck query after thaw: %q, %v", r.v, r.err)
	case <-time.After(10 * time.Second):
		t.Fatal("stuck query still not back 10 s after thaw")
	}
	pinned.Close()
	if v := selectProbe(t, db); v != "kept" {
		t.Fatalf("after thaw: v = %q", v)
	}
	db.Close()

	began = time.Now()
	if err := p.Restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Logf("restarted in %v", time.Since(began).Round(time.Millisecond))
	db = openPrivate(t, p.DSN)
	if v := selectProbe(t, db); v != "kept" {
		t.Fatalf("after restart: v = %q", v)
	}
	db.Close()

	// Stop while frozen must thaw first, or pg_ctl would wait forever.
	if err := p.Freeze(); err != nil {
		t.Fatalf("freeze before close: %v", err)
	}
	began = time.Now()
	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	t.Logf("closed (frozen, so thawed first) in %v", time.Since(began).Round(time.Millisecond))
	if _, err := os.Stat(p.dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cluster directory after Close: %v, want it gone", err)
	}
	// Gone, or exited and waiting as a zombie for whichever process
	// inherited it (pg_ctl's child, reparented to pid 1) to reap it.
	if state, err := processStateOf(pm); err == nil && state != "Z" && state != "X" {
		t.Fatalf("postmaster %d still running (state %s) after Close", pm, state)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func openPrivate(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
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
