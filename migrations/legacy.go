package migrations

import (
	"context"
	"fmt"
	"strings"
)

// A classic BBS database (see fixtures/legacy/README.md) has tables named
// like ours but shaped differently. Before 0001 creates the board's tables,
// the runner moves the classic ones aside under a legacy_ prefix; the import
// migration reads them, writes the board's rows and drops them.
//
// A database is classic when it has no applied migrations and its
// desired_lrps table has a run_info column.
var classicTables = []string{"desired_lrps", "actual_lrps", "domains"}

const legacyPrefix = "legacy_"

func isClassic(ctx context.Context, q querier, dialect string) (bool, error) {
	ok, err := tableExists(ctx, q, dialect, "desired_lrps")
	if err != nil || !ok {
		return false, err
	}
	return columnExists(ctx, q, dialect, "desired_lrps", "run_info")
}

// moveAsideStatements is the DDL that moves a classic schema's tables out of
// the way, or nothing when the database is not classic.
func moveAsideStatements(ctx context.Context, q querier, dialect string) ([]string, error) {
	classic, err := isClassic(ctx, q, dialect)
	if err != nil || !classic {
		return nil, err
	}
	d := driverOf(dialect)
	var stmts, renames []string
	for _, table := range classicTables {
		ok, err := tableExists(ctx, q, dialect, table)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		// Index names are per schema in Postgres and SQLite and survive a
		// table rename, so a classic index named like one of ours would make
		// 0001's CREATE INDEX IF NOT EXISTS silently skip ours: the driver
		// renames or drops it (moveIndexAside).
		indexes, err := explicitIndexes(ctx, q, dialect, table)
		if err != nil {
			return nil, err
		}
		for _, idx := range indexes {
			if stmt := d.moveIndexAside(idx); stmt != "" {
				stmts = append(stmts, stmt)
			}
		}
		renames = append(renames, fmt.Sprintf("%s TO %s", table, legacyPrefix+table))
		if d.transactionalDDL() {
			stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s RENAME TO %s", table, legacyPrefix+table))
		}
	}
	if !d.transactionalDDL() {
		// One statement renames them all atomically: the database commits
		// each DDL statement (MySQL), and a half-renamed classic schema
		// would not be recognised as classic again.
		stmts = append(stmts, "RENAME TABLE "+strings.Join(renames, ", "))
	}
	return stmts, nil
}

// explicitIndexes lists the indexes of a table whose names could collide
// with ours: in Postgres every index (primary keys included, their names are
// schema-wide too), in SQLite the ones made by CREATE INDEX. MySQL index
// names are per table and need nothing.
func explicitIndexes(ctx context.Context, q querier, dialect, table string) ([]string, error) {
	query := driverOf(dialect).explicitIndexesQuery()
	if query == "" {
		return nil, nil
	}
	rows, err := q.QueryContext(ctx, query, table)
	if err != nil {
		return nil, fmt.Errorf("list indexes of %s: %w", table, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

func moveLegacyAside(ctx context.Context, s *session, dialect string) error {
	stmts, err := moveAsideStatements(ctx, s.q, dialect)
	if err != nil {
		return err
	}
	for _, stmt := range stmts {
		if _, err := s.q.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("move the classic BBS tables aside: %w\nin statement: %s", err, stmt)
		}
	}
	return nil
}
