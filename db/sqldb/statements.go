package sqldb

import (
	"context"
	"database/sql"
	"sync"

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
type statementCache struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt // by the statement's text as sent (rebound)
}

// maxCachedStatements bounds the cache; the store's fixed statements number
// about a hundred.
const maxCachedStatements = 256

// maxPreparedArgs is the most arguments a prepared statement takes: the
// widest single-row write (an operation's row) takes 17.
const maxPreparedArgs = 24

// prepared is query prepared for conn, or nil when the cache is full or the
// statement does not prepare (the caller then sends its text, which reports
// whatever is wrong with it).
func (c *statementCache) prepared(ctx context.Context, conn *sql.DB, query string) *sql.Stmt {
	c.mu.Lock()
	stmt, ok := c.stmts[query]
	full := len(c.stmts) >= maxCachedStatements
	c.mu.Unlock()
	if ok || full {
		return stmt
	}
	stmt, err := conn.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if first, ok := c.stmts[query]; ok {
		stmt.Close()
		return first
	}
	if c.stmts == nil {
		c.stmts = map[string]*sql.Stmt{}
	}
	c.stmts[query] = stmt
	return stmt
}

// statement is query, rebound for the dialect, with args arguments,
// prepared for q where the driver prepares statements and the statement
// is of fixed text: the pool's statement, or the transaction's copy of it.
// It is nil where the statement runs as text.
func (s *SQLDB) statement(ctx context.Context, q queryer, query string, args int) *sql.Stmt {
	if s.statements == nil || args > maxPreparedArgs {
		return nil
	}
	switch q := q.(type) {
	case *sql.Tx:
		if stmt := s.statements.prepared(ctx, s.conn, query); stmt != nil {
			return q.StmtContext(ctx, stmt)
		}
	case *sql.DB:
		if q == s.conn {
			return s.statements.prepared(ctx, s.conn, query)
		}
	}
	return nil
}

// rebound is query with the dialect's placeholders.
func (s *SQLDB) rebound(query string) string {
	return dialect.Rebind(s.driver.name(), query)
}
