package migrations

import (
	"context"
	"fmt"
)

// addStopRequested is migration 0005's Go half: it adds
// actual_lrps.stop_requested where the column is missing, for the same
// reason as addCellDraining — no dialect-neutral ADD COLUMN IF NOT EXISTS,
// and every migration must be safe to run again.
var addStopRequested = &goStep{
	Name:     "add_actual_lrps_stop_requested",
	Revision: 1,
	Describe: func(ctx context.Context, env stepEnv) (string, error) {
		exists, err := columnExists(ctx, env.q, env.dialect, "actual_lrps", "stop_requested")
		if err != nil {
			return "", err
		}
		if exists {
			return "actual_lrps.stop_requested exists: nothing to add", nil
		}
		return "add column actual_lrps.stop_requested: " + stopRequestedDDL(env.dialect), nil
	},
	Run: func(ctx context.Context, env stepEnv) error {
		exists, err := columnExists(ctx, env.q, env.dialect, "actual_lrps", "stop_requested")
		if err != nil || exists {
			return err
		}
		if _, err := env.q.ExecContext(ctx, stopRequestedDDL(env.dialect)); err != nil {
			return fmt.Errorf("add column actual_lrps.stop_requested: %w", err)
		}
		return nil
	},
}

func stopRequestedDDL(dialect string) string {
	if dialect == SQLite {
		return "ALTER TABLE actual_lrps ADD COLUMN stop_requested BOOLEAN NOT NULL DEFAULT 0"
	}
	return "ALTER TABLE actual_lrps ADD COLUMN stop_requested BOOLEAN NOT NULL DEFAULT FALSE"
}
