package migrations

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// sqliteDriver is SQLite: transactional DDL, one writer at a time.
type sqliteDriver struct{}

func (sqliteDriver) transactionalDDL() bool { return true }

// lock: the run's transaction is the lock. It starts with BEGIN
// IMMEDIATE, which takes SQLite's single write lock up front, so a second
// board waits at BEGIN and, once in, sees the finished schema.
func (sqliteDriver) lock(ctx context.Context, s *session) error {
	for {
		_, err := s.conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		if err == nil {
			break
		}
		if !isSQLiteBusy(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(lockPoll):
		}
	}
	s.release = func() error {
		// After a successful commit there is no transaction and this is a
		// harmless error; after a failure it undoes everything.
		s.conn.ExecContext(context.Background(), "ROLLBACK")
		return s.conn.Close()
	}
	return nil
}

func (sqliteDriver) finish(ctx context.Context, s *session) error {
	_, err := s.conn.ExecContext(ctx, "COMMIT")
	return err
}

func (sqliteDriver) versionTableDDL() string {
	return `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER NOT NULL PRIMARY KEY,
  name       TEXT    NOT NULL,
  checksum   TEXT    NOT NULL,
  applied_at INTEGER NOT NULL,
  dirty      BOOLEAN NOT NULL DEFAULT 0
)`
}

func (sqliteDriver) tableExistsQuery() string {
	return "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
}

func (sqliteDriver) columnExistsQuery() string {
	return "SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?"
}

func (sqliteDriver) indexExists(_, name string) (string, []any) {
	return "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = ?", []any{name}
}

func (sqliteDriver) dropIndex(_, name string) string { return "DROP INDEX " + name }

// explicitIndexesQuery lists the indexes made by CREATE INDEX: their names
// are per schema.
func (sqliteDriver) explicitIndexesQuery() string {
	return "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL ORDER BY name"
}

// moveIndexAside drops the index: SQLite cannot rename one.
func (sqliteDriver) moveIndexAside(index string) string {
	return fmt.Sprintf(`DROP INDEX "%s"`, index)
}

// insertOnceSuffix is none: the import runs in one transaction on empty
// tables, and a key conflict would mean two classic rows collapsing into
// one.
func (sqliteDriver) insertOnceSuffix(string) string { return "" }

// booleanFalse: SQLite spells false 0.
func (sqliteDriver) booleanFalse() string { return "BOOLEAN NOT NULL DEFAULT 0" }

// boundedText: SQLite's TEXT has no length to bound.
func (sqliteDriver) boundedText(int) string { return "TEXT NOT NULL DEFAULT ''" }

func (sqliteDriver) nullBlob() string { return "BLOB" }
func (sqliteDriver) nullText() string { return "TEXT" }

func isSQLiteBusy(err error) bool {
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		const sqliteBusy, sqliteLocked = 5, 6
		code := coded.Code() & 0xff // extended codes keep the primary in the low byte
		return code == sqliteBusy || code == sqliteLocked
	}
	return false
}
