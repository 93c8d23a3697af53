package testdb

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// See testPrivateServer. A query on a frozen MariaDB comes back when its
// context ends, and a new connection gives up after readTimeout.
func TestPrivateMariaDB(t *testing.T) {
	testPrivateServer(t, ErrNoMariaDBBinaries, func() (privateServerCase, error) {
		p, err := StartPrivateMariaDB()
		if err != nil {
			return privateServerCase{}, err
		}
		return privateServerCase{
			server:  p,
			base:    &p.privateServer,
			dialect: MySQL,
			dsn:     p.DSN,
			port:    p.Port,
			// Read at each call: a restart starts another mariadbd.
			mainPid: func() (int, error) { return p.server.Pid, nil },
			// Configured as the shared server is, not with MariaDB's
			// latin1.
			charsetQuery: "SELECT @@character_set_database",
			wantCharset:  "utf8mb4",
			whileFrozen: func(t *testing.T, pinned *sql.Conn) func() {
				mariadbWhileFrozen(t, pinned, p.DSN)
				return nil
			},
		}, nil
	})
}

func mariadbWhileFrozen(t *testing.T, pinned *sql.Conn, dsn string) {
	// Unlike lib/pq (see TestPrivatePostgres), go-sql-driver/mysql gives
	// up when the context ends: its watcher closes the connection, the
	// blocked read fails, and the query returns the context's error. So
	// the query does come back, but only when its 1 s context ends: no
	// answer comes from a frozen server before that.
	began := time.Now()
	qctx, cancel := context.WithTimeout(context.Background(), time.Second)
	var v string
	err := pinned.QueryRowContext(qctx, "SELECT v FROM probe WHERE id = 1").Scan(&v)
	cancel()
	took := time.Since(began)
	t.Logf("query with a 1 s context on a frozen server: %v after %v", err, took.Round(time.Millisecond))
	if err == nil || took < time.Second || took > 2500*time.Millisecond {
		t.Fatalf("query with a 1 s context on a frozen server: %q, %v after %v; want an error after 1 s", v, err, took)
	}

	// Without a context deadline, the driver's readTimeout bounds the
	// wait: a new connection gets its TCP handshake from the kernel, then
	// waits for the server's greeting, which never comes. This is what
	// the board's database_timeout relies on for MySQL.
	bounded := openPrivate(t, MySQL, dsn+"?timeout=1s&readTimeout=1s&writeTimeout=1s")
	began = time.Now()
	err = bounded.PingContext(context.Background())
	took = time.Since(began)
	t.Logf("new connection with readTimeout=1s to a frozen server: %v after %v", err, took.Round(time.Millisecond))
	if err == nil || took > 5*time.Second {
		t.Fatalf("new connection with readTimeout=1s to a frozen server: %v after %v; want an error within 5 s", err, took)
	}
	bounded.Close()
}
