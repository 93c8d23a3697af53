package migrations_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0027_budget_groups", func() {
	for _, dialect := range testdb.MustDialects() {
		It("adds budget_groups, desired_lrps.budget_group and its index, keeps the rows there, and runs again cleanly, on "+dialect, func() {
			ctx := context.Background()
			conn, _ := freshDB(dialect)
			runner := newRunner(conn, dialect)
			_, err := runner.Up(ctx, migrations.UpOptions{Target: 26})
			Expect(err).NotTo(HaveOccurred())
			execSQL(conn, dialect, `INSERT INTO desired_lrps (process_guid, domain, instances, placement_tags, routes,
 annotation, active_definition_id, modification_tag_epoch, created_at, updated_at)
 VALUES ('web', 'apps', 3, '[]', '', '', 'v1', 'e', 5, 5)`)

			preview, err := runner.Preview(ctx, migrations.UpOptions{Target: 27})
			Expect(err).NotTo(HaveOccurred())
			Expect(preview.SQL()).To(ContainSubstring("add column desired_lrps.budget_group: ALTER TABLE desired_lrps ADD COLUMN budget_group"))
			Expect(preview.SQL()).To(ContainSubstring("create index desired_lrps_budget_group: CREATE INDEX desired_lrps_budget_group ON desired_lrps (budget_group)"))
			Expect(preview.SQL()).To(ContainSubstring("CREATE TABLE IF NOT EXISTS budget_groups"))

			applied, err := runner.Up(ctx, migrations.UpOptions{Target: 27})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0027_budget_groups"}))
			Expect(strings1(conn, "SELECT budget_group FROM desired_lrps")).To(Equal([]string{""}), "in no group, as before")
			execSQL(conn, dialect, "INSERT INTO budget_groups (name, max_unavailable, requested_by, created_at, updated_at) VALUES ('checkout', '2', 'op', 1, 1)")

			By("running again, as after a crash (or MySQL's implicit commit) between the DDL and the version's record")
			execSQL(conn, dialect, "UPDATE desired_lrps SET budget_group = 'checkout'")
			execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 27)
			preview, err = runner.Preview(ctx, migrations.UpOptions{Target: 27, RetryDirty: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(preview.SQL()).To(ContainSubstring("index desired_lrps_budget_group exists: nothing to create"))
			applied, err = runner.Up(ctx, migrations.UpOptions{Target: 27, RetryDirty: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0027_budget_groups"}))
			Expect(strings1(conn, "SELECT budget_group FROM desired_lrps")).To(Equal([]string{"checkout"}))
			Expect(strings1(conn, "SELECT max_unavailable FROM budget_groups")).To(Equal([]string{"2"}))
		})
	}
})
