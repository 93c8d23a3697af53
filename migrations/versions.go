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

func ensureVersionTable(ctx context.Context, q querier, dialect string) error {
	if _, err := q.ExecContext(ctx, driverOf(dialect).versionTableDDL()); err != nil {
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
	var n int
	if err := q.QueryRowContext(ctx, driverOf(dialect).tableExistsQuery(), table).Scan(&n); err != nil {
		return false, fmt.Errorf("look up table %s: %w", table, err)
	}
	return n > 0, nil
}

func columnExists(ctx context.Context, q querier, dialect, table, column string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, driverOf(dialect).columnExistsQuery(), table, column).Scan(&n); err != nil {
		return false, fmt.Errorf("look up column %s.%s: %w", table, column, err)
	}
	return n > 0, nil
}
