package migrations_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0026_cell_quarantine", func() {
	for _, dialect := range testdb.MustDialects() {
		It("adds the cells' quarantine columns, every cell already there neither quarantined nor cleared, and runs again cleanly, on "+dialect, func() {
			ctx := context.Background()
			conn, _ := freshDB(dialect)
			runner := newRunner(conn, dialect)
			_, err := runner.Up(ctx, migrations.UpOptions{Target: 25})
			Expect(err).NotTo(HaveOccurred())
			execSQL(conn, dialect, `INSERT INTO cells (cell_id, rep_url, zone, memory_mb, disk_mb, max_instances, placement_tags,
 expires_at, registered_at, draining) VALUES ('cell-a', 'http://a', 'z1', 1024, 1024, 10, '[]', 5, 1, ?)`, false)

			preview, err := runner.Preview(ctx, migrations.UpOptions{Target: 26})
			Expect(err).NotTo(HaveOccurred())
			Expect(preview.SQL()).To(ContainSubstring("add column cells.quarantined_at: ALTER TABLE cells ADD COLUMN quarantined_at BIGINT NOT NULL DEFAULT 0"))
			Expect(preview.SQL()).To(ContainSubstring("add column cells.quarantine_cleared_by: ALTER TABLE cells ADD COLUMN quarantine_cleared_by"))

			applied, err := runner.Up(ctx, migrations.UpOptions{Target: 26})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0026_cell_quarantine"}))
			Expect(strings1(conn, "SELECT quarantined_at FROM cells")).To(Equal([]string{"0"}))
			Expect(strings1(conn, "SELECT quarantine_reason FROM cells")).To(Equal([]string{""}))
			Expect(strings1(conn, "SELECT quarantine_cleared_at FROM cells")).To(Equal([]string{"0"}))

			By("running again, as after a crash (or MySQL's implicit commit) between the DDL and the version's record")
			execSQL(conn, dialect, "UPDATE cells SET quarantined_at = 7, quarantine_reason = 'spike'")
			execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 26)
			applied, err = runner.Up(ctx, migrations.UpOptions{Target: 26, RetryDirty: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0026_cell_quarantine"}))
			Expect(strings1(conn, "SELECT quarantined_at FROM cells")).To(Equal([]string{"7"}))
			Expect(strings1(conn, "SELECT quarantine_reason FROM cells")).To(Equal([]string{"spike"}))
		})
	}
})
