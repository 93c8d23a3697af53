package migrations

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// AppliedMigration is one row of schema_migrations.
type AppliedMigration struct {
	Version   int
	Name      string
	Checksum  string
	AppliedAt time.Time
	Dirty     bool
}

var versionTableDDL = map[string]string{
	SQLite: `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER NOT NULL PRIMARY KEY,
  name       TEXT    NOT NULL,
  checksum   TEXT    NOT NULL,
  applied_at INTEGER NOT NULL,
  dirty      BOOLEAN NOT NULL DEFAULT 0
)`,
	Postgres: `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER      NOT NULL PRIMARY KEY,
  name       VARCHAR(255) NOT NULL,
  checksum   VARCHAR(64)  NOT NULL,
  applied_at BIGINT       NOT NULL,
  dirty      BOOLEAN      NOT NULL DEFAULT FALSE
)`,
	MySQL: `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INT          NOT NULL PRIMARY KEY,
  name       VARCHAR(255) NOT NULL,
  checksum   VARCHAR(64)  NOT NULL,
  applied_at BIGINT       NOT NULL,
  dirty      BOOLEAN      NOT NULL DEFAULT FALSE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
}

func ensureVersionTable(ctx context.Context, q querier, dialect string) error {
	if _, err := q.ExecContext(ctx, versionTableDDL[dialect]); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	return nil
}

func readApplied(ctx context.Context, q querier, dialect string) ([]AppliedMigration, error) {
	rows, err := q.QueryContext(ctx, "SELECT version, name, checksum, applied_at, dirty FROM schema_migrations ORDER BY version")
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	defer rows.Close()
	var out []AppliedMigration
	for rows.Next() {
		var a AppliedMigration
		var at int64
		if err := rows.Scan(&a.Version, &a.Name, &a.Checksum, &at, &a.Dirty); err != nil {
			return nil, fmt.Errorf("read schema_migrations: %w", err)
		}
		a.AppliedAt = time.Unix(0, at).UTC()
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	return out, nil
}

// tableExists answers from the catalogue, never by querying the table: a
// failed statement would abort a Postgres transaction.
func tableExists(ctx context.Context, q querier, dialect, table string) (bool, error) {
	var query string
	switch dialect {
	case SQLite:
		query = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
	case Postgres:
		query = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1"
	case MySQL:
		query = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?"
	}
	var n int
	if err := q.QueryRowContext(ctx, query, table).Scan(&n); err != nil {
		return false, fmt.Errorf("look up table %s: %w", table, err)
	}
	return n > 0, nil
}

func columnExists(ctx context.Context, q querier, dialect, table, column string) (bool, error) {
	var query string
	switch dialect {
	case SQLite:
		query = "SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?"
	case Postgres:
		query = "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2"
	case MySQL:
		query = "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? AND column_name = ?"
	}
	var n int
	if err := q.QueryRowContext(ctx, query, table, column).Scan(&n); err != nil {
		return false, fmt.Errorf("look up column %s.%s: %w", table, column, err)
	}
	return n > 0, nil
}
