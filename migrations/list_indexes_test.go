package migrations_test

import (
	"context"
	"database/sql"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

// indexColumns lists an index's columns in order; none when it is missing.
func indexColumns(conn *sql.DB, dialect, table, index string) []string {
	GinkgoHelper()
	switch dialect {
	case testdb.SQLite:
		return strings1(conn, "SELECT name FROM pragma_index_info(?) ORDER BY seqno", index)
	case testdb.Postgres:
		return strings1(conn, `SELECT a.attname FROM pg_index i
 JOIN pg_class c ON c.oid = i.indexrelid
 JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
 JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
 WHERE c.relname = $1 ORDER BY array_position(i.indkey::int2[], a.attnum)`, index)
	}
	return strings1(conn, `SELECT column_name FROM information_schema.statistics
 WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ? ORDER BY seq_in_index`, table, index)
}

var _ = Describe("0012, list indexes", func() {
	for _, dialect := range testdb.MustDialects() {
		It("replaces the filter indexes with ones in list order, and runs again cleanly, on "+dialect, func() {
			ctx := context.Background()
			conn, _ := freshDB(dialect)
			runner := newRunner(conn, dialect)
			_, err := runner.Up(ctx, migrations.UpOptions{Target: 11})
			Expect(err).NotTo(HaveOccurred())
			Expect(indexColumns(conn, dialect, "actual_lrps", "actual_lrps_domain")).To(Equal([]string{"domain"}))

			preview, err := runner.Preview(ctx, migrations.UpOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(preview.SQL()).To(ContainSubstring("CREATE INDEX actual_lrps_cell_key ON actual_lrps (cell_id, process_guid, instance_index, presence)"))

			applied, err := runner.Up(ctx, migrations.UpOptions{Target: 12})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0012_list_indexes"}))
			expectListIndexes(conn, dialect)

			By("running again over a half-done run, as after a crash between two DDLs on MySQL")
			execSQL(conn, dialect, "CREATE INDEX actual_lrps_domain ON actual_lrps (domain)")
			execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 12)
			applied, err = runner.Up(ctx, migrations.UpOptions{Target: 12, RetryDirty: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0012_list_indexes"}))
			expectListIndexes(conn, dialect)
		})
	}
})

func expectListIndexes(conn *sql.DB, dialect string) {
	GinkgoHelper()
	Expect(indexColumns(conn, dialect, "desired_lrps", "desired_lrps_domain_key")).To(Equal([]string{"domain", "process_guid"}))
	Expect(indexColumns(conn, dialect, "actual_lrps", "actual_lrps_domain_key")).To(Equal([]string{"domain", "process_guid", "instance_index", "presence"}))
	Expect(indexColumns(conn, dialect, "actual_lrps", "actual_lrps_cell_key")).To(Equal([]string{"cell_id", "process_guid", "instance_index", "presence"}))
	for _, old := range []struct{ table, index string }{
		{"desired_lrps", "desired_lrps_domain"}, {"actual_lrps", "actual_lrps_domain"}, {"actual_lrps", "actual_lrps_cell_id"},
	} {
		Expect(indexColumns(conn, dialect, old.table, old.index)).To(BeEmpty(), old.index+" is gone")
	}
}
