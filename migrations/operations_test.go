package migrations_test

import (
	"context"
	"database/sql"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	sqldialect "github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0007_operations", func() {
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
				_, err := runner.Up(ctx, migrations.UpOptions{Target: 6})
				Expect(err).NotTo(HaveOccurred())
				// A rollout record written before operations existed.
				execSQL(conn, dialect, `INSERT INTO rollouts (process_guid, state, reason, definition_id, started_at,
 progress_at, settled, modification_index) VALUES ('web', 'PROGRESSING', 'rolling from v1 to v2', 'v2', 5, 5, ?, 1)`, false)
			})

			insertOperation := func(id, guid string, sequence int64, status string, ended bool) error {
				_, err := conn.Exec(sqldialect.Rebind(sqldialect.Name(dialect), `INSERT INTO operations (id, process_guid, sequence, kind, status, reason,
 parameters, definition_id, requested_by, created_at, history, ended, modification_index)
 VALUES (?, ?, ?, 'UPDATE_DEFINITION', ?, '', ?, 'v2', 'cork from 127.0.0.1:5000', 7, ?, ?, 1)`),
					id, guid, sequence, status, []byte{1, 2}, []byte{3}, ended)
				return err
			}
			// operationsWork stores operations and reads them back the ways
			// the store does.
			operationsWork := func() {
				Expect(insertOperation("0000000000000001aaaaaaaa", "web", 1, "FINISHED", true)).To(Succeed())
				Expect(insertOperation("0000000000000002aaaaaaaa", "web", 2, "IN_PROGRESS", false)).To(Succeed())
				Expect(insertOperation("0000000000000003aaaaaaaa", "api", 1, "PENDING", false)).To(Succeed())
				Expect(strings1(conn, sqldialect.Rebind(sqldialect.Name(dialect), "SELECT id FROM operations WHERE ended = ? ORDER BY process_guid, sequence"), false)).
					To(Equal([]string{"0000000000000003aaaaaaaa", "0000000000000002aaaaaaaa"}))
				Expect(strings1(conn, "SELECT id FROM operations ORDER BY id DESC")).
					To(Equal([]string{"0000000000000003aaaaaaaa", "0000000000000002aaaaaaaa", "0000000000000001aaaaaaaa"}))
				execSQL(conn, dialect, "UPDATE rollouts SET operation_id = ? WHERE process_guid = 'web'", "0000000000000002aaaaaaaa")
				Expect(strings1(conn, "SELECT operation_id FROM rollouts")).To(Equal([]string{"0000000000000002aaaaaaaa"}))
			}

			It("adds the operations table and rollouts.operation_id, empty for the records already there", func() {
				applied, err := runner.Up(ctx, migrations.UpOptions{Target: 7})
				Expect(err).NotTo(HaveOccurred())
				Expect(ids(applied)).To(Equal([]string{"0007_operations"}))
				Expect(tables(conn, dialect)).To(ContainElement("operations"))
				Expect(strings1(conn, "SELECT operation_id FROM rollouts")).To(Equal([]string{""}))
				operationsWork()
			})

			It("numbers each LRP's operations once: a second operation with a taken sequence is refused", func() {
				_, err := runner.Up(ctx, migrations.UpOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(insertOperation("0000000000000001aaaaaaaa", "web", 1, "FINISHED", true)).To(Succeed())
				Expect(insertOperation("0000000000000002aaaaaaaa", "web", 1, "FINISHED", true)).NotTo(Succeed())
				Expect(insertOperation("0000000000000002aaaaaaaa", "api", 1, "FINISHED", true)).To(Succeed())
			})

			It("runs again cleanly, keeping what was stored", func() {
				_, err := runner.Up(ctx, migrations.UpOptions{Target: 7})
				Expect(err).NotTo(HaveOccurred())
				operationsWork()
				execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 7)

				// Target 7: the dirty 0007 alone runs again (0008 comes after).
				applied, err := runner.Up(ctx, migrations.UpOptions{Target: 7, RetryDirty: true})
				Expect(err).NotTo(HaveOccurred())
				Expect(ids(applied)).To(Equal([]string{"0007_operations"}))
				Expect(strings1(conn, "SELECT COUNT(*) FROM operations")).To(Equal([]string{"3"}))
				Expect(strings1(conn, "SELECT operation_id FROM rollouts")).To(Equal([]string{"0000000000000002aaaaaaaa"}))

				preview, err := runner.Preview(ctx, migrations.UpOptions{Target: 7})
				Expect(err).NotTo(HaveOccurred())
				Expect(preview.Empty()).To(BeTrue())
			})

			It("says in its preview what the Go step will add", func() {
				preview, err := runner.Preview(ctx, migrations.UpOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(preview.SQL()).To(ContainSubstring("add column rollouts.operation_id"))
				Expect(preview.SQL()).To(ContainSubstring("CREATE TABLE IF NOT EXISTS operations"))
			})
		})
	}
})
