package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/internal/simcell"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// chaosKills is how many times the board-kill scenarios kill a board:
// CORKBOARD_CHAOS_KILLS when set, else 20 under make chaos and 6 in make
// test, which keeps each scenario within about half a minute there.
func chaosKills() int {
	if n, err := strconv.Atoi(os.Getenv("CORKBOARD_CHAOS_KILLS")); err == nil && n > 0 {
		return n
	}
	if fullChaos() {
		return 20
	}
	return 6
}

// chaosMinReadyMs is the rollouts' min_ready: each index takes at least
// that long, so that a kill 50–600 ms after an update lands mid-rollout.
const chaosMinReadyMs = 200

// killDelay is a random 50–600 ms: how long after an update the board
// dies, so that kills land mid-pass, mid-apply and between passes.
func killDelay(random *rand.Rand) time.Duration {
	return time.Duration(50+random.IntN(550)) * time.Millisecond
}

// Chaos: one board on SQLite, SIGKILLed at a random moment of each of
// several successive rolling updates and started again on the same
// config (same port, same board id, so it takes its lease back at once),
// while the rollout watch (rollout_failover_e2e_test.go) looks at the
// rows and the cells every 50 ms for an index lost or doubled. The random
// seed is Ginkgo's (-ginkgo.seed replays a run). `make chaos` runs this
// with 20 kills.
var _ = Describe("The board SIGKILLed at random moments of rollouts", Label("chaos"), func() {
	ctx := context.Background()
	const (
		guid  = "chaos"
		count = 9
	)
	kills := chaosKills()

	It(fmt.Sprintf("loses and doubles no index through %d kills and finishes the last rollout, on sqlite", kills), func() {
		database := newDatabase(testdb.SQLite)
		configPath := convergingConfigFile(database, map[string]any{
			"listen_address": fmt.Sprintf("127.0.0.1:%d", freePort()),
			// Room for several restarts between two renewals of a cell:
			// a rep cannot renew while its board is down, and on a
			// loaded machine a kill and restart take up to 2 s. With
			// 3 s, cells were judged lost for the board's own downtime
			// (their instances SUSPECT, RETIRING ones deleted): a
			// scenario about presence timing, not about kills.
			"cell_presence_ttl": "10s",
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
		random := rand.New(rand.NewPCG(uint64(GinkgoRandomSeed()), uint64(kills)))
		var recoveries []time.Duration
		var last string
		for kill := 1; kill <= kills; kill++ {
			last = rollTo(api, guid, count, kill+1, chaosMinReadyMs)
			time.Sleep(killDelay(random))
			board.session.Kill()
			Eventually(board.session).WithTimeout(startupLimit).Should(gexec.Exit())
			killed := time.Now()
			board = startBoard("-config", configPath)
			Eventually(board.fullPasses).WithTimeout(convergeLimit).Should(BeNumerically(">=", 1))
			recoveries = append(recoveries, time.Since(killed))
		}

		By("finishing the last rollout")
		dumpOnFailure(board, guid, cells)
		expectFinished(board, guid, last, count, cells)

		report := watch.stop()
		slices.Sort(recoveries)
		AddReportEntry("figures", fmt.Sprintf("%d kills (seed %d); %s; kill → first pass of the restarted board: median %s, max %s",
			kills, GinkgoRandomSeed(), report, recoveries[len(recoveries)/2].Round(time.Millisecond), recoveries[len(recoveries)-1].Round(time.Millisecond)))
		Expect(report.observations).To(BeNumerically(">", 5*kills), "the watcher looked often enough to mean something")
		Expect(report.violations).To(BeEmpty())
	})
})

// Chaos with two boards on one Postgres or MySQL database: the lease
// owner is SIGKILLed at a random moment of each rollout, the other board
// takes the lease over, and the killed one is started again to be the
// next victim. Cells talk to both boards (some to each), so that some of
// them lose their board at every kill; both boards watch the rows.
var _ = Describe("Two boards, the lease owner SIGKILLed at random moments of rollouts", Label("chaos"), func() {
	ctx := context.Background()
	const (
		guid       = "chaos"
		count      = 9
		heldSeries = "corkboard_convergence_lease_held"
	)
	failovers := chaosKills()

	for _, dialect := range testdb.MustDialects() {
		if dialect == testdb.SQLite {
			continue
		}
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
			owner := func() int {
				for i, b := range boards {
					if b.metric(heldSeries) == 1 {
						return i
					}
				}
				return -1
			}
			Eventually(owner).WithTimeout(convergeLimit).ShouldNot(Equal(-1))

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
				Eventually(func() int { victim = owner(); return victim }).WithTimeout(convergeLimit).ShouldNot(Equal(-1))
				survivor := 1 - victim
				last = rollTo(boards[survivor].client(), guid, count, kill+1, chaosMinReadyMs)

				time.Sleep(killDelay(random))
				boards[victim].session.Kill()
				Eventually(boards[victim].session).WithTimeout(startupLimit).Should(gexec.Exit())
				killed := time.Now()
				Eventually(func() float64 { return boards[survivor].metric(heldSeries) }).WithTimeout(convergeLimit).Should(Equal(1.0))
				takeovers = append(takeovers, time.Since(killed))
				boards[victim] = startBoard("-config", configs[victim])
			}

			By("finishing the last rollout")
			dumpOnFailure(boards[0], guid, cells)
			expectFinished(boards[0], guid, last, count, cells)

			slices.Sort(takeovers)
			for i, w := range watches {
				report := w.stop()
				AddReportEntry(fmt.Sprintf("watch through board %d", i), report.String())
				Expect(report.observations).To(BeNumerically(">", 5*failovers), "the watcher looked often enough to mean something")
				Expect(report.violations).To(BeEmpty())
			}
			AddReportEntry("figures", fmt.Sprintf("%d failovers on %s (seed %d, lease TTL %s); kill → the other board owns the lease: median %s, max %s",
				failovers, dialect, GinkgoRandomSeed(), e2eLeaseTTL,
				takeovers[len(takeovers)/2].Round(time.Millisecond), takeovers[len(takeovers)-1].Round(time.Millisecond)))
		})
	}
})

