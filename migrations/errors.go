package migrations

import (
	"errors"
	"fmt"
)

// ErrDatabaseNewer means the database carries migrations this binary does
// not know: it was migrated by a newer board, and this one must not touch it.
var ErrDatabaseNewer = errors.New("database schema is newer than this binary")

// ErrDirty means a migration started and did not finish (see DirtyError).
var ErrDirty = errors.New("database is dirty")

// ErrNotUpToDate is what Validate returns, wrapped, when migrations are
// pending or an applied migration differs from the embedded one.
var ErrNotUpToDate = errors.New("database schema does not match this binary")

// DirtyError names the migration that was interrupted. On MySQL, where DDL
// commits implicitly, a failed migration can leave part of its changes
// behind; every migration is written to be safe to run again, so the way
// forward is to fix the cause and re-run it.
type DirtyError struct {
	Dialect string
	Version int
	Name    string
}

func (e *DirtyError) Error() string {
	return fmt.Sprintf("database is dirty: migration %04d_%s started and did not finish, so its changes may be partly applied. "+
		"Look at the error it failed with (and at migrations/sql/%s/%04d_%s.sql), fix the cause, then re-run it with "+
		"`bbs-migrate up --retry-dirty` (every migration is safe to run again)",
		e.Version, e.Name, e.Dialect, e.Version, e.Name)
}

func (e *DirtyError) Is(target error) bool { return target == ErrDirty }

// MigrationError says which migration, and which statement of it, failed.
type MigrationError struct {
	Migration Migration
	Statement string
	Err       error
}

func (e *MigrationError) Error() string {
	if e.Statement == "" {
		return fmt.Sprintf("migration %s: %v", e.Migration.ID(), e.Err)
	}
	return fmt.Sprintf("migration %s: %v\nin statement:\n%s", e.Migration.ID(), e.Err, e.Statement)
}

func (e *MigrationError) Unwrap() error { return e.Err }
