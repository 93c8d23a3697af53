package migrations

import (
	"context"
	"fmt"
)

// addColumn is the Go half of a migration that adds table.column where it
// is missing. SQL alone cannot say "add a column unless it exists" on every
// dialect (SQLite and MySQL 8 have no ADD COLUMN IF NOT EXISTS), and every
// migration must be safe to run again (MySQL commits DDL as it goes, and
// --retry-dirty runs a migration anew). definition is the column's type
// and constraints in the dialect's words.
//
// name and revision are part of the migration's checksum: a step keeps
// them for as long as what it does stays the same.
func addColumn(name string, revision int, table, column string, definition func(dialect string) string) *goStep {
	qualified := table + "." + column
	ddl := func(dialect string) string {
		return "ALTER TABLE " + table + " ADD COLUMN " + column + " " + definition(dialect)
	}
	return &goStep{
		Name:     name,
		Revision: revision,
		Describe: func(ctx context.Context, env stepEnv) (string, error) {
			exists, err := columnExists(ctx, env.q, env.dialect, table, column)
			if err != nil {
				return "", err
			}
			if exists {
				return qualified + " exists: nothing to add", nil
			}
			return "add column " + qualified + ": " + ddl(env.dialect), nil
		},
		Run: func(ctx context.Context, env stepEnv) error {
			exists, err := columnExists(ctx, env.q, env.dialect, table, column)
			if err != nil || exists {
				return err
			}
			if _, err := env.q.ExecContext(ctx, ddl(env.dialect)); err != nil {
				return fmt.Errorf("add column %s: %w", qualified, err)
			}
			return nil
		},
	}
}

// booleanFalse is a BOOLEAN column that starts false; SQLite spells false 0.
func booleanFalse(dialect string) string {
	if dialect == SQLite {
		return "BOOLEAN NOT NULL DEFAULT 0"
	}
	return "BOOLEAN NOT NULL DEFAULT FALSE"
}

// addRolloutsOperationID is migration 0007's Go half: rollouts.operation_id
// names the operation that started the rollout (empty for a rollout older
// than operations).
var addRolloutsOperationID = addColumn("add_rollouts_operation_id", 1, "rollouts", "operation_id",
	func(dialect string) string {
		if dialect == SQLite {
			return "TEXT NOT NULL DEFAULT ''"
		}
		return "VARCHAR(24) NOT NULL DEFAULT ''"
	})

// addRolloutsStage is migration 0008's Go half: rollouts.stage, the
// protobuf of a staged rollout's models.RolloutStage (stored fields only),
// NULL while the rollout is not staged. MySQL's BLOB stops at 64 KiB;
// MEDIUMBLOB matches the other blob columns there.
var addRolloutsStage = addColumn("add_rollouts_stage", 1, "rollouts", "stage",
	func(dialect string) string {
		switch dialect {
		case Postgres:
			return "BYTEA"
		case MySQL:
			return "MEDIUMBLOB"
		}
		return "BLOB"
	})
