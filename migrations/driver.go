package migrations

import (
	"context"
	"fmt"

	sqldialect "github.com/corkboard/corkboard/db/dialect"
)

// driver holds every place where the migrations differ per database: the
// catalogue queries, the column types the Go steps add, and how a run is
// locked and committed. One file per database (driver_sqlite.go,
// driver_postgres.go, driver_mysql.go); no other file compares dialect
// names. The SQL migrations themselves differ by folder (sql/<dialect>).
type driver interface {
	// transactionalDDL reports whether DDL runs inside a transaction, so
	// that a run lands whole or not at all. Where it does not (MySQL
	// commits each DDL statement), a run keeps what it applied before a
	// failure, each Go step gets a transaction of its own, and what must
	// not be left half done is one statement.
	transactionalDDL() bool

	// lock takes the migration lock on s's connection and sets s.release
	// (and s.q, s.tx where the run is one transaction); finish commits
	// the run.
	lock(ctx context.Context, s *session) error
	finish(ctx context.Context, s *session) error

	// versionTableDDL creates schema_migrations if it is missing.
	versionTableDDL() string
	// tableExistsQuery counts the tables named by its one parameter;
	// columnExistsQuery the columns named by its second of the table named
	// by its first. Both read the catalogue, never the table: a failed
	// statement would abort a Postgres transaction.
	tableExistsQuery() string
	columnExistsQuery() string
	// indexExists counts the indexes of table named name.
	indexExists(table, name string) (string, []any)
	// dropIndex drops table's index name.
	dropIndex(table, name string) string

	// explicitIndexesQuery lists the indexes of the table named by its one
	// parameter whose names could collide with the board's (index names
	// that are per schema survive a table rename), or is "" where index
	// names are per table.
	explicitIndexesQuery() string
	// moveIndexAside is the statement that takes a classic index's name
	// out of the board's way, or "" when it is out of the way already.
	moveIndexAside(index string) string
	// insertOnceSuffix ends an INSERT of the legacy import whose row may
	// exist already, or is "" where a row that exists is an error.
	insertOnceSuffix(firstColumn string) string

	// Column types in the database's words (see addColumn).

	// booleanFalse is a BOOLEAN column that starts false.
	booleanFalse() string
	// boundedText is a NOT NULL text column of at most n characters that
	// starts empty.
	boundedText(n int) string
	// nullBlob is a blob column, NULL by default, as large as the
	// schema's other blob columns.
	nullBlob() string
	// nullText is a text column, NULL by default, that holds more than
	// 64 KiB (routes may take 128).
	nullText() string
}

// drivers has one driver per dialect.
var drivers = map[string]driver{
	string(sqldialect.SQLite):   sqliteDriver{},
	string(sqldialect.Postgres): postgresDriver{},
	string(sqldialect.MySQL):    mysqlDriver{},
}

// driverOf is the driver of a dialect the runner has checked (load
// refuses any other), so an unknown one is a programming error.
func driverOf(dialect string) driver {
	d, ok := drivers[dialect]
	if !ok {
		panic(fmt.Sprintf("migrations: unknown database dialect %q", dialect))
	}
	return d
}
