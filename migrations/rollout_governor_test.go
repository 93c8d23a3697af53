package migrations_test

import (
	"context"
	"database/sql"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0022_rollout_governor", func() {
	for _, dialect := range testdb.MustDialects() {
		It("adds rollouts.admitted_at, queue_position and queue_reason, admits the records already there when they started, and runs again cleanly, on "+dialect, func() {
			ctx := context.Background()
			conn, _ := freshDB(dialect)
			runner := newRunner(conn, dialect)
			_, err := runner.Up(ctx, migrations.UpOptions{Target: 21})
			Expect(err).NotTo(HaveOccurred())
			// Records written before the governor existed: a rollout half-way
			// through, and one that completed.
			execSQL(conn, dialect, `INSERT INTO rollouts (process_guid, state, reason, definition_id, started_at,
 progress_at, settled, modification_index, operation_id) VALUES ('web', 'PROGRESSING', 'rolling', 'v2', 5, 7, ?, 1, '')`, false)
			execSQL(conn, dialect, `INSERT INTO rollouts (process_guid, state, reason, definition_id, started_at,
 progress_at, settled, modification_index, operation_id) VALUES ('api', 'COMPLETE', 'done', 'v3', 9, 9, ?, 2, '')`, true)

			preview, err := runner.Preview(ctx, migrations.UpOptions{Target: 22})
			Expect(err).NotTo(HaveOccurred())
			Expect(preview.SQL()).To(ContainSubstring("add column rollouts.admitted_at: ALTER TABLE rollouts ADD COLUMN admitted_at BIGINT NOT NULL DEFAULT 0"))
			Expect(preview.SQL()).To(ContainSubstring("add column rollouts.queue_position: ALTER TABLE rollouts ADD COLUMN queue_position INTEGER NOT NULL DEFAULT 0"))
			Expect(preview.SQL()).To(ContainSubstring("add column rollouts.queue_reason: ALTER TABLE rollouts ADD COLUMN queue_reason"))

			applied, err := runner.Up(ctx, migrations.UpOptions{Target: 22})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0022_rollout_governor"}))
			Expect(governorColumns(conn)).To(Equal([]string{"9", "0", "", "5", "0", ""}), "api then web: admitted when they started, none queued")

			By("running again, as after a crash (or MySQL's implicit commit) between the DDL and the version's record")
			execSQL(conn, dialect, "UPDATE rollouts SET admitted_at = 0, queue_position = 2, queue_reason = 'queued' WHERE process_guid = 'api'")
			execSQL(conn, dialect, "UPDATE rollouts SET admitted_at = 6 WHERE process_guid = 'web'")
			execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 22)
			applied, err = runner.Up(ctx, migrations.UpOptions{Target: 22, RetryDirty: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0022_rollout_governor"}))
			Expect(governorColumns(conn)).To(Equal([]string{"9", "2", "queued", "6", "0", ""}), "what was set is kept; only an unset admission is filled in")
		})
	}
})

// governorColumns is admitted_at, queue_position and queue_reason of each
// record, api's then web's.
func governorColumns(conn *sql.DB) []string {
	var out []string
	for _, guid := range []string{"api", "web"} {
		for _, column := range []string{"admitted_at", "queue_position", "queue_reason"} {
			out = append(out, strings1(conn, "SELECT "+column+" FROM rollouts WHERE process_guid = '"+guid+"'")...)
		}
	}
	return out
}
