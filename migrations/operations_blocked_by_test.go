package migrations_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0030_operations_blocked_by", func() {
	for _, dialect := range testdb.MustDialects() {
		It("adds operations.blocked_by, NULL for the operations already there, and runs again cleanly, on "+dialect, func() {
			ctx := context.Background()
			conn, _ := freshDB(dialect)
			runner := newRunner(conn, dialect)
			_, err := runner.Up(ctx, migrations.UpOptions{Target: 29})
			Expect(err).NotTo(HaveOccurred())
			execSQL(conn, dialect, `INSERT INTO operations (id, process_guid, sequence, kind, status, reason, definition_id, requested_by, ended)
 VALUES ('000000000000000000000001', 'web', 1, 'VALIDATE', 'IN_PROGRESS', '', 'v2', '', ?)`, false)

			preview, err := runner.Preview(ctx, migrations.UpOptions{Target: 30})
			Expect(err).NotTo(HaveOccurred())
			Expect(preview.SQL()).To(ContainSubstring("add column operations.blocked_by: ALTER TABLE operations ADD COLUMN blocked_by"))

			applied, err := runner.Up(ctx, migrations.UpOptions{Target: 30})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0030_operations_blocked_by"}))
			Expect(strings1(conn, "SELECT COUNT(*) FROM operations WHERE blocked_by IS NULL")).To(Equal([]string{"1"}))

			By("running again, as after a crash (or MySQL's implicit commit) between the DDL and the version's record")
			execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 30)
			applied, err = runner.Up(ctx, migrations.UpOptions{Target: 30, RetryDirty: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0030_operations_blocked_by"}))
		})
	}
})
