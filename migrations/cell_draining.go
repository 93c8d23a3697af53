package migrations

import (
	"context"
	"fmt"
)

// addCellDraining is migration 0004's Go half: it adds cells.draining
// where the column is missing. SQL alone cannot say "add a column unless it
// exists" on every dialect (SQLite and MySQL 8 have no ADD COLUMN IF NOT
// EXISTS), and every migration must be safe to run again (MySQL commits
// DDL as it goes, and --retry-dirty runs a migration anew).
var addCellDraining = &goStep{
	Name:     "add_cells_draining",
	Revision: 1,
	Describe: func(ctx context.Context, env stepEnv) (string, error) {
		exists, err := columnExists(ctx, env.q, env.dialect, "cells", "draining")
		if err != nil {
			return "", err
		}
		if exists {
			return "cells.draining exists: nothing to add", nil
		}
		return "add column cells.draining: " + cellDrainingDDL(env.dialect), nil
	},
	Run: func(ctx context.Context, env stepEnv) error {
		exists, err := columnExists(ctx, env.q, env.dialect, "cells", "draining")
		if err != nil || exists {
			return err
		}
		if _, err := env.q.ExecContext(ctx, cellDrainingDDL(env.dialect)); err != nil {
			return fmt.Errorf("add column cells.draining: %w", err)
		}
		return nil
	},
}

func cellDrainingDDL(dialect string) string {
	if dialect == SQLite {
		return "ALTER TABLE cells ADD COLUMN draining BOOLEAN NOT NULL DEFAULT 0"
	}
	return "ALTER TABLE cells ADD COLUMN draining BOOLEAN NOT NULL DEFAULT FALSE"
}
