package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/models"
)

// driver holds every place where the three databases differ: how a
// connection is opened and sized, the few pieces of SQL they spell
// differently, and the optional fast paths one of them has. Queries
// elsewhere in this package are written once, with ? placeholders
// (dialect.Rebind turns them into the database's own), and ask the driver
// only for these pieces; no other file compares dialect names.
//
// There is one driver per database (driver_sqlite.go, driver_postgres.go,
// driver_mysql.go). Each embeds general, which gives the form most of them
// share, and overrides what its database says otherwise. A general method
// never calls another driver method: embedding does not dispatch back to
// the database's override, so a form built from other verbs is a function
// taking the driver (cellPageQuery).
//
// The fast verbs (the ones returning a function) are optional: a driver
// returns nil when its database has no faster way, and the store then runs
// the general transactional path, which every database supports. A fast
// path that declines (returns "not done") also leaves the call to it.
type driver interface {
	// name is the dialect, also the database/sql driver name.
	name() dialect.Name

	// Connecting (open.go).

	// dataSource turns an operator's DSN into the one Open connects with,
	// adding the parameters the board relies on or refusing ones it
	// cannot work with; it may prepare files the DSN names.
	dataSource(dsn string, ioTimeout time.Duration) (string, error)
	// openPool opens the database/sql pool for a prepared DSN.
	openPool(name dialect.Name, dsn string, ioTimeout time.Duration) (*sql.DB, error)
	// sizePool sets how many connections the pool opens and keeps.
	sizePool(conn *sql.DB)
	// oneWriter reports whether the database runs one write transaction at
	// a time, so that the process queues its writers itself (SQLDB.writeLock).
	oneWriter() bool
	// inProcess reports whether a statement costs no network round trip.
	inProcess() bool
	// inStrings is what follows a column in the condition that the column
	// holds one of values (not empty), with its arguments.
	inStrings(values []string) (in string, args []any)
	// preparesStatements reports whether the store runs its statements
	// prepared (statements.go), because running a prepared statement costs
	// the database less than parsing and planning its text each time.
	preparesStatements() bool
	// keepsReceipts reports whether write transactions insert a commit
	// receipt (commit.go): where a connection to the database can break
	// during a COMMIT. SQLite runs in the board's process: it has none.
	keepsReceipts() bool
	// receiptOnEvents reports whether a write transaction that appends
	// events puts its receipt on its first outbox row rather than in a row
	// of commit_receipts of its own (commit.go).
	receiptOnEvents() bool
	// injectedConflict is the error the database reports for a deadlock or
	// serialization failure, as its driver returns it: what the
	// commit-fault seam injects (WithCommitFaults).
	injectedConflict() error
	// snapshotIsolation is the isolation level of a read-only transaction
	// whose reads must all see one snapshot (readConsistently).
	snapshotIsolation() sql.IsolationLevel

	// SQL the databases spell differently.

	// bytewise is column compared and ordered as bytes.
	bytewise(column string) string
	// pagePlanning is the statement a page of a list runs first, in its
	// own read-only transaction, or "" when the database needs none.
	pagePlanning() string
	// nowNanos is the database's clock in Unix nanoseconds, as an SQL
	// expression.
	nowNanos() string
	// upsert is an insert of one row that overwrites the update columns
	// when a row with the same key exists.
	upsert(table string, columns, key, update []string) string
	// insertMissing is a multi-row insert that skips rows whose key
	// exists, so that the result's RowsAffected counts only the rows added.
	insertMissing(table string, columns, key []string, rows int) string
	// lockForUpdate ends a SELECT of rows the transaction is about to
	// change, so that concurrent writers queue on them instead of racing;
	// "" where the database has no row locks.
	lockForUpdate() string
	// joinsStatements reports whether two statements sent as one,
	// separated by a semicolon, run one after the other in one round
	// trip, stopping at the first that fails.
	joinsStatements() bool
	// blobType is the type a byte parameter is cast to in a CASE.
	blobType() string

	// Convergence's statements on rows named by a list of keys
	// (convergence_sql.go).

	selectByKeys(t keyTable, columns string, keyArgs []any, lock bool) (string, []any)
	deleteByKeys(t keyTable, keyArgs []any) (string, []any)
	updateByKeys(t keyTable, set string, setArgs, keyArgs []any) (string, []any)
	updateEachByKey(column, set string, setArgs []any, changes []valueChange) (query string, args []any, rowsPerChange int)

	// Optional fast paths.

	// desireNew stores a new LRP in one statement, or returns a nil
	// operation to leave it to DesireLRP's transactional path.
	desireNew() func(s *SQLDB, ctx context.Context, stored *models.DesiredLRP, desiredRow []any, request *models.DesireLRPRequest) (*models.Operation, error)
	// updateNow runs an update the transactional path would finish at
	// once (updatesAtOnce) in one statement, or returns a nil LRP to
	// leave it to UpdateDesiredLRP's transactional path.
	updateNow() updateNowFunc
	// lifecycle runs a lifecycle call on its fast path and says it did
	// (done; the row after, nil when removed), or leaves it to the
	// transactional path.
	lifecycle() lifecycleFunc
	// appendEvents inserts encoded events into the outbox in one
	// statement, however many there are, with the commit receipt when one
	// is given (in commit_receipts: receiptOnEvents is false).
	appendEvents() func(s *SQLDB, ctx context.Context, tx *sql.Tx, rows outboxRows, receipt []byte) error
	// moveEvents moves outbox rows into the log without reading them
	// out of the database (SequenceEvents).
	moveEvents() func(s *SQLDB, ctx context.Context, tx *sql.Tx, head int64, limit int) (moved int, newHead int64, err error)
	// writeActualLRPs stores one batch of actual row writes (at most
	// batchSize/2) in one statement.
	writeActualLRPs() func(s *SQLDB, ctx context.Context, q queryer, writes []rowWrite) error
	// insertCreated is the statement inserting convergence's created
	// rows (see SQLDB.insertCreated).
	insertCreated() func(rows []*models.ActualLRP, now int64) (string, []any)
}

