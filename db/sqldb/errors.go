package sqldb

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/corkboard/corkboard/models"
)

// MySQL error numbers.
const (
	mysqlDuplicateEntry  = 1062
	mysqlLockWaitTimeout = 1205
	mysqlDeadlock        = 1213
)

// Postgres SQLSTATE codes.
const (
	postgresUniqueViolation      = "23505"
	postgresSerializationFailure = "40001"
	postgresDeadlockDetected     = "40P01"
)

// SQLite result codes. The driver reports extended codes, whose low byte is
// the primary code.
const (
	sqliteBusy                 = 5
	sqliteLocked               = 6
	sqliteConstraintPrimaryKey = 1555
	sqliteConstraintUnique     = 2067
)

// errLostRace means a compare-and-set on a modification tag matched no row
// because another writer got there first; the transaction runs again.
var errLostRace = errors.New("lost a race with a concurrent update")

// sqlStateError is how lib/pq reports a Postgres error.
type sqlStateError interface{ SQLState() string }

// sqliteError is how modernc.org/sqlite reports an error; its fields are private.
type sqliteError interface{ Code() int }

// isRetryable reports whether err is a transient conflict between
// transactions that a fresh attempt may not hit.
func isRetryable(err error) bool {
	if errors.Is(err, errLostRace) || errors.Is(err, errCommitLost) {
		return true
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return myErr.Number == mysqlDeadlock || myErr.Number == mysqlLockWaitTimeout
	}
	var pgErr sqlStateError
	if errors.As(err, &pgErr) {
		code := pgErr.SQLState()
		return code == postgresSerializationFailure || code == postgresDeadlockDetected
	}
	var liteErr sqliteError
	if errors.As(err, &liteErr) {
		primary := liteErr.Code() & 0xff
		return primary == sqliteBusy || primary == sqliteLocked
	}
	return false
}

// isUniqueViolation reports whether err says an insert hit an existing key.
func isUniqueViolation(err error) bool {
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return myErr.Number == mysqlDuplicateEntry
	}
	var pgErr sqlStateError
	if errors.As(err, &pgErr) {
		return pgErr.SQLState() == postgresUniqueViolation
	}
	var liteErr sqliteError
	if errors.As(err, &liteErr) {
		return liteErr.Code() == sqliteConstraintPrimaryKey || liteErr.Code() == sqliteConstraintUnique
	}
	return false
}

// asModelError turns any error into a *models.Error: model errors pass
// through, transient conflicts that outlived their retries are Deadlock, the
// rest is UnknownError naming the operation.
func asModelError(op string, err error) error {
	if err == nil {
		return nil
	}
	var modelErr *models.Error
	if errors.As(err, &modelErr) {
		return modelErr
	}
	if errors.Is(err, errLostRace) {
		return models.NewError(models.Error_ResourceConflict, "%s: concurrent updates kept winning; try again", op)
	}
	if isRetryable(err) {
		return models.NewError(models.Error_Deadlock, "%s: %v", op, err)
	}
	if isUnreachable(err) {
		return models.NewError(models.Error_Unavailable, "database unreachable: %s: %v", op, err)
	}
	return models.NewError(models.Error_UnknownError, "%s: %v", op, err)
}

// Postgres SQLSTATEs of a server that is going away or not there yet.
const (
	postgresConnectionExceptionClass = "08"
	postgresAdminShutdown            = "57P01"
	postgresCrashShutdown            = "57P02"
	postgresCannotConnectNow         = "57P03"
)

// mysqlServerShutdown is MySQL's "server shutdown in progress".
const mysqlServerShutdown = 1053

// isUnreachable reports whether err says the database could not be
// reached or stopped answering, rather than refused the statement: a
// network error (refused, reset, timed out: see WithIOTimeout), a
// connection the driver gave up on, a call whose deadline passed while it
// waited for the database, or a server shutting down or starting up.
// Callers may try again later; nothing says whether a write that failed
// this way was applied, so they read before they repeat one.
func isUnreachable(err error) bool {
	switch {
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, sqldriver.ErrBadConn),
		errors.Is(err, sql.ErrConnDone),
		errors.Is(err, mysql.ErrInvalidConn),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return myErr.Number == mysqlServerShutdown
	}
	var pgErr sqlStateError
	if errors.As(err, &pgErr) {
		code := pgErr.SQLState()
		return strings.HasPrefix(code, postgresConnectionExceptionClass) ||
			code == postgresAdminShutdown || code == postgresCrashShutdown || code == postgresCannotConnectNow
	}
	return false
}

func errNotFound(format string, args ...any) error {
	return models.NewError(models.Error_ResourceNotFound, format, args...)
}

func errInvalid(field, reason string) error {
	return models.ErrInvalidField(field, reason)
}

func errInvalidRecord(format string, args ...any) error {
	return models.NewError(models.Error_InvalidRecord, "%s", fmt.Sprintf(format, args...))
}
