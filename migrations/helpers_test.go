package migrations_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"

	sqldialect "github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// freshDB creates an empty database of the dialect, opened the way the
// board opens it, and drops it when the spec ends.
func freshDB(dialect string) (*sql.DB, string) {
	d, err := testdb.Create(dialect)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(d.Drop)
	return openDB(dialect, d.DSN), d.DSN
}

func openDB(dialect, dsn string) *sql.DB {
	conn, err := sqldb.Open(context.Background(), dialect, dsn)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(conn.Close)
	return conn
}

func newRunner(conn *sql.DB, dialect string) *migrations.Runner {
	r, err := migrations.NewRunner(conn, dialect)
	Expect(err).NotTo(HaveOccurred())
	return r
}

func execSQL(conn *sql.DB, dialect, q string, args ...any) {
	_, err := conn.Exec(sqldialect.Rebind(sqldialect.Name(dialect), q), args...)
	Expect(err).NotTo(HaveOccurred(), q)
}

// loadFixture runs a SQL file statement by statement.
func loadFixture(conn *sql.DB, path string) {
	text, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	stmts, err := migrations.SplitStatements(string(text))
	Expect(err).NotTo(HaveOccurred())
	for _, s := range stmts {
		_, err := conn.Exec(s)
		Expect(err).NotTo(HaveOccurred(), s)
	}
}

func tables(conn *sql.DB, dialect string) []string {
	var q string
	switch dialect {
	case testdb.SQLite:
		q = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
	case testdb.Postgres:
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name"
	case testdb.MySQL:
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY table_name"
	}
	var out []string
	for _, t := range strings1(conn, q) {
		// The migration lock's table is made before any migration runs,
		// on Postgres and MySQL: it is not the schema's.
		if t != "migration_lock" {
			out = append(out, t)
		}
	}
	return out
}

// indexTable names the table an index belongs to, "" when there is none.
func indexTable(conn *sql.DB, dialect, index string) string {
	var q string
	switch dialect {
	case testdb.SQLite:
		q = "SELECT tbl_name FROM sqlite_master WHERE type = 'index' AND name = ?"
	case testdb.Postgres:
		q = "SELECT tablename FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1"
	case testdb.MySQL:
		q = "SELECT DISTINCT table_name FROM information_schema.statistics WHERE table_schema = DATABASE() AND index_name = ? AND table_name = 'desired_lrps'"
	}
	names := strings1(conn, q, index)
	Expect(len(names)).To(BeNumerically("<=", 1))
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

func strings1(conn *sql.DB, q string, args ...any) []string {
	rows, err := conn.Query(q, args...)
	Expect(err).NotTo(HaveOccurred())
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var s string
		Expect(rows.Scan(&s)).To(Succeed())
		out = append(out, s)
	}
	Expect(rows.Err()).NotTo(HaveOccurred())
	return out
}

// versionRows is schema_migrations as text, to show that something did not
// change.
func versionRows(conn *sql.DB) []string {
	rows, err := conn.Query("SELECT version, name, checksum, applied_at, dirty FROM schema_migrations ORDER BY version")
	Expect(err).NotTo(HaveOccurred())
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var m migrations.AppliedMigration
		var at int64
		Expect(rows.Scan(&m.Version, &m.Name, &m.Checksum, &at, &m.Dirty)).To(Succeed())
		out = append(out, fmt.Sprint(m.Version, m.Name, m.Checksum, at, m.Dirty))
	}
	return out
}
