package migrations_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0029_event_bundles", func() {
	for _, dialect := range testdb.MustDialects() {
		It("adds the outbox's and the log's event counts, 1 on the rows already there, and runs again cleanly, on "+dialect, func() {
			ctx := context.Background()
			conn, _ := freshDB(dialect)
			runner := newRunner(conn, dialect)
			_, err := runner.Up(ctx, migrations.UpOptions{Target: 28})
			Expect(err).NotTo(HaveOccurred())
			execSQL(conn, dialect, "INSERT INTO event_outbox (event_type, event_key, payload) VALUES ('desired_lrp_created', 'web', ?)", []byte("p"))
			execSQL(conn, dialect, "INSERT INTO event_log (position, event_type, event_key, payload, created_at) VALUES (1, 'desired_lrp_created', 'web', ?, 0)", []byte("p"))

			preview, err := runner.Preview(ctx, migrations.UpOptions{Target: 29})
			Expect(err).NotTo(HaveOccurred())
			Expect(preview.SQL()).To(ContainSubstring("add column event_outbox.event_count: ALTER TABLE event_outbox ADD COLUMN event_count SMALLINT NOT NULL DEFAULT 1"))
			Expect(preview.SQL()).To(ContainSubstring("add column event_log.event_count: ALTER TABLE event_log ADD COLUMN event_count SMALLINT NOT NULL DEFAULT 1"))

			applied, err := runner.Up(ctx, migrations.UpOptions{Target: 29})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0029_event_bundles"}))
			Expect(strings1(conn, "SELECT event_count FROM event_outbox")).To(Equal([]string{"1"}))
			Expect(strings1(conn, "SELECT event_count FROM event_log")).To(Equal([]string{"1"}))

			By("refusing, where boards share the database, the log row an older board's sequencer would write: one naming no event_count")
			oldSequencer := "INSERT INTO event_log (position, event_type, event_key, payload, created_at) SELECT 2 + id, event_type, event_key, payload, 0 FROM event_outbox"
			_, err = conn.Exec(oldSequencer)
			if dialect == "sqlite" {
				Expect(err).NotTo(HaveOccurred(), "one board's own file: the column keeps its default")
			} else {
				Expect(err).To(MatchError(ContainSubstring("event_count")))
			}
			execSQL(conn, dialect, "INSERT INTO event_outbox (event_type, event_key, payload) VALUES ('actual_lrp_changed', 'web', ?)", []byte("p"))
			Expect(strings1(conn, "SELECT MIN(event_count) FROM event_outbox")).To(Equal([]string{"1"}), "an older board's outbox rows are single events")

			By("running again, as after a crash (or MySQL's implicit commit) between the DDL and the version's record")
			execSQL(conn, dialect, "UPDATE event_log SET event_count = 3")
			execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 29)
			applied, err = runner.Up(ctx, migrations.UpOptions{Target: 29, RetryDirty: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0029_event_bundles"}))
			Expect(strings1(conn, "SELECT event_count FROM event_log WHERE position = 1")).To(Equal([]string{"3"}))
		})
	}
})
