package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/lib/pq"
	_ "modernc.org/sqlite"

	"github.com/corkboard/corkboard/db/dialect"
)

// Dialect names, also used as database/sql driver names (package dialect
// has them; these are for the callers that pass them as strings).
const (
	SQLite   = string(dialect.SQLite)
	Postgres = string(dialect.Postgres)
	MySQL    = string(dialect.MySQL)
)

// OpenOption configures Open.
type OpenOption func(*openOptions)

type openOptions struct {
	ioTimeout time.Duration
}

// WithIOTimeout bounds every read and write on a Postgres or MySQL
// connection (and the dial): a server that accepts connections but
// answers nothing — frozen, or behind a dead network path — fails the
// call after timeout instead of holding it for as long as the stall
// lasts. lib/pq keeps waiting on its socket after a call's context ends,
// so a context deadline alone does not do it. No statement the board
// runs while serving waits that long for its first byte; migrations,
// which may (an index built on a large table), open without it.
func WithIOTimeout(timeout time.Duration) OpenOption {
	return func(o *openOptions) { o.ioTimeout = timeout }
}

// Open connects to a database of the given dialect and checks it answers.
//
// For SQLite the DSN is a file path (its folder is created, 0700). The
// file is 0600, made so before SQLite opens it (SQLite gives its -wal and
// -shm files the database file's mode), and tightened to 0600 if it was
// looser: it holds every definition and, without encryption at rest, every
// secret in them. It is opened in WAL mode with a busy timeout, foreign
// keys on, synchronous=FULL for durability, and write transactions that
// take the write lock at BEGIN (IMMEDIATE), so two writers queue instead
// of failing mid-transaction.
func Open(ctx context.Context, dialectName, dsn string, opts ...OpenOption) (*sql.DB, error) {
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	d, err := newDriver(dialectName)
	if err != nil {
		return nil, fmt.Errorf("unknown database driver %q (want %s)", dialectName, dialect.Choices())
	}
	dsn, err = d.dataSource(dsn, o.ioTimeout)
	if err != nil {
		return nil, err
	}
	conn, err := d.openPool(d.name(), dsn, o.ioTimeout)
	if err != nil {
		return nil, err
	}
	d.sizePool(conn)
	conn.SetConnMaxIdleTime(5 * time.Minute)
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := conn.PingContext(pingCtx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("connect to %s: %w", dialectName, err)
	}
	return conn, nil
}
