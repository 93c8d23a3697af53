package migrations_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0024_disruption_budget_and_drains", func() {
	for _, dialect := range testdb.MustDialects() {
		It("adds desired_lrps.disruption_budget, cells.drain_started_at, drain_deadline and drain_overdue_at, keeps the rows there, and runs again cleanly, on "+dialect, func() {
			ctx := context.Background()
			conn, _ := freshDB(dialect)
			runner := newRunner(conn, dialect)
			_, err := runner.Up(ctx, migrations.UpOptions{Target: 23})
			Expect(err).NotTo(HaveOccurred())
			execSQL(conn, dialect, `INSERT INTO desired_lrps (process_guid, domain, instances, placement_tags, routes,
 annotation, active_definition_id, modification_tag_epoch, created_at, updated_at)
 VALUES ('web', 'apps', 3, '[]', '', '', 'v1', 'e', 5, 5)`)

			preview, err := runner.Preview(ctx, migrations.UpOptions{Target: 24})
			Expect(err).NotTo(HaveOccurred())
			Expect(preview.SQL()).To(ContainSubstring("add column desired_lrps.disruption_budget: ALTER TABLE desired_lrps ADD COLUMN disruption_budget"))
			Expect(preview.SQL()).To(ContainSubstring("add column cells.drain_started_at: ALTER TABLE cells ADD COLUMN drain_started_at BIGINT NOT NULL DEFAULT 0"))
			Expect(preview.SQL()).To(ContainSubstring("add column cells.drain_deadline: ALTER TABLE cells ADD COLUMN drain_deadline BIGINT NOT NULL DEFAULT 0"))
			Expect(preview.SQL()).To(ContainSubstring("add column cells.drain_overdue_at: ALTER TABLE cells ADD COLUMN drain_overdue_at BIGINT NOT NULL DEFAULT 0"))

			applied, err := runner.Up(ctx, migrations.UpOptions{Target: 24})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0024_disruption_budget_and_drains"}))
			Expect(strings1(conn, "SELECT disruption_budget FROM desired_lrps")).To(Equal([]string{""}), "the strategy's, as before")

			By("running again, as after a crash (or MySQL's implicit commit) between the DDL and the version's record")
			execSQL(conn, dialect, "UPDATE desired_lrps SET disruption_budget = '25%'")
			execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 24)
			applied, err = runner.Up(ctx, migrations.UpOptions{Target: 24, RetryDirty: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0024_disruption_budget_and_drains"}))
			Expect(strings1(conn, "SELECT disruption_budget FROM desired_lrps")).To(Equal([]string{"25%"}))
		})
	}
})
