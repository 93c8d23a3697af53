package testdb

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// See testPrivateServer. A query on a frozen Postgres does not come back,
// not even when its context ends.
func TestPrivatePostgres(t *testing.T) {
	testPrivateServer(t, ErrNoPostgresBinaries, func() (privateServerCase, error) {
		p, err := StartPrivatePostgres()
		if err != nil {
			return privateServerCase{}, err
		}
		return privateServerCase{
			server:       p,
			base:         &p.privateServer,
			dialect:      Postgres,
			dsn:          p.DSN,
			port:         p.Port,
			mainPid:      p.postmasterPid,
			charsetQuery: "SHOW server_encoding",
			wantCharset:  "UTF8",
			whileFrozen:  postgresWhileFrozen,
		}, nil
	})
}

func postgresWhileFrozen(t *testing.T, pinned *sql.Conn) (afterThaw func()) {
	type result struct {
		v   string
		err error
	}
	stuck := make(chan result, 1)
	go func() {
		// lib/pq does not give up when this context expires: it tries to
		// send a cancel request (to the frozen postmaster) and keeps
		// waiting for the backend. Code under test must cope with that.
		qctx, cancel := context.WithTimeout(context.Background(), time.Second)
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
	return func() {
		select {
		case r := <-stuck:
			// Either outcome is fine: the query ran, or the cancel
			// request (delivered once the postmaster woke) cancelled it.
			t.Logf("stuck query after thaw: %q, %v", r.v, r.err)
		case <-time.After(10 * time.Second):
			t.Fatal("stuck query still not back 10 s after thaw")
		}
	}
}
