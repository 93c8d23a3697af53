// Package sqldb is the board's one storage implementation, over SQLite,
// Postgres and MySQL. It assumes the schema made by migrations.Up.
//
// Storage conventions (see migrations/sql/<dialect>/0001_create_tables.sql):
// times are Unix nanoseconds; ActualLRP presence and state are stored by enum
// name; placement tags are a JSON array; routes are the protojson of their
// google.protobuf.Struct ("" when unset); update strategy, net info and run
// definitions are protobuf bytes. Run definitions and operation parameters
// are sealed with AES-256-GCM when a keyring is configured (WithEncryption,
// encryption.go); RotateKeys re-seals them under a new key (rotation.go).
package sqldb

import (
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corkboard/corkboard/db"
)

// SQLDB implements db.DB on one database connection pool.
type SQLDB struct {
	conn        *sql.DB
	driver      driver
	now         func() time.Time
	maxAttempts int

	// writeLock queues this process's write transactions on SQLite, which
	// allows one writer at a time anyway: waiting on a Go mutex is cheaper
	// than SQLite's sleeping busy handler. Nil for the server databases.
	writeLock *sync.Mutex
	// writer runs this store's write transactions on SQLite when its pool
	// came from Open (writer.go); its mu is then writeLock. Nil for the
	// server databases.
	writer *writer

	// coalescer groups concurrent API writes into shared transactions
	// (coalesce.go); nil when they each run alone.
	coalescer *coalescer

	// statements holds the statements the store runs prepared: the fast
	// paths' and, where the driver prepares statements, those exec, query
	// and queryRow run (statements.go). It lives as long as the pool.
	statements *statementCache

	// eventsCommitted is called after each commit that appended events to
	// the log (WithEventsCommitted).
	eventsCommitted func()

	// operationIDs makes the ids of the operations this process records.
	operationIDs operationIDs

	// faults injects failures at commit (WithCommitFaults, commit.go);
	// nil on a board.
	faults *commitFaults

	// logSeen is the highest event log position this store has seen taken
	// (SequenceEvents, ReadEvents): events committed after it was read get
	// positions past it, so a lost commit's settling looks for its receipt
	// in the log only there (settleOnEvents).
	logSeen atomic.Int64

	// fastUpdates and fastDesires count the updates and desires stored
	// by the Postgres fast paths (updateNowPostgres, desireNew), for the
	// specs to see them taken.
	fastUpdates, fastDesires atomic.Int64

	// keys seals run definitions and operation parameters at rest; nil
	// leaves them plain (WithEncryption, encryption.go).
	keys *Keyring
}

var _ db.DB = (*SQLDB)(nil)

// Option configures a SQLDB.
type Option func(*SQLDB)

// WithClock replaces time.Now as the clock of every time the store writes
// and judges expiry by (leases aside: AcquireLease reads the database's).
// Tests control expiry and timestamps with it; the board passes its clock
// on the database's time (internal/dbclock), so that boards whose machines'
// clocks disagree write and judge times alike.
func WithClock(now func() time.Time) Option {
	return func(s *SQLDB) { s.now = now }
}

// WithMaxAttempts bounds how often a transaction runs when it keeps failing
// with a deadlock, serialization failure or busy database (default 5).
func WithMaxAttempts(n int) Option {
	return func(s *SQLDB) {
		if n > 0 {
			s.maxAttempts = n
		}
	}
}

// New wraps a connection opened by Open. The dialect must be SQLite,
// Postgres or MySQL; anything else is a programming error and panics.
func New(conn *sql.DB, dialectName string, opts ...Option) *SQLDB {
	d, err := newDriver(dialectName)
	if err != nil {
		panic(fmt.Sprintf("sqldb: unknown dialect %q", dialectName))
	}
	s := &SQLDB{
		conn:            conn,
		driver:          d,
		now:             time.Now,
		maxAttempts:     5,
		eventsCommitted: func() {},
	}
	if d.oneWriter() {
		s.writeLock = &sync.Mutex{}
		if w, ok := writers.Load(conn); ok {
			s.writer = w.(*writer)
			s.writeLock = &s.writer.mu
		}
	}
	s.statements = &statementCache{all: d.preparesStatements()}
	s.coalescer = newCoalescer(s, defaultLanes(d))
	for _, opt := range opts {
		opt(s)
	}
	return s
}
