package sqldb

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"sync"
)

// writer runs every write transaction of a SQLite pool on one connection
// of that pool, so that the connection's page cache stays valid between
// them.
//
// Why: in WAL mode a connection that starts a transaction after another
// connection committed throws its whole page cache away and reads the
// pages it needs again. Write transactions on whichever connection the
// pool hands out (the one returned last, often a reader's) each paid that:
// a CPU profile of a board through bbs-load peer's instances 1→2 step put
// 9.6% of its CPU in emptying caches and 12.5% in reading pages back.
// One connection that every write transaction uses, and no other
// connection writes on, finds its cache as its last transaction left it.
// Readers keep the pool's other connections, side by side with it.
//
//  1. A pool opened by Open for SQLite has a writer (writers, by pool),
//     and every store made on that pool shares it: its mu is their
//     writeLock, so that two stores on one pool never write at once.
//  2. The first write transaction takes a connection from the pool and
//     keeps it (pinned); it counts against the pool's size.
//  3. A pinned connection that breaks is returned, and the next write
//     pins another.
//  4. A pool of one connection (SetMaxOpenConns(1)) has none to spare:
//     its write transactions take the pool's connection as its reads do.
//     (A connection pinned before the pool shrank to one is returned at
//     the next write; until then reads wait for it.)
//  5. Closing the pool (its connector's Close) returns the pinned
//     connection, which the closed pool then closes.
//
// Writes that run outside a transaction (autocommit: a lease's renewal, a
// prune) use the pool as before; the writer's mu still keeps them from
// running beside a transaction.
type writer struct {
	mu   sync.Mutex // held from a write transaction's BEGIN to its end
	pool *sql.DB

	pinMu sync.Mutex
	conn  *sql.Conn // nil until the first write, and after it broke
}

// writers are the SQLite pools' writers, by pool (Open puts them here, the
// pool's Close takes them away; New looks its pool up).
var writers sync.Map // *sql.DB → *writer

// begin starts a write transaction on the pinned connection, pinning one
// first when there is none (2, 3, 4). The caller holds w.mu.
func (w *writer) begin(ctx context.Context) (*sql.Tx, error) {
	if w.pool.Stats().MaxOpenConnections == 1 {
		w.close()
		return w.pool.BeginTx(ctx, nil)
	}
	for attempt := 1; ; attempt++ {
		conn, err := w.pinned(ctx)
		if err != nil {
			return nil, err
		}
		tx, err := conn.BeginTx(ctx, nil)
		if err == nil || attempt == 2 || !(errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, sql.ErrConnDone)) {
			return tx, err
		}
		w.unpin(conn)
	}
}

func (w *writer) pinned(ctx context.Context) (*sql.Conn, error) {
	w.pinMu.Lock()
	defer w.pinMu.Unlock()
	if w.conn == nil {
		conn, err := w.pool.Conn(ctx)
		if err != nil {
			return nil, err
		}
		w.conn = conn
	}
	return w.conn, nil
}

// unpin returns conn to the pool (which discards a broken one) unless
// another connection was pinned since.
func (w *writer) unpin(conn *sql.Conn) {
	w.pinMu.Lock()
	if w.conn == conn {
		w.conn = nil
	}
	w.pinMu.Unlock()
	conn.Close()
}

// close returns the pinned connection (4, 5). A transaction still running on
// it ends first.
func (w *writer) close() {
	w.pinMu.Lock()
	conn := w.conn
	w.conn = nil
	w.pinMu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

// writerPool is the connector of a SQLite pool: it opens the driver's
// connections, and when the pool closes, returns its writer's connection.
type writerPool struct {
	dsn    string
	driver sqldriver.Driver
	writer *writer
}

func (c *writerPool) Connect(context.Context) (sqldriver.Conn, error) { return c.driver.Open(c.dsn) }

func (c *writerPool) Driver() sqldriver.Driver { return c.driver }

// Close is called by the pool's Close (database/sql calls a connector's
// Close, when it has one, last): 5.
func (c *writerPool) Close() error {
	writers.Delete(c.writer.pool)
	c.writer.close()
	return nil
}

// openWriterPool opens a pool of driverName's connections to dsn that
// runs its write transactions on one of them (writer).
func openWriterPool(driverName, dsn string) (*sql.DB, error) {
	// sql.Open connects to nothing: it only finds the registered driver.
	probe, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, err
	}
	c := &writerPool{dsn: dsn, driver: probe.Driver(), writer: &writer{}}
	probe.Close()
	pool := sql.OpenDB(c)
	c.writer.pool = pool
	writers.Store(pool, c.writer)
	return pool, nil
}
