package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/internal/simcell"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// chaosFailovers is how many lease holders the two-board scenario kills:
// CORKBOARD_CHAOS_FAILOVERS (make chaos sets 20), else 6, which keeps the
// scenario within half a minute per dialect in make test.
func chaosFailovers() int {
	if n, err := strconv.Atoi(os.Getenv("CORKBOARD_CHAOS_FAILOVERS")); err == nil && n > 0 {
		return n
	}
	return 6
}

// Chaos with two boards on one Postgres or MySQL database: the lease
// holder is SIGKILLed at a random moment of each rollout, the other board
// takes the lease over, and the killed one is started again to be the
// next victim. Cells talk to both boards (some to each), so that half of
// them lose their board at every kill; both boards watch the rows.
var _ = Describe("Two boards, the lease holder SIGKILLed at random moments of rollouts", Label("chaos"), func() {
	ctx := context.Background()
	const (
		guid       = "chaos"
		count      = 9
		heldSeries = "corkboard_convergence_lease_held"
	)

	for _, dialect := range testdb.MustDialects() {
		if dialect == testdb.SQLite {
			continue
		}
		failovers := chaosFailovers()
		It(fmt.Sprintf("loses and doubles no index through %d failovers and finishes the last rollout, on %s", failovers, dialect), func() {
			database := newDatabase(dialect)
			var configs [2]string
			var boards [2]*runningBoard
			for i, id := range []string{"board-a", "board-b"} {
				configs[i] = convergingConfigFile(database, map[string]any{
					"board_id":       id,
					"listen_address": fmt.Sprintf("127.0.0.1:%d", freePort()),
					// Longer than a takeover and a restart: a cell whose
					// board was killed is still present when it is back.
					"cell_presence_ttl": "10s",
				})
				boards[i] = startBoard("-config", configs[i])
			}
			holder := func() int {
				for i, b := range boards {
					if b.metric(heldSeries) == 1 {
						return i
					}
				}
				return -1
			}
			Eventually(holder).WithTimeout(convergeLimit).ShouldNot(Equal(-1))

			api := boards[0].client()
			Expect(api.UpsertDomain(ctx, "apps", 0)).To(Succeed())
			cells := []*simcell.Cell{
				startCell(boards[0], "cell-a", "z1"),
				startCell(boards[1], "cell-b", "z2"),
				startCell(boards[0], "cell-c", "z3"),
			}
			_, err := api.DesireLRP(ctx, lrpSpec(guid, "apps", count))
			Expect(err).NotTo(HaveOccurred())
			Eventually(runningOn(boards[0], guid, "v1")).WithTimeout(convergeLimit).Should(Equal(count))

			watches := []*rolloutWatch{watchRollout(boards[0], guid, count, cells), watchRollout(boards[1], guid, count, cells)}
			random := rand.New(rand.NewPCG(uint64(GinkgoRandomSeed()), uint64(failovers)))
			var takeovers []time.Duration
			var last string
			for kill := 1; kill <= failovers; kill++ {
				var victim int
				Eventually(func() int { victim = holder(); return victim }).WithTimeout(convergeLimit).ShouldNot(Equal(-1))
				survivor := 1 - victim
				last = rollTo(boards[survivor].client(), guid, count, kill+1, 200)

				time.Sleep(time.Duration(50+random.IntN(550)) * time.Millisecond)
				boards[victim].session.Kill()
				Eventually(boards[victim].session).WithTimeout(startupLimit).Should(gexec.Exit())
				killed := time.Now()
				Eventually(func() float64 { return boards[survivor].metric(heldSeries) }).WithTimeout(convergeLimit).Should(Equal(1.0))
				takeovers = append(takeovers, time.Since(killed))
				boards[victim] = startBoard("-config", configs[victim])
			}

			By("finishing the last rollout")
			Eventually(func() (*models.RolloutStatus, error) { return api.RolloutStatus(ctx, guid) }).WithTimeout(2 * convergeLimit).Should(And(
				HaveField("State", models.RolloutStatus_COMPLETE),
				HaveField("ActiveDefinitionId", last),
				HaveField("UpdatedInstances", BeEquivalentTo(count)),
			))
			Eventually(func() []string { return cellInstances(cells) }).WithTimeout(convergeLimit).Should(Equal(expectedOn(last, count)),
				"the cells run exactly one instance per index, on the last definition")
			Eventually(views(boards[0], guid)).WithTimeout(convergeLimit).Should(HaveLen(count), "the RETIRING rows are gone")

			slices.Sort(takeovers)
			for i, w := range watches {
				report := w.stop()
				AddReportEntry(fmt.Sprintf("watch through board %d", i), report.String())
				Expect(report.observations).To(BeNumerically(">", 50), "the watcher looked often enough to mean something")
				Expect(report.violations).To(BeEmpty())
			}
			AddReportEntry("figures", fmt.Sprintf("%d failovers on %s (seed %d, lease TTL %s); kill → the other board holds the lease: median %s, max %s",
				failovers, dialect, GinkgoRandomSeed(), e2eLeaseTTL,
				takeovers[len(takeovers)/2].Round(time.Millisecond), takeovers[len(takeovers)-1].Round(time.Millisecond)))
		})
	}
})
