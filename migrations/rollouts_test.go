package migrations_test

import (
	"context"
	"database/sql"

	sqldialect "github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("0005_rollouts", func() {
	for _, dialect := range testdb.MustDialects() {
		Context("on "+dialect, func() {
			var (
				ctx    context.Context
				conn   *sql.DB
				runner *migrations.Runner
			)

			BeforeEach(func() {
				ctx = context.Background()
				conn, _ = freshDB(dialect)
				runner = newRunner(conn, dialect)
				_, err := runner.Up(ctx, migrations.UpOptions{Target: 4})
				Expect(err).NotTo(HaveOccurred())
				// An instance stored before rolling updates existed.
				execSQL(conn, dialect, `INSERT INTO actual_lrps (process_guid, instance_index, presence, domain,
 definition_id, state, crash_reason, since, placement_error, modification_tag_epoch)
 VALUES ('web', 0, 'ORDINARY', 'apps', 'v1', 'RUNNING', '', 1, '', 'e')`)
			})

			// rolloutsWork stores and reads back a rollout record and a
			// RETIRING row told to stop.
			rolloutsWork := func() {
				execSQL(conn, dialect, `INSERT INTO rollouts (process_guid, state, reason, definition_id, started_at,
 progress_at, settled, modification_index) VALUES ('web', 'PROGRESSING', 'rolling from v1 to v2', 'v2', 5, 5, ?, 1)`, false)
				Expect(strings1(conn, sqldialect.Rebind(sqldialect.Name(dialect), "SELECT state FROM rollouts WHERE process_guid = ? AND settled = ?"), "web", false)).
					To(Equal([]string{"PROGRESSING"}))
				execSQL(conn, dialect, `INSERT INTO actual_lrps (process_guid, instance_index, presence, domain,
 definition_id, state, crash_reason, since, placement_error, modification_tag_epoch, stop_requested)
 VALUES ('web', 0, 'RETIRING', 'apps', 'v1', 'RUNNING', '', 1, '', 'e', ?)`, true)
				Expect(strings1(conn, "SELECT presence FROM actual_lrps WHERE stop_requested ORDER BY presence")).
					To(Equal([]string{"RETIRING"}))
			}

			It("adds the rollouts table and actual_lrps.stop_requested, false for the rows already there", func() {
				applied, err := runner.Up(ctx, migrations.UpOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(ids(applied)).To(ContainElement("0005_rollouts"))
				Expect(tables(conn, dialect)).To(ContainElement("rollouts"))
				Expect(strings1(conn, "SELECT process_guid FROM actual_lrps WHERE NOT stop_requested")).To(Equal([]string{"web"}))
				rolloutsWork()
			})

			It("runs again cleanly, keeping what was stored", func() {
				_, err := runner.Up(ctx, migrations.UpOptions{Target: 5})
				Expect(err).NotTo(HaveOccurred())
				rolloutsWork()
				execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 5)

				applied, err := runner.Up(ctx, migrations.UpOptions{Target: 5, RetryDirty: true})
				Expect(err).NotTo(HaveOccurred())
				Expect(ids(applied)).To(Equal([]string{"0005_rollouts"}))
				Expect(strings1(conn, "SELECT state FROM rollouts")).To(Equal([]string{"PROGRESSING"}))
				Expect(strings1(conn, "SELECT presence FROM actual_lrps WHERE stop_requested")).To(Equal([]string{"RETIRING"}))

				preview, err := runner.Preview(ctx, migrations.UpOptions{Target: 5})
				Expect(err).NotTo(HaveOccurred())
				Expect(preview.Empty()).To(BeTrue())
			})

			It("says in its preview what the Go step will add, and that nothing is left to add once added", func() {
				preview, err := runner.Preview(ctx, migrations.UpOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(preview.SQL()).To(ContainSubstring("add column actual_lrps.stop_requested"))
				Expect(preview.SQL()).To(ContainSubstring("CREATE TABLE IF NOT EXISTS rollouts"))
			})
		})
	}
})
