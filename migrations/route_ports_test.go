package migrations_test

import (
	"context"
	"database/sql"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0010 and 0011, route ports", func() {
	for _, dialect := range testdb.MustDialects() {
		It("adds run_infos.route_ports and actual_lrps.route_ports, NULL for the rows already there, and runs again cleanly on "+dialect, func() {
			ctx := context.Background()
			var conn *sql.DB
			conn, _ = freshDB(dialect)
			runner := newRunner(conn, dialect)
			_, err := runner.Up(ctx, migrations.UpOptions{Target: 9})
			Expect(err).NotTo(HaveOccurred())
			execSQL(conn, dialect, `INSERT INTO run_infos (process_guid, definition_id, content_hash, memory_mb, disk_mb, definition, created_at)
 VALUES ('web', 'v1', 'h', 0, 0, ?, 5)`, []byte{1})
			execSQL(conn, dialect, `INSERT INTO actual_lrps (process_guid, instance_index, presence, domain, definition_id, state,
 since, crash_reason, placement_error, modification_tag_epoch, modification_tag_index)
 VALUES ('web', 0, 'ORDINARY', 'apps', 'v1', 'UNCLAIMED', 5, '', '', 'e', 0)`)

			applied, err := runner.Up(ctx, migrations.UpOptions{Target: 11})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0010_definition_route_ports", "0011_instance_route_ports"}))
			Expect(strings1(conn, "SELECT COUNT(*) FROM run_infos WHERE route_ports IS NULL")).To(Equal([]string{"1"}))
			Expect(strings1(conn, "SELECT COUNT(*) FROM actual_lrps WHERE route_ports IS NULL")).To(Equal([]string{"1"}))

			execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 11)
			applied, err = runner.Up(ctx, migrations.UpOptions{RetryDirty: true, Target: 11})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0011_instance_route_ports"}))
		})
	}
})