// expectFinished waits for guid's last rollout (to definition last) to be
// COMPLETE, the cells to run exactly one instance of each index on it,
// and the RETIRING rows to be gone.
func expectFinished(board *runningBoard, guid, last string, count int, cells []*simcell.Cell) {
	GinkgoHelper()
	api := board.client()
	Eventually(func() (*models.RolloutStatus, error) { return api.RolloutStatus(context.Background(), guid) }).WithTimeout(2 * convergeLimit).Should(And(
		HaveField("State", models.RolloutStatus_COMPLETE),
		HaveField("ActiveDefinitionId", last),
		HaveField("UpdatedInstances", BeEquivalentTo(count)),
	))
	Eventually(func() []string { return cellInstances(cells) }).WithTimeout(convergeLimit).Should(Equal(expectedOn(last, count)),
		"the cells run exactly one instance per index, on the last definition")
	Eventually(views(board, guid)).WithTimeout(convergeLimit).Should(HaveLen(count), "the RETIRING rows are gone")
}

// dumpOnFailure adds to the spec's report, should it fail, the rows of
// guid as board has them and what each cell believes it runs, instance
// guids included: what it takes to tell a row the cells forgot from an
// instance the board forgot. Cleanups run last-registered first, so this
// one runs before those of the boards and cells started earlier.
func dumpOnFailure(board *runningBoard, guid string, cells []*simcell.Cell) {
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			dumpRowsAndCells(board, guid, cells)
		}
	})
}

func dumpRowsAndCells(board *runningBoard, guid string, cells []*simcell.Cell) {
	var out strings.Builder
	rows, err := board.client().ActualLRPs(context.Background(), client.ActualLRPFilter{ProcessGuid: guid})
	if err != nil {
		fmt.Fprintf(&out, "rows: %v\n", err)
	}
	for _, lrp := range rows {
		fmt.Fprintf(&out, "row %d %s %s on %q instance %s def %s routable=%t stop=%t since=%s\n",
			lrp.GetIndex(), lrp.GetPresence(), lrp.GetState(), lrp.GetCellId(), lrp.GetInstanceGuid(), lrp.GetDefinitionId(),
			lrp.GetRoutable(), lrp.GetStopRequested(), time.Unix(0, lrp.GetSince()).Format(time.StampMilli))
	}
	for _, c := range cells {
		for _, list := range []struct {
			name      string
			instances []simcell.Instance
		}{{"running", c.Running()}, {"retiring", c.Retiring()}, {"evacuating", c.Evacuating()}} {
			for _, i := range list.instances {
				fmt.Fprintf(&out, "cell %s %s %d %s instance %s def %s\n", c.ID(), list.name, i.Index, i.State, i.InstanceGuid, i.DefinitionID)
			}
		}
	}
	AddReportEntry("rows and cells at the failure", out.String())
}
