package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/internal/simcell"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// Chaos: one board on SQLite, SIGKILLed at random moments of rolling
// updates and started again on the same config (same port, same board
// id, so it takes its lease back at once), again and again, while the
// rollout watch (rollout_failover_e2e_test.go) looks at the rows and the
// cells every 50 ms for an index lost or doubled. Each kill comes a random
// 50–600 ms after a new update, so kills land mid-pass, mid-apply and
// between passes; the random seed is Ginkgo's (--ginkgo.seed replays a
// run). `make chaos` runs this and the database-outage specs.
var _ = Describe("The board SIGKILLed at random moments of rollouts", Label("chaos"), func() {
	ctx := context.Background()
	const (
		kills = 20
		guid  = "chaos"
		count = 9
	)

	It(fmt.Sprintf("loses and doubles no index through %d kills and finishes the last rollout, on sqlite", kills), func() {
		database := newDatabase(testdb.SQLite)
		configPath := convergingConfigFile(database, map[string]any{
			"listen_address": fmt.Sprintf("127.0.0.1:%d", freePort()),
			"data_dir":       GinkgoT().TempDir(),
			// Room for a restart between two renewals of a cell.
			"cell_presence_ttl": "3s",
		})
		board := startBoard("-config", configPath)
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
		random := rand.New(rand.NewPCG(uint64(GinkgoRandomSeed()), kills))
		var recoveries []time.Duration
		var last string
		for kill := 1; kill <= kills; kill++ {
			definition := lrpSpec(guid, "apps", count).GetDefinition()
			definition.DefinitionId = ""
			definition.Action.Args = []string{"--version", fmt.Sprint(kill + 1)}
			updated, err := api.UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{
				Definition:       definition,
				UpdateIdentifier: fmt.Sprintf("v%d", kill+1),
				UpdateStrategy:   &models.UpdateStrategy{MaxSurge: "2", MaxUnavailable: "0", MinReadyMs: 200},
			})
			Expect(err).NotTo(HaveOccurred(), "update before kill %d", kill)
			last = updated.GetActiveDefinitionId()

			time.Sleep(time.Duration(50+random.IntN(550)) * time.Millisecond)
			board.session.Kill()
			Eventually(board.session).WithTimeout(startupLimit).Should(gexec.Exit())
			killed := time.Now()
			board = startBoard("-config", configPath)
			Eventually(board.fullPasses).WithTimeout(convergeLimit).Should(BeNumerically(">=", 1))
			recoveries = append(recoveries, time.Since(killed))
		}

		By("finishing the last rollout")
		Eventually(func() (*models.RolloutStatus, error) { return api.RolloutStatus(ctx, guid) }).WithTimeout(2 * convergeLimit).Should(And(
			HaveField("State", models.RolloutStatus_COMPLETE),
			HaveField("ActiveDefinitionId", last),
			HaveField("UpdatedInstances", BeEquivalentTo(count)),
		))
		Eventually(func() []string { return cellInstances(cells) }).WithTimeout(convergeLimit).Should(Equal(expectedOn(last, count)),
			"the cells run exactly one instance per index, on the last definition")
		Eventually(views(board, guid)).WithTimeout(convergeLimit).Should(HaveLen(count), "the RETIRING rows are gone")

		report := watch.stop()
		slices.Sort(recoveries)
		AddReportEntry("figures", fmt.Sprintf("%d kills (seed %d); %s; kill → first pass of the restarted board: median %s, max %s",
			kills, GinkgoRandomSeed(), report, recoveries[len(recoveries)/2].Round(time.Millisecond), recoveries[len(recoveries)-1].Round(time.Millisecond)))
		Expect(report.observations).To(BeNumerically(">", 100), "the watcher looked often enough to mean something")
		Expect(report.violations).To(BeEmpty())
	})
})
