package migrations_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0023_crashes", func() {
	for _, dialect := range testdb.MustDialects() {
		It("adds crashes with its crashed_at index, and runs again cleanly, on "+dialect, func() {
			ctx := context.Background()
			conn, _ := freshDB(dialect)
			runner := newRunner(conn, dialect)
			_, err := runner.Up(ctx, migrations.UpOptions{Target: 22})
			Expect(err).NotTo(HaveOccurred())

			preview, err := runner.Preview(ctx, migrations.UpOptions{Target: 23})
			Expect(err).NotTo(HaveOccurred())
			Expect(preview.SQL()).To(ContainSubstring("CREATE TABLE IF NOT EXISTS crashes"))
			Expect(preview.SQL()).To(ContainSubstring("crashes_crashed_at"))

			applied, err := runner.Up(ctx, migrations.UpOptions{Target: 23})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0023_crashes"}))
			execSQL(conn, dialect, "INSERT INTO crashes (process_guid, definition_id, cell_id, crashed_at) VALUES ('web', 'v1', 'cell-a', 7)")

			By("running again, as after a crash (or MySQL's implicit commit) between the DDL and the version's record")
			execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 23)
			applied, err = runner.Up(ctx, migrations.UpOptions{Target: 23, RetryDirty: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0023_crashes"}))
			Expect(strings1(conn, "SELECT cell_id FROM crashes WHERE crashed_at = 7")).To(Equal([]string{"cell-a"}), "what was stored is kept")
		})
	}
})
