package migrations_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
)

var _ = Describe("0020_rollout_judgements", func() {
	for _, dialect := range testdb.MustDialects() {
		It("adds rollouts.judgement, NULL for the records already there, and runs again cleanly, on "+dialect, func() {
			ctx := context.Background()
			conn, _ := freshDB(dialect)
			runner := newRunner(conn, dialect)
			_, err := runner.Up(ctx, migrations.UpOptions{Target: 19})
			Expect(err).NotTo(HaveOccurred())
			// A record written before judgements existed.
			execSQL(conn, dialect, `INSERT INTO rollouts (process_guid, state, reason, definition_id, started_at,
 progress_at, settled, modification_index, operation_id) VALUES ('web', 'PROGRESSING', 'rolling', 'v2', 5, 5, ?, 1, '')`, false)

			preview, err := runner.Preview(ctx, migrations.UpOptions{Target: 20})
			Expect(err).NotTo(HaveOccurred())
			Expect(preview.SQL()).To(ContainSubstring("add column rollouts.judgement: ALTER TABLE rollouts ADD COLUMN judgement"))

			applied, err := runner.Up(ctx, migrations.UpOptions{Target: 20})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0020_rollout_judgements"}))
			Expect(strings1(conn, "SELECT COUNT(*) FROM rollouts WHERE judgement IS NULL")).To(Equal([]string{"1"}))
			execSQL(conn, dialect, "UPDATE rollouts SET judgement = ? WHERE process_guid = 'web'", []byte{0x0a, 0x00})

			By("running again, as after a crash (or MySQL's implicit commit) between the DDL and the version's record")
			execSQL(conn, dialect, "UPDATE schema_migrations SET dirty = ? WHERE version = ?", true, 20)
			applied, err = runner.Up(ctx, migrations.UpOptions{Target: 20, RetryDirty: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(ids(applied)).To(Equal([]string{"0020_rollout_judgements"}))
			Expect(strings1(conn, "SELECT COUNT(*) FROM rollouts WHERE judgement IS NOT NULL")).To(Equal([]string{"1"}), "what was stored is kept")
		})
	}
})
