package migrations_test

import (
	"context"
	"database/sql"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

// receiptColumns lists commit_receipts' columns; none where the table is
// missing.
func receiptColumns(conn *sql.DB, dialect string) []string {
	GinkgoHelper()
	switch dialect {
	case testdb.SQLite:
		return strings1(conn, "SELECT name FROM pragma_table_info('commit_receipts') ORDER BY cid")
	case testdb.Postgres:
		return strings1(conn, `SELECT column_name FROM information_schema.columns
 WHERE table_schema = current_schema() AND table_name = 'commit_receipts' ORDER BY ordinal_position`)
	}
	return strings1(conn, `SELECT column_name FROM information_schema.columns
 WHERE table_schema = DATABASE() AND table_name = 'commit_receipts' ORDER BY ordinal_position`)
}

var _ = Describe("0018, receipts keyed by time", func() {
	for _, dialect := range testdb.MustDialects() {
		It("drops created_at and deletes the receipts of random tokens, and runs again cleanly, on "+dialect, func() {
			ctx := context.Background()
			conn, _ := freshDB(dialect)
			runner := newRunner(conn, dialect)
			_, err := runner.Up(ctx, migrations.UpOptions{Target: 17})
			Expect(err).NotTo(HaveOccurred())
			if dialect == testdb.SQLite {
				Expect(receiptColumns(conn, dialect)).To(BeEmpty())
			} else {
				Expect(receiptColumns(conn, dialect)).To(Equal([]string{"token", "created_at"}))
				execSQL(conn, dialect, "INSERT INTO commit_receipts (token, created_at) VALUES (?, ?), (?, ?)",
					[]byte("0123456789abcdef"), 1, []byte("fedcba9876543210"), 2)
			}

			preview, err := runner.Preview(ctx, migrations.UpOptions{})
			Expect(err).NotTo(HaveOccurred())
			if dialect == testdb.SQLite {
				Expect(preview.SQL()).To(ContainSubstring("commit_receipts.created_at is missing: nothing to do"))
			} else {
				Expect(preview.SQL()).To(ContainSubstring("ALTER TABLE commit_receipts DROP COLUMN created_at; DELETE FROM commit_receipts (2 receipts)"))
			}

			applied, err := runner.Up(ctx, migrations.UpOptions{Target: 18})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0018_receipts_keyed_by_time"}))
			expectReceiptsKeyedByTime(conn, dialect)

			By("running again after it finished, as after a crash before its version row was clean on MySQL")
			if dialect != testdb.SQLite {
				execSQL(conn, dialect, "INSERT INTO commit_receipts (token) VALUES (?)", []byte("a new receipt..."))
			}
			execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 18)
			applied, err = runner.Up(ctx, migrations.UpOptions{Target: 18, RetryDirty: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0018_receipts_keyed_by_time"}))
			expectReceiptsKeyedByTime(conn, dialect)
			if dialect != testdb.SQLite {
				Expect(strings1(conn, "SELECT COUNT(*) FROM commit_receipts")).To(Equal([]string{"1"}), "a receipt of a board that runs it is kept")
			}
		})
	}
})

func expectReceiptsKeyedByTime(conn *sql.DB, dialect string) {
	GinkgoHelper()
	if dialect == testdb.SQLite {
		Expect(receiptColumns(conn, dialect)).To(BeEmpty(), "SQLite keeps no receipts")
		return
	}
	Expect(receiptColumns(conn, dialect)).To(Equal([]string{"token"}))
	Expect(indexColumns(conn, dialect, "commit_receipts", "commit_receipts_created_at")).To(BeEmpty())
}
