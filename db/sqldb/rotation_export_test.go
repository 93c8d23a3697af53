package sqldb

import (
	"context"
	"database/sql"
)

// WithRotateBeforeWrite sets RotateOptions' test hook, which runs in each
// batch's transaction between its read and its writes.
func WithRotateBeforeWrite(opts RotateOptions, hook func(ctx context.Context, tx *sql.Tx, table string) error) RotateOptions {
	opts.beforeWrite = hook
	return opts
}
