package sqldb_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("Crashes", func(b *board) {
	key := models.ActualLRPKey{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY}
	owner := models.Caller{InstanceGuid: "ig-0", CellID: "cell-1"}

	running := func() {
		GinkgoHelper()
		b.putActual(&models.ActualLRP{
			ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY, Domain: "apps",
			InstanceGuid: "ig-0", CellId: "cell-1", DefinitionId: "v1", State: models.ActualLRP_RUNNING,
			Since: b.clock.Now().UnixNano(), ModificationTag: &models.ModificationTag{Epoch: "e", Index: 1},
		})
	}
	crashes := func(window time.Duration) []convergence.CrashRow {
		GinkgoHelper()
		c, err := b.store.Crashes(b.ctx, window)
		Expect(err).NotTo(HaveOccurred())
		return c
	}

	It("records the cell and definition of a crash in the crash's transaction, though the row forgets its cell", func() {
		running()
		crashedAt := b.clock.Now().UnixNano()
		crashed, err := b.store.CrashActualLRP(b.ctx, key, owner, "exit 1")
		Expect(err).NotTo(HaveOccurred())
		Expect(crashed.State).To(Equal(models.ActualLRP_CRASHED))
		Expect(crashed.CellId).To(BeEmpty())

		Expect(crashes(10 * time.Minute)).To(Equal([]convergence.CrashRow{
			{ProcessGuid: "web", DefinitionID: "v1", CellID: "cell-1", At: crashedAt},
		}))
	})

	It("records nothing for a crash it refuses", func() {
		running()
		_, err := b.store.CrashActualLRP(b.ctx, key, models.Caller{InstanceGuid: "ig-0", CellID: "cell-2"}, "exit 1")
		Expect(models.ConvertError(err).GetType()).To(Equal(models.Error_InvalidStateTransition))
		Expect(b.count("SELECT COUNT(*) FROM crashes")).To(BeZero())
	})

	It("lists the crashes of the window by the board's clock, and none for a window of 0", func() {
		running()
		_, err := b.store.CrashActualLRP(b.ctx, key, owner, "exit 1")
		Expect(err).NotTo(HaveOccurred())
		Expect(crashes(0)).To(BeEmpty())

		b.clock.Advance(10*time.Minute - time.Nanosecond)
		Expect(crashes(10*time.Minute)).To(HaveLen(1), "a nanosecond short of the window")
		b.clock.Advance(time.Nanosecond)
		Expect(crashes(10*time.Minute)).To(BeEmpty(), "exactly a window ago is forgotten, as the planner forgets it")
	})

	It("prunes the crashes older than the longest window", func() {
		now := b.clock.Now()
		for i, ago := range []time.Duration{convergence.MaxCrashWindow + time.Second, convergence.MaxCrashWindow - time.Second, time.Minute} {
			b.exec("INSERT INTO crashes (process_guid, definition_id, cell_id, crashed_at) VALUES ('web', 'v1', ?, ?)",
				[]string{"old", "kept", "recent"}[i], now.Add(-ago).UnixNano())
		}
		// A store without the commit-fault seam: a prune whose connection
		// is lost after its DELETE applied runs again and counts only what
		// it deleted itself (none), which is all a retried count can say.
		plain := sqldb.New(b.conn, b.dialect, sqldb.WithClock(b.clock.Now))
		n, err := plain.PruneCrashes(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(BeEquivalentTo(1))
		Expect(crashes(convergence.MaxCrashWindow)).To(ConsistOf(
			HaveField("CellID", "kept"), HaveField("CellID", "recent")))
	})
})
