package main

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/simcell"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// A rolling update survives its database going away: a private server is
// stopped mid-rollout for longer than the cells' presence TTL and started
// again, and the board finishes the rollout by itself, losing and
// doubling no index (the rollout watch of rollout_failover_e2e_test.go
// looks every 50 ms; looks the board could not answer do not count).
var _ = Describe("A database restarted mid-rollout", Label("chaos"), func() {
	ctx := context.Background()
	const (
		guid        = "rolling"
		count       = 12
		presenceTTL = 2 * time.Second
		// min_ready makes each index take at least half a second, so that
		// the rollout is under way when the database stops.
		minReadyMs = 500
	)

	for _, s := range stallableServers {
		if !fullChaos() && s.dialect != testdb.MySQL {
			continue // make test restarts MariaDB only
		}
		It("is finished by the board once the database is back, no index lost or doubled, on "+s.dialect, func() {
			server, database := startPrivateDatabase(s)

			board := startConvergingBoard(database, map[string]any{
				"database_timeout":  "1s",
				"cell_presence_ttl": presenceTTL.String(),
			})
			api := board.client()
			Expect(api.UpsertDomain(ctx, "apps", 0)).To(Succeed())
			cells := []*simcell.Cell{
				startCell(board, "cell-a", "z1"),
				startCell(board, "cell-b", "z2"),
				startCell(board, "cell-c", "z3"),
			}
			_, err := api.DesireLRP(ctx, lrpSpec(guid, "apps", count))
			Expect(err).NotTo(HaveOccurred())
			Eventually(runningOn(board, guid, "v1")).WithTimeout(convergeLimit).Should(Equal(count))

			watch := watchRollout(board, guid, count, cells)
			v2ID := rollTo(api, guid, count, 2, minReadyMs)
			Eventually(func() (*models.RolloutStatus, error) { return api.RolloutStatus(ctx, guid) }).WithTimeout(convergeLimit).Should(And(
				HaveField("State", models.RolloutStatus_PROGRESSING),
				HaveField("UpdatedInstances", BeNumerically(">=", 3)),
			))

			By("stopping the database for longer than the presence TTL")
			Expect(server.Stop()).To(Succeed())
			stopped := time.Now()
			_, err = api.RolloutStatus(ctx, guid)
			expectUnavailable(err)
			time.Sleep(databaseDowntime(presenceTTL) - time.Since(stopped))
			Expect(server.Start()).To(Succeed())
			back := time.Now()

			By("finishing the rollout by itself")
			Eventually(func() (*models.RolloutStatus, error) { return api.RolloutStatus(ctx, guid) }).WithTimeout(2 * convergeLimit).Should(And(
				HaveField("State", models.RolloutStatus_COMPLETE),
				HaveField("ActiveDefinitionId", v2ID),
				HaveField("UpdatedInstances", BeEquivalentTo(count)),
			))
			AddReportEntry("database down "+databaseDowntime(presenceTTL).String()+", back to COMPLETE ("+s.dialect+")", time.Since(back).Round(time.Millisecond).String())
			Eventually(func() []string { return cellInstances(cells) }).WithTimeout(convergeLimit).Should(Equal(expectedOn(v2ID, count)),
				"the cells run exactly one instance per index, on the new definition")
			// COMPLETE comes as the last replacement runs; its RETIRING
			// predecessor goes when its cell has stopped it.
			Eventually(views(board, guid)).WithTimeout(convergeLimit).Should(HaveLen(count), "the RETIRING rows are gone")
			for _, lrp := range instances(board, guid) {
				Expect(lrp.GetPresence()).To(Equal(models.ActualLRP_ORDINARY), "index %d", lrp.GetIndex())
			}
			report := watch.stop()
			AddReportEntry("observations", report.String())
			Expect(report.observations).To(BeNumerically(">", 20), "the watcher looked often enough to mean something")
			Expect(report.violations).To(BeEmpty())
			Expect(board.metric("corkboard_database_outages_total")).To(BeNumerically(">=", 1), "the board saw the outage")
		})
	}
})

// databaseDowntime is how long the restart spec keeps the database
// stopped: 20 s under make chaos, two presence TTLs in make test.
func databaseDowntime(presenceTTL time.Duration) time.Duration {
	if fullChaos() {
		return 20 * time.Second
	}
	return 2 * presenceTTL
}
