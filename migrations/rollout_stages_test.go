package migrations_test

import (
	"context"
	"database/sql"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0008_rollout_stages", func() {
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
				_, err := runner.Up(ctx, migrations.UpOptions{Target: 7})
				Expect(err).NotTo(HaveOccurred())
				// A rollout record written before staged rollouts existed.
				execSQL(conn, dialect, `INSERT INTO rollouts (process_guid, state, reason, definition_id, started_at,
 progress_at, settled, modification_index, operation_id) VALUES ('web', 'PROGRESSING', 'rolling from v1 to v2', 'v2', 5, 5, ?, 1, '')`, false)
			})

			// unstaged counts the records without a stage.
			unstaged := func() []string {
				return strings1(conn, "SELECT COUNT(*) FROM rollouts WHERE stage IS NULL")
			}
			// stageWorks stores a stage blob larger than MySQL's 64 KiB BLOB
			// (MEDIUMBLOB holds it) and reads it back byte for byte.
			stage := make([]byte, 70_000)
			for i := range stage {
				stage[i] = byte(i)
			}
			stageWorks := func() {
				execSQL(conn, dialect, "UPDATE rollouts SET stage = ? WHERE process_guid = 'web'", stage)
				var got []byte
				Expect(conn.QueryRow("SELECT stage FROM rollouts WHERE process_guid = 'web'").Scan(&got)).To(Succeed())
				Expect(got).To(Equal(stage))
			}

			It("adds rollouts.stage, NULL for the records already there", func() {
				applied, err := runner.Up(ctx, migrations.UpOptions{Target: 8})
				Expect(err).NotTo(HaveOccurred())
				Expect(ids(applied)).To(Equal([]string{"0008_rollout_stages"}))
				Expect(unstaged()).To(Equal([]string{"1"}))
				stageWorks()
				// A record inserted without the column is not staged.
				execSQL(conn, dialect, `INSERT INTO rollouts (process_guid, state, reason, definition_id, started_at,
 progress_at, settled, modification_index, operation_id) VALUES ('api', 'COMPLETE', '', 'v1', 5, 5, ?, 1, '')`, true)
				Expect(unstaged()).To(Equal([]string{"1"}))
			})

			It("runs again cleanly, keeping what was stored", func() {
				_, err := runner.Up(ctx, migrations.UpOptions{Target: 8})
				Expect(err).NotTo(HaveOccurred())
				stageWorks()
				// As after a crash (or MySQL's implicit commit) between the
				// column's DDL and the version's record.
				execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 8)

				// Target 8: the dirty 0008 alone runs again (0009 comes after).
				applied, err := runner.Up(ctx, migrations.UpOptions{Target: 8, RetryDirty: true})
				Expect(err).NotTo(HaveOccurred())
				Expect(ids(applied)).To(Equal([]string{"0008_rollout_stages"}))
				var got []byte
				Expect(conn.QueryRow("SELECT stage FROM rollouts WHERE process_guid = 'web'").Scan(&got)).To(Succeed())
				Expect(got).To(Equal(stage))

				preview, err := runner.Preview(ctx, migrations.UpOptions{Target: 8})
				Expect(err).NotTo(HaveOccurred())
				Expect(preview.Empty()).To(BeTrue())
			})

			It("says in its preview what the Go step will add, and that it adds nothing once the column exists", func() {
				preview, err := runner.Preview(ctx, migrations.UpOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(preview.SQL()).To(ContainSubstring("add column rollouts.stage"))

				_, err = runner.Up(ctx, migrations.UpOptions{Target: 8})
				Expect(err).NotTo(HaveOccurred())
				execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 8)
				preview, err = runner.Preview(ctx, migrations.UpOptions{Target: 8, RetryDirty: true})
				Expect(err).NotTo(HaveOccurred())
				Expect(preview.SQL()).To(ContainSubstring("rollouts.stage exists: nothing to add"))
			})
		})
	}
})
