package migrations_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	sqldialect "github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0021_freeze_windows", func() {
	for _, dialect := range testdb.MustDialects() {
		It("adds freeze_windows and rollouts.freeze_exemption, empty for the records already there, and runs again cleanly, on "+dialect, func() {
			ctx := context.Background()
			conn, _ := freshDB(dialect)
			runner := newRunner(conn, dialect)
			_, err := runner.Up(ctx, migrations.UpOptions{Target: 20})
			Expect(err).NotTo(HaveOccurred())
			// A record written before freeze windows existed.
			execSQL(conn, dialect, `INSERT INTO rollouts (process_guid, state, reason, definition_id, started_at,
 progress_at, settled, modification_index, operation_id) VALUES ('web', 'PROGRESSING', 'rolling', 'v2', 5, 5, ?, 1, '')`, false)

			preview, err := runner.Preview(ctx, migrations.UpOptions{Target: 21})
			Expect(err).NotTo(HaveOccurred())
			Expect(preview.SQL()).To(ContainSubstring("add column rollouts.freeze_exemption: ALTER TABLE rollouts ADD COLUMN freeze_exemption"))
			Expect(preview.SQL()).To(ContainSubstring("CREATE TABLE IF NOT EXISTS freeze_windows"))

			applied, err := runner.Up(ctx, migrations.UpOptions{Target: 21})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0021_freeze_windows"}))
			Expect(strings1(conn, "SELECT COUNT(*) FROM rollouts WHERE freeze_exemption = ''")).To(Equal([]string{"1"}))
			execSQL(conn, dialect, "UPDATE rollouts SET freeze_exemption = 'override' WHERE process_guid = 'web'")
			execSQL(conn, dialect, "INSERT INTO freeze_windows (name, spec, created_at) VALUES ('xmas', ?, 7)", []byte{0x0a, 0x04, 'x', 'm', 'a', 's'})

			By("refusing a second window of the same name")
			_, err = conn.ExecContext(ctx, sqldialect.Rebind(sqldialect.Name(dialect), "INSERT INTO freeze_windows (name, spec, created_at) VALUES ('xmas', ?, 8)"), []byte{0x0a})
			Expect(err).To(HaveOccurred())

			By("running again, as after a crash (or MySQL's implicit commit) between the DDL and the version's record")
			execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 21)
			applied, err = runner.Up(ctx, migrations.UpOptions{Target: 21, RetryDirty: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0021_freeze_windows"}))
			Expect(strings1(conn, "SELECT freeze_exemption FROM rollouts")).To(Equal([]string{"override"}), "what was stored is kept")
			Expect(strings1(conn, "SELECT name FROM freeze_windows")).To(Equal([]string{"xmas"}), "what was stored is kept")
		})
	}
})
