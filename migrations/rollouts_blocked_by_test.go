package migrations_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"context"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0025_rollouts_blocked_by", func() {
	for _, dialect := range testdb.MustDialects() {
		It("adds rollouts.blocked_by, NULL for the records already there, and runs again cleanly, on "+dialect, func() {
			ctx := context.Background()
			conn, _ := freshDB(dialect)
			runner := newRunner(conn, dialect)
			_, err := runner.Up(ctx, migrations.UpOptions{Target: 24})
			Expect(err).NotTo(HaveOccurred())
			execSQL(conn, dialect, `INSERT INTO rollouts (process_guid, state, reason, definition_id, started_at,
 progress_at, settled, modification_index, operation_id) VALUES ('web', 'PROGRESSING', 'rolling', 'v2', 5, 7, ?, 1, '')`, false)

			preview, err := runner.Preview(ctx, migrations.UpOptions{Target: 25})
			Expect(err).NotTo(HaveOccurred())
			Expect(preview.SQL()).To(ContainSubstring("add column rollouts.blocked_by: ALTER TABLE rollouts ADD COLUMN blocked_by"))

			applied, err := runner.Up(ctx, migrations.UpOptions{Target: 25})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0025_rollouts_blocked_by"}))
			Expect(strings1(conn, "SELECT COUNT(*) FROM rollouts WHERE blocked_by IS NULL")).To(Equal([]string{"1"}))

			By("running again, as after a crash (or MySQL's implicit commit) between the DDL and the version's record")
			execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 25)
			applied, err = runner.Up(ctx, migrations.UpOptions{Target: 25, RetryDirty: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0025_rollouts_blocked_by"}))
		})
	}
})
