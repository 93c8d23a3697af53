package migrations_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0028_receipts_on_events", func() {
	for _, dialect := range testdb.MustDialects() {
		It("adds the outbox's and the log's receipt columns, NULL on the rows already there, and runs again cleanly, on "+dialect, func() {
			ctx := context.Background()
			conn, _ := freshDB(dialect)
			runner := newRunner(conn, dialect)
			_, err := runner.Up(ctx, migrations.UpOptions{Target: 27})
			Expect(err).NotTo(HaveOccurred())
			execSQL(conn, dialect, "INSERT INTO event_outbox (event_type, event_key, payload) VALUES ('desired_lrp_created', 'web', ?)", []byte("p"))

			preview, err := runner.Preview(ctx, migrations.UpOptions{Target: 28})
			Expect(err).NotTo(HaveOccurred())
			Expect(preview.SQL()).To(ContainSubstring("add column event_outbox.receipt: ALTER TABLE event_outbox ADD COLUMN receipt"))
			Expect(preview.SQL()).To(ContainSubstring("add column event_log.receipt: ALTER TABLE event_log ADD COLUMN receipt"))

			applied, err := runner.Up(ctx, migrations.UpOptions{Target: 28})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0028_receipts_on_events"}))
			Expect(strings1(conn, "SELECT COUNT(*) FROM event_outbox WHERE receipt IS NULL")).To(Equal([]string{"1"}))

			By("running again, as after a crash (or MySQL's implicit commit) between the DDL and the version's record")
			execSQL(conn, dialect, "UPDATE event_outbox SET receipt = ?", []byte("a receipt token.."))
			execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 28)
			applied, err = runner.Up(ctx, migrations.UpOptions{Target: 28, RetryDirty: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0028_receipts_on_events"}))
			Expect(strings1(conn, "SELECT COUNT(*) FROM event_outbox WHERE receipt IS NOT NULL")).To(Equal([]string{"1"}))
		})
	}
})
