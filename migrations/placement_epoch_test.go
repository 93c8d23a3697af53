package migrations_test

import (
	"context"
	"database/sql"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0006_placement_epoch", func() {
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
			})

			It("starts the epoch at 1 in its one row, and keeps what it counted when run again", func() {
				_, err := runner.Up(ctx, migrations.UpOptions{Target: 6})
				Expect(err).NotTo(HaveOccurred())
				Expect(strings1(conn, "SELECT epoch FROM placement_epoch WHERE id = 1")).To(Equal([]string{"1"}))

				execSQL(conn, dialect, "UPDATE placement_epoch SET epoch = 42 WHERE id = 1")
				execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 6)
				applied, err := runner.Up(ctx, migrations.UpOptions{Target: 6, RetryDirty: true})
				Expect(err).NotTo(HaveOccurred())
				Expect(ids(applied)).To(Equal([]string{"0006_placement_epoch"}))
				Expect(strings1(conn, "SELECT epoch FROM placement_epoch")).To(Equal([]string{"42"}))
			})
		})
	}
})
