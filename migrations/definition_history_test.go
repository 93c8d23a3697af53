package migrations_test

import (
	"context"
	"database/sql"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0014, definition history", func() {
	for _, dialect := range testdb.MustDialects() {
		It("adds run_infos.became_healthy and failed_validation, sets what the rows tell, and runs again cleanly on "+dialect, func() {
			ctx := context.Background()
			var conn *sql.DB
			conn, _ = freshDB(dialect)
			runner := newRunner(conn, dialect)
			_, err := runner.Up(ctx, migrations.UpOptions{Target: 13})
			Expect(err).NotTo(HaveOccurred())
			// web runs v2 (healthy); v1 ran before it (not known any more);
			// v3's validation failed; v4's validated update is under way
			// after a VALIDATE that ended in ERROR for another reason.
			execSQL(conn, dialect, `INSERT INTO desired_lrps (process_guid, domain, instances, placement_tags, routes,
 annotation, active_definition_id, healthy_definition_id, modification_tag_epoch, created_at, updated_at)
 VALUES ('web', 'apps', 2, '[]', '', '', 'v2', 'v2', 'e', 5, 5)`)
			for i, id := range []string{"v1", "v2", "v3", "v4"} {
				execSQL(conn, dialect, `INSERT INTO run_infos (process_guid, definition_id, content_hash, memory_mb, disk_mb, definition, created_at)
 VALUES ('web', ?, 'h', 0, 0, ?, ?)`, id, []byte{1}, i)
			}
			for i, op := range [][2]string{
				{"v3", "validation of v3 failed: its instance crashed 3 times, last: exited with code 3"},
				{"v4", "its LRP is gone"},
			} {
				execSQL(conn, dialect, `INSERT INTO operations (id, process_guid, sequence, kind, status, reason,
 parameters, definition_id, requested_by, created_at, history, ended, modification_index)
 VALUES (?, 'web', ?, 'VALIDATE', 'ERROR', ?, ?, ?, '', 7, ?, ?, 1)`,
					[]string{"000000000000000100000001", "000000000000000200000002"}[i], i+1, op[1], []byte{1}, op[0], []byte{3}, true)
			}

			applied, err := runner.Up(ctx, migrations.UpOptions{Target: 14})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0014_definition_history"}))
			history := "SELECT definition_id FROM run_infos WHERE %s ORDER BY definition_id"
			Expect(strings1(conn, fmt.Sprintf(history, "became_healthy"))).To(Equal([]string{"v2"}))
			Expect(strings1(conn, fmt.Sprintf(history, "failed_validation"))).To(Equal([]string{"v3"}))

			execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 14)
			applied, err = runner.Up(ctx, migrations.UpOptions{RetryDirty: true, Target: 14})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0014_definition_history"}))
			Expect(strings1(conn, fmt.Sprintf(history, "became_healthy"))).To(Equal([]string{"v2"}))
			Expect(strings1(conn, fmt.Sprintf(history, "failed_validation"))).To(Equal([]string{"v3"}))
		})
	}
})
