package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// postgresDriver is Postgres: transactional DDL.
type postgresDriver struct{}

func (postgresDriver) transactionalDDL() bool { return true }

// lock takes the migration lock row (lock.go), then begins the run's one
// transaction; the fence check before each migration share-locks the row
// in it until the commit.
func (postgresDriver) lock(ctx context.Context, s *session) error {
	if err := s.lockRow(ctx); err != nil {
		return err
	}
	tx, err := s.conn.BeginTx(ctx, nil)
	if err != nil {
		return errors.Join(err, s.unlockRow())
	}
	s.tx, s.q = tx, tx
	s.release = func() error {
		// Rollback after a commit is a no-op (sql.ErrTxDone).
		if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
			return errors.Join(err, s.unlockRow())
		}
		return s.unlockRow()
	}
	return nil
}

func (postgresDriver) finish(_ context.Context, s *session) error { return s.tx.Commit() }

func (postgresDriver) versionTableDDL() string {
	return `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INTEGER      NOT NULL PRIMARY KEY,
  name       VARCHAR(255) NOT NULL,
  checksum   VARCHAR(64)  NOT NULL,
  applied_at BIGINT       NOT NULL,
  dirty      BOOLEAN      NOT NULL DEFAULT FALSE
)`
}

func (postgresDriver) tableExistsQuery() string {
	return "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1"
}

func (postgresDriver) columnExistsQuery() string {
	return "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2"
}

func (postgresDriver) indexExists(_, name string) (string, []any) {
	return "SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1", []any{name}
}

func (postgresDriver) dropIndex(_, name string) string { return "DROP INDEX " + name }

// explicitIndexesQuery lists every index, primary keys included: their
// names are schema-wide too.
func (postgresDriver) explicitIndexesQuery() string {
	return "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1 ORDER BY indexname"
}

// moveIndexAside gives the index the legacy prefix, unless it has it.
func (postgresDriver) moveIndexAside(index string) string {
	if strings.HasPrefix(index, legacyPrefix) {
		return ""
	}
	return fmt.Sprintf(`ALTER INDEX "%s" RENAME TO "%s"`, index, legacyPrefix+index)
}

// insertOnceSuffix is none: the import runs in one transaction on empty
// tables, and a key conflict would mean two classic rows collapsing into
// one.
func (postgresDriver) insertOnceSuffix(string) string { return "" }

func (postgresDriver) booleanFalse() string { return "BOOLEAN NOT NULL DEFAULT FALSE" }

func (postgresDriver) boundedText(n int) string {
	return "VARCHAR(" + strconv.Itoa(n) + ") NOT NULL DEFAULT ''"
}

func (postgresDriver) nullBlob() string { return "BYTEA" }
func (postgresDriver) nullText() string { return "TEXT" }
