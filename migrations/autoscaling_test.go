package migrations_test

import (
	"context"
	"database/sql"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0009_autoscaling", func() {
	for _, dialect := range testdb.MustDialects() {
		Context("on "+dialect, func() {
			var (
				ctx    context.Context
				conn   *sql.DB
				runner *migrations.Runner
			)

			// insertLRP stores a desired LRP as a board without autoscaling
			// did: the columns 0009 adds are not named.
			insertLRP := func(guid string) {
				execSQL(conn, dialect, `INSERT INTO desired_lrps (process_guid, domain, instances, placement_tags, routes,
 annotation, active_definition_id, modification_tag_epoch, created_at, updated_at)
 VALUES (?, 'apps', 2, '[]', '', '', 'v1', 'e', 5, 5)`, guid)
			}

			BeforeEach(func() {
				ctx = context.Background()
				conn, _ = freshDB(dialect)
				runner = newRunner(conn, dialect)
				_, err := runner.Up(ctx, migrations.UpOptions{Target: 8})
				Expect(err).NotTo(HaveOccurred())
				insertLRP("web")
			})

			// unscaled counts the LRPs with neither column set.
			unscaled := func() []string {
				return strings1(conn, "SELECT COUNT(*) FROM desired_lrps WHERE autoscaling IS NULL AND autoscaler IS NULL")
			}
			// blob is larger than MySQL's 64 KiB BLOB (MEDIUMBLOB holds it).
			blob := make([]byte, 70_000)
			for i := range blob {
				blob[i] = byte(i * 7)
			}
			columnsWork := func() {
				execSQL(conn, dialect, "UPDATE desired_lrps SET autoscaling = ?, autoscaler = ? WHERE process_guid = 'web'",
					blob[:100], blob)
				var settings, status []byte
				Expect(conn.QueryRow("SELECT autoscaling, autoscaler FROM desired_lrps WHERE process_guid = 'web'").
					Scan(&settings, &status)).To(Succeed())
				Expect(settings).To(Equal(blob[:100]))
				Expect(status).To(Equal(blob))
			}

			It("adds desired_lrps.autoscaling and desired_lrps.autoscaler, NULL for the LRPs already there", func() {
				applied, err := runner.Up(ctx, migrations.UpOptions{Target: 9})
				Expect(err).NotTo(HaveOccurred())
				Expect(ids(applied)).To(Equal([]string{"0009_autoscaling"}))
				Expect(unscaled()).To(Equal([]string{"1"}))
				columnsWork()
				// An LRP inserted without the columns has neither.
				insertLRP("api")
				Expect(unscaled()).To(Equal([]string{"1"}))
			})

			It("runs again cleanly, keeping what was stored", func() {
				_, err := runner.Up(ctx, migrations.UpOptions{Target: 9})
				Expect(err).NotTo(HaveOccurred())
				columnsWork()
				// As after a crash (or MySQL's implicit commit) between the
				// columns' DDL and the version's record.
				execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 9)

				applied, err := runner.Up(ctx, migrations.UpOptions{RetryDirty: true, Target: 9})
				Expect(err).NotTo(HaveOccurred())
				Expect(ids(applied)).To(Equal([]string{"0009_autoscaling"}))
				var status []byte
				Expect(conn.QueryRow("SELECT autoscaler FROM desired_lrps WHERE process_guid = 'web'").Scan(&status)).To(Succeed())
				Expect(status).To(Equal(blob))

				preview, err := runner.Preview(ctx, migrations.UpOptions{Target: 9})
				Expect(err).NotTo(HaveOccurred())
				Expect(preview.Empty()).To(BeTrue())
			})

			It("adds the column still missing when it runs again after adding the first one only", func() {
				// As after MySQL committed the first ALTER and the board
				// died before the second.
				execSQL(conn, dialect, "ALTER TABLE desired_lrps ADD COLUMN autoscaling "+map[string]string{
					migrations.SQLite: "BLOB", migrations.Postgres: "BYTEA", migrations.MySQL: "MEDIUMBLOB"}[dialect])
				preview, err := runner.Preview(ctx, migrations.UpOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(preview.SQL()).To(ContainSubstring("desired_lrps.autoscaling exists: nothing to add"))
				Expect(preview.SQL()).To(ContainSubstring("add column desired_lrps.autoscaler"))

				applied, err := runner.Up(ctx, migrations.UpOptions{Target: 9})
				Expect(err).NotTo(HaveOccurred())
				Expect(ids(applied)).To(Equal([]string{"0009_autoscaling"}))
				columnsWork()
			})

			It("says in its preview what the Go step will add, and that it adds nothing once the columns exist", func() {
				preview, err := runner.Preview(ctx, migrations.UpOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(preview.SQL()).To(ContainSubstring("add column desired_lrps.autoscaling"))
				Expect(preview.SQL()).To(ContainSubstring("add column desired_lrps.autoscaler"))

				_, err = runner.Up(ctx, migrations.UpOptions{})
				Expect(err).NotTo(HaveOccurred())
				execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 9)
				preview, err = runner.Preview(ctx, migrations.UpOptions{RetryDirty: true})
				Expect(err).NotTo(HaveOccurred())
				Expect(preview.SQL()).To(ContainSubstring("desired_lrps.autoscaling exists: nothing to add"))
				Expect(preview.SQL()).To(ContainSubstring("desired_lrps.autoscaler exists: nothing to add"))
			})
		})
	}
})
