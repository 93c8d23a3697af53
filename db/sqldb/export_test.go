package sqldb

import (
	"context"
	"database/sql"
)

// Seams for the external test package.

var (
	DecodeRoutes      = decodeRoutes
	ParseRoutes       = parseRoutes
	IsRetryable       = isRetryable
	IsUniqueViolation = isUniqueViolation
)

// Rebind lets the suite write its own SQL with ? placeholders.
func Rebind(dialectName, query string) string { return dialect(dialectName).rebind(query) }

func Upsert(dialectName, table string, columns, key, update []string) string {
	return dialect(dialectName).upsert(table, columns, key, update)
}

func InsertMissing(dialectName, table string, columns, key []string, rows int) string {
	return dialect(dialectName).insertMissing(table, columns, key, rows)
}

// Transact runs fn through the retrying transaction runner.
func (s *SQLDB) Transact(ctx context.Context, fn func(*sql.Tx) error) error {
	return s.transact(ctx, "test", fn)
}

var (
	PostgresDSN = postgresDSN
	MySQLDSN    = mysqlDSN
)

// IsUnreachable is isUnreachable, for its table test.
var IsUnreachable = isUnreachable
