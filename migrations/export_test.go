package migrations

import (
	"database/sql"
	"io/fs"
)

// NewRunnerFS builds a runner over other migration files, so tests can add
// a migration that fails.
func NewRunnerFS(db *sql.DB, dialect string, fsys fs.FS) (*Runner, error) {
	return newRunner(db, dialect, fsys, registeredSteps)
}

var SplitStatements = splitStatements
