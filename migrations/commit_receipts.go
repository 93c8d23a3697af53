package migrations

import (
	"context"
	"fmt"
)

// dropReceiptsCreatedAt is migration 0018's Go half. A commit receipt's
// token now begins with the time it was made (db/sqldb/commit.go), and the
// prune deletes a range of the primary key: commit_receipts.created_at,
// and MySQL's index on it, cost every write a column and an index entry
// for nothing. The step deletes the receipts already there, whose random
// tokens no prune by key would ever find old (a receipt is needed for a
// few seconds after its commit, and the boards that wrote these predate
// this migration); on MySQL the index on it goes with the column, in the
// same statement. The column goes first: a board of an older binary still
// running inserts its receipts with created_at, so from then on none of
// its commits leaves a receipt, and none can be settled by the absence of
// one the delete removed (its settle fails, and its caller is told the
// database was unavailable). It does both only while the column is there:
// run again after it finished it changes nothing, and run again after a
// crash between the two on MySQL (which commits each DDL) it leaves the old
// receipts: bytes, never a wrong answer, since no new token can equal one.
// SQLite has no receipts table.
var dropReceiptsCreatedAt = &goStep{
	Name:     "drop_commit_receipts_created_at",
	Revision: 1,
	Describe: func(ctx context.Context, env stepEnv) (string, error) {
		exists, err := columnExists(ctx, env.q, env.dialect, "commit_receipts", "created_at")
		if err != nil || !exists {
			return "commit_receipts.created_at is missing: nothing to do", err
		}
		var n int
		if err := env.q.QueryRowContext(ctx, "SELECT COUNT(*) FROM commit_receipts").Scan(&n); err != nil {
			return "", fmt.Errorf("count commit receipts: %w", err)
		}
		return fmt.Sprintf("%s; %s (%d receipts)", dropReceiptsCreatedAtDDL, deleteOldReceipts, n), nil
	},
	Run: func(ctx context.Context, env stepEnv) error {
		exists, err := columnExists(ctx, env.q, env.dialect, "commit_receipts", "created_at")
		if err != nil || !exists {
			return err
		}
		if _, err := env.q.ExecContext(ctx, dropReceiptsCreatedAtDDL); err != nil {
			return fmt.Errorf("drop commit_receipts.created_at: %w", err)
		}
		if _, err := env.q.ExecContext(ctx, deleteOldReceipts); err != nil {
			return fmt.Errorf("delete commit receipts: %w", err)
		}
		return nil
	},
}

const (
	deleteOldReceipts        = "DELETE FROM commit_receipts"
	dropReceiptsCreatedAtDDL = "ALTER TABLE commit_receipts DROP COLUMN created_at"
)