// updateNowFunc is a driver's fast path for UpdateDesiredLRP
// (driver.updateNow). inTx is the transactional path's body, for a fast
// path that runs in a coalesced group's transaction and finds the LRP
// changed since it read it.
type updateNowFunc func(s *SQLDB, ctx context.Context, processGuid string, update *models.DesiredLRPUpdate, c *desiredChange,
	request *models.UpdateDesiredLRPRequest, inTx updateInTxFunc) (*models.DesiredLRP, *models.Operation, error)

// updateInTxFunc is UpdateDesiredLRP's transactional path in a
// transaction (updateInTx).
type updateInTxFunc = func(tx *sql.Tx) (*models.DesiredLRP, *models.Operation, []models.Event, error)

// newDriver returns the driver of the named dialect.
func newDriver(name string) (driver, error) {
	d, err := dialect.Parse(name)
	if err != nil {
		return nil, err
	}
	switch d {
	case dialect.Postgres:
		return postgresDriver{}, nil
	case dialect.MySQL:
		return mysqlDriver{}, nil
	}
	return sqliteDriver{}, nil
}

// general is the form most databases share, embedded by each driver.
type general struct{}

// idleTransactionLimit is how long a database keeps a transaction its
// board left idle before it ends it (postgresDSN, idleTransactionBound):
// far longer than any of the board's transactions waits on the board
// between two statements (milliseconds), and shorter than the default
// convergence lease (convergence.DefaultLeaseTTL, 15 s), so that by the
// time another board takes the lease over from a board cut off
// mid-transaction, that transaction's row locks are gone. Those locks can
// stop every board: a sequencer cut off while it holds the event log
// head's lock holds up every other board's sequencing, and with it every
// convergence pass, until the database ends its transaction. At 30 s, a
// board that took over a partitioned board's lease after 2 s could not
// pass for up to 40 s (the partition spec in cmd/bbs).
const idleTransactionLimit = 10 * time.Second

func (general) openPool(name dialect.Name, dsn string, _ time.Duration) (*sql.DB, error) {
	return sql.Open(string(name), dsn)
}

func (general) sizePool(conn *sql.DB) {
	conn.SetMaxOpenConns(64)
	conn.SetMaxIdleConns(64)
}

func (general) oneWriter() bool                       { return false }
func (general) receiptOnEvents() bool                 { return false }
func (general) inProcess() bool                       { return false }
func (general) preparesStatements() bool              { return false }
func (general) snapshotIsolation() sql.IsolationLevel { return sql.LevelRepeatableRead }

// inStrings is an IN list of a placeholder per value.
func (general) inStrings(values []string) (string, []any) {
	return " IN " + inList(len(values)), stringArgs(values)
}

// bytewise is the column itself where it is byte-collated already.
func (general) bytewise(column string) string { return column }

// pagePlanning is none: the database walks a page's index as it is.
func (general) pagePlanning() string { return "" }

func (general) upsert(table string, columns, key, update []string) string {
	var b strings.Builder
	writeInsert(&b, table, columns, 1)
	b.WriteString(" ON CONFLICT (" + strings.Join(key, ", ") + ") DO UPDATE SET ")
	for i, c := range update {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c + " = excluded." + c)
	}
	return b.String()
}

func (general) insertMissing(table string, columns, key []string, rows int) string {
	var b strings.Builder
	writeInsert(&b, table, columns, rows)
	b.WriteString(" ON CONFLICT (" + strings.Join(key, ", ") + ") DO NOTHING")
	return b.String()
}

func (general) lockForUpdate() string { return " FOR UPDATE" }

// joinsStatements is false: a round trip per statement.
func (general) joinsStatements() bool { return false }

func (general) desireNew() func(*SQLDB, context.Context, *models.DesiredLRP, []any, *models.DesireLRPRequest) (*models.Operation, error) {
	return nil
}

func (general) updateNow() updateNowFunc {
	return nil
}

func (general) lifecycle() lifecycleFunc {
	return nil
}

func (general) appendEvents() func(*SQLDB, context.Context, *sql.Tx, outboxRows, []byte) error {
	return nil
}

func (general) moveEvents() func(*SQLDB, context.Context, *sql.Tx, int64, int) (int, int64, error) {
	return nil
}

func (general) writeActualLRPs() func(*SQLDB, context.Context, queryer, []rowWrite) error {
	return nil
}

func (general) insertCreated() func([]*models.ActualLRP, int64) (string, []any) {
	return nil
}

// mustDriver is newDriver for a name the caller has checked.
func mustDriver(name string) driver {
	d, err := newDriver(name)
	if err != nil {
		panic(fmt.Sprintf("sqldb: %v", err))
	}
	return d
}
