package sqldb

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/corkboard/corkboard/db/dialect"
)

// statementCache holds the store's statements prepared, on a database where
// running a prepared statement costs less than sending its text
// (driver.preparesStatements). On Postgres a statement sent as text with
// arguments is parsed, analysed and planned every time, and lib/pq spends
// a second round trip describing it first; a prepared one is bound and run
// in one round trip on a plan Postgres soon caches. Profiled under an
// annotation-update load (bbs-load peer), parsing and planning were the
// largest part of the database's CPU.
//
// A statement is prepared on the pool once, the first time it runs, and
// database/sql prepares it again on each connection that runs it (once per
// connection, each copy holding its plan in that connection's server
// process). So only statements of fixed text are prepared: one with more
// than maxPreparedArgs arguments is a batch whose text varies with its
// size (IN lists of n keys, inserts of n rows), which would prepare a new
// text on every connection for a run or two each. And the cache is
// bounded: past maxCachedStatements a new text runs unprepared.
//
// The drivers' one-statement fast paths take theirs with get, prepared at
// once: they run them outside the general path's statements and need one
// every time.
type statementCache struct {
	// all: exec, query and queryRow run prepared (statement); without
	// it only the fast paths' statements are (get).
	all   bool
	mu    sync.Mutex
	stmts map[string]*sql.Stmt // by the statement's text as sent (rebound)
}

// maxCachedStatements bounds the cache; the store's fixed statements number
// about a hundred.
const maxCachedStatements = 256

// maxPreparedArgs is the most arguments a prepared statement takes: the
// widest single-row write (an operation's row) takes 17.
const maxPreparedArgs = 24

// prepared is query prepared for conn, or nil while it is not (yet): the
// caller then sends its text. A statement seen for the first time is
// prepared in the background, on a connection of its own, for the runs
// after this one: preparing it here would take a second connection while
// the caller's transaction holds one, and a pool whose every connection
// is held by a transaction waiting to prepare would wait forever. One that
// fails to prepare is tried again at its next run (its text reports
// whatever is wrong with it meanwhile).
func (c *statementCache) prepared(conn *sql.DB, query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	stmt, seen := c.stmts[query]
	if seen || len(c.stmts) >= maxCachedStatements {
		return stmt
	}
	if c.stmts == nil {
		c.stmts = map[string]*sql.Stmt{}
	}
	c.stmts[query] = nil // being prepared
	go c.prepare(conn, query)
	return nil
}

// get is query prepared for conn, prepared now when it is not yet; it is
// for the fast paths' few fixed statements, so the cache's bound does not
// apply.
func (c *statementCache) get(ctx context.Context, conn *sql.DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	stmt := c.stmts[query]
	c.mu.Unlock()
	if stmt != nil {
		return stmt, nil
	}
	stmt, err := conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	first := c.keep(query, stmt)
	if first != stmt {
		stmt.Close() // outside c.mu: see keep
	}
	return first, nil
}

// keep caches stmt for query unless a statement is cached for it already,
// and returns the one cached. A caller whose stmt lost closes it after
// keep returns, never under c.mu: closing a statement waits for every
// connection it was prepared on to be free, and a connection may be busy
// in a transaction whose next statement waits for c.mu (statement), so
// closing under c.mu could hold every write of the store until the
// database ends that transaction (as a fault-injected run once did for
// 90 s: three racing desires, each waiting on another through c.mu, a
// connection and a row lock).
func (c *statementCache) keep(query string, stmt *sql.Stmt) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if first := c.stmts[query]; first != nil {
		return first
	}
	if c.stmts == nil {
		c.stmts = map[string]*sql.Stmt{}
	}
	c.stmts[query] = stmt
	return stmt
}

// prepare prepares query on conn for the cache.
func (c *statementCache) prepare(conn *sql.DB, query string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stmt, err := conn.PrepareContext(ctx, query)
	if err != nil {
		c.mu.Lock()
		delete(c.stmts, query)
		c.mu.Unlock()
		return
	}
	if c.keep(query, stmt) != stmt { // get prepared it meanwhile
		stmt.Close() // outside c.mu: see keep
	}
}

// statement is query, rebound for the dialect, with args arguments,
// prepared for q where the driver prepares statements and the statement
// is of fixed text: the pool's statement, or the transaction's copy of it.
// It is nil where the statement runs as text.
func (s *SQLDB) statement(ctx context.Context, q queryer, query string, args int) *sql.Stmt {
	if !s.statements.all || args > maxPreparedArgs {
		return nil
	}
	switch q := q.(type) {
	case *sql.Tx:
		if stmt := s.statements.prepared(s.conn, query); stmt != nil {
			return q.StmtContext(ctx, stmt)
		}
	case *sql.DB:
		if q == s.conn {
			return s.statements.prepared(s.conn, query)
		}
	}
	return nil
}

// rebound is query with the dialect's placeholders.
func (s *SQLDB) rebound(query string) string {
	return dialect.Rebind(s.driver.name(), query)
}

// cachedQuerier is tx for a package that runs its own statements
// (rowlock.Querier): they run through the store's statement cache, as the
// store's own do (exec, queryRow). A fenced write checks its lease this
// way on every commit; sent as text, SQLite compiled that statement each
// time.
type cachedQuerier struct {
	s  *SQLDB
	tx *sql.Tx
}

func (q cachedQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return q.s.exec(ctx, q.tx, query, args...)
}

func (q cachedQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return q.s.queryRow(ctx, q.tx, query, args...)
}
