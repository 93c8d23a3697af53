package migrations

import (
	"context"
	"fmt"
	"strconv"
)

// mysqlDriver is MySQL and MariaDB, which commit each DDL statement.
type mysqlDriver struct{}

// transactionalDDL is false: MySQL commits DDL as it goes, so the run is
// not one transaction; the dirty mark covers the gap.
func (mysqlDriver) transactionalDDL() bool { return false }

// lock takes the migration lock row (lock.go). The run works on the bare
// connection, each DDL statement committing itself; the fence check before
// each migration stops a run whose lock was taken over.
func (mysqlDriver) lock(ctx context.Context, s *session) error {
	if err := s.lockRow(ctx); err != nil {
		return err
	}
	s.release = s.unlockRow
	return nil
}

// finish has nothing to commit: every migration has committed its own
// changes.
func (mysqlDriver) finish(context.Context, *session) error { return nil }

func (mysqlDriver) versionTableDDL() string {
	return `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    INT          NOT NULL PRIMARY KEY,
  name       VARCHAR(255) NOT NULL,
  checksum   VARCHAR(64)  NOT NULL,
  applied_at BIGINT       NOT NULL,
  dirty      BOOLEAN      NOT NULL DEFAULT FALSE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`
}

func (mysqlDriver) tableExistsQuery() string {
	return "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?"
}

func (mysqlDriver) columnExistsQuery() string {
	return "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? AND column_name = ?"
}

// indexExists looks in the table: MySQL's index names are per table.
func (mysqlDriver) indexExists(table, name string) (string, []any) {
	return "SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?",
		[]any{table, name}
}

func (mysqlDriver) dropIndex(table, name string) string { return "DROP INDEX " + name + " ON " + table }

// explicitIndexesQuery is none: MySQL's index names are per table, and a
// classic index cannot collide with the board's.
func (mysqlDriver) explicitIndexesQuery() string { return "" }

func (mysqlDriver) moveIndexAside(string) string { return "" }

// insertOnceSuffix skips a row whose key exists: an interrupted import is
// retried over rows it already wrote.
func (mysqlDriver) insertOnceSuffix(firstColumn string) string {
	return fmt.Sprintf(" ON DUPLICATE KEY UPDATE %s = %s", firstColumn, firstColumn)
}

func (mysqlDriver) booleanFalse() string { return "BOOLEAN NOT NULL DEFAULT FALSE" }

func (mysqlDriver) boundedText(n int) string {
	return "VARCHAR(" + strconv.Itoa(n) + ") NOT NULL DEFAULT ''"
}

// nullBlob: MySQL's BLOB stops at 64 KiB; MEDIUMBLOB matches the other
// blob columns.
func (mysqlDriver) nullBlob() string { return "MEDIUMBLOB" }

// nullText: MySQL's TEXT stops at 64 KiB, and routes may take 128.
func (mysqlDriver) nullText() string { return "MEDIUMTEXT" }
