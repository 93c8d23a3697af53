package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/lib/pq"
	_ "modernc.org/sqlite"
)

// Dialect names, also used as database/sql driver names.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
	MySQL    = "mysql"
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
// file, and its -wal and -shm, are the owner's alone (0600; see
// privateSQLiteFiles). The file is opened in WAL mode with a busy timeout, foreign keys on, synchronous=FULL
// for durability, and write transactions that take the write lock at BEGIN
// (IMMEDIATE), so two writers queue instead of failing mid-transaction.
func Open(ctx context.Context, dialect, dsn string, opts ...OpenOption) (*sql.DB, error) {
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	switch dialect {
	case SQLite:
		if !strings.HasPrefix(dsn, "file:") {
			if err := os.MkdirAll(filepath.Dir(dsn), 0o700); err != nil {
				return nil, err
			}
			if err := privateSQLiteFiles(dsn); err != nil {
				return nil, err
			}
		}
		dsn = sqliteURI(dsn)
	case Postgres:
		dsn = postgresDSN(dsn)
	case MySQL:
		if strings.Contains(dsn, "clientFoundRows=true") {
			// Affected-row counts must mean rows changed, not rows matched:
			// the dialect helper's insert-if-missing relies on it.
			return nil, fmt.Errorf("mysql: clientFoundRows=true is not supported")
		}
		if strings.Contains(dsn, "multiStatements=false") {
			// Some writes send two statements in one round trip
			// (dialect.joinsStatements).
			return nil, fmt.Errorf("mysql: multiStatements=false is not supported")
		}
		dsn = mysqlDSN(dsn, o.ioTimeout)
	default:
		return nil, fmt.Errorf("unknown database driver %q (want sqlite, postgres or mysql)", dialect)
	}
	conn, err := openPool(dialect, dsn, o.ioTimeout)
	if err != nil {
		return nil, err
	}
	if dialect == SQLite {
		// One writer at a time is SQLite's rule; extra connections serve reads.
		conn.SetMaxOpenConns(8)
	} else {
		conn.SetMaxOpenConns(64)
		conn.SetMaxIdleConns(64)
	}
	conn.SetConnMaxIdleTime(5 * time.Minute)
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := conn.PingContext(pingCtx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("connect to %s: %w", dialect, err)
	}
	return conn, nil
}

// sqliteFileMode is the mode of the board's SQLite files: the database
// holds every definition (environment, asset URLs) and the encryption
// metadata, so no other user of the machine reads it.
const sqliteFileMode = 0o600

// privateSQLiteFiles creates the database file at path with
// sqliteFileMode unless it exists, and brings an existing one (from a
// board before this rule) and its -wal and -shm down to it. SQLite gives
// the -wal and -shm it creates the mode of the database file, so they
// follow.
func privateSQLiteFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, sqliteFileMode)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, sqliteFileMode); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

func sqliteURI(path string) string {
	if strings.HasPrefix(path, "file:") {
		return path
	}
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(FULL)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// postgresDSN turns on binary_parameters unless the operator set it: lib/pq
// then sends a statement with its arguments in one round trip instead of
// two, and bytea arguments as raw bytes. DSNs come as URLs or as
// keyword=value lists.
func postgresDSN(dsn string) string {
	if strings.Contains(dsn, "binary_parameters=") {
		return dsn
	}
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if strings.Contains(dsn, "?") {
			return dsn + "&binary_parameters=yes"
		}
		return dsn + "?binary_parameters=yes"
	}
	return strings.TrimSpace(dsn + " binary_parameters=yes")
}

// mysqlDSN adds the parameters the board relies on unless the operator set them.
// interpolateParams sends a statement with its arguments in one round trip
// instead of three (prepare, execute, close); the driver refuses it for
// character sets where client-side escaping would be unsafe.
//
// An I/O timeout becomes the driver's readTimeout and writeTimeout (per
// read and write, as WithIOTimeout means) and its dial timeout, unless the
// DSN sets them.
func mysqlDSN(dsn string, ioTimeout time.Duration) string {
	params := []string{"multiStatements=true", "parseTime=false", "interpolateParams=true"}
	if ioTimeout > 0 {
		for _, name := range []string{"readTimeout", "writeTimeout", "timeout"} {
			params = append(params, name+"="+ioTimeout.String())
		}
	}
	for _, p := range params {
		if !strings.Contains(dsn, strings.SplitN(p, "=", 2)[0]+"=") {
			if strings.Contains(dsn, "?") {
				dsn += "&" + p
			} else {
				dsn += "?" + p
			}
		}
	}
	return dsn
}
