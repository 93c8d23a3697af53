package main

import (
	"context"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/internal/simcell"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// The board converges end to end: the built bbs on each dialect, with
// simulated cells that speak the real cell API (internal/simcell). Every
// spec runs its own board on its own database; the cells' presence TTL
// is 1 s, passes run every 100 ms and an unclaimed placement goes stale
// after 2 s, so each case takes seconds.
var _ = Describe("Convergence, end to end", func() {
	ctx := context.Background()

	for _, dialect := range testdb.MustDialects() {
		Describe("on "+dialect, func() {
			var (
				board  *runningBoard
				api    *client.Client
				events *eventLog
			)

			BeforeEach(func() {
				board = startConvergingBoard(newDatabase(dialect), nil)
				api = board.client()
				events = recordEvents(board)
				Expect(api.UpsertDomain(ctx, "apps", 0)).To(Succeed())
			})

			It("places instances across zones, restarts crashes, deletes extras highest index first, and deletes every instance of a removed LRP", func() {
				cellA := startCell(board, "cell-a", "z1")
				cellB := startCell(board, "cell-b", "z2")
				cells := []*simcell.Cell{cellA, cellB}
				Eventually(events.count(models.EventCellChanged, aboutCell("cell-a"))).Should(Equal(1))
				Eventually(events.count(models.EventCellChanged, aboutCell("cell-b"))).Should(Equal(1))

				By("desiring 6 instances: 3 run in each zone")
				_, err := api.DesireLRP(ctx, lrpSpec("web", "apps", 6))
				Expect(err).NotTo(HaveOccurred())
				Eventually(placement(board, "web")).WithTimeout(convergeLimit).
					Should(Equal(map[string]int{"cell-a RUNNING": 3, "cell-b RUNNING": 3}))
				Eventually(events.count(models.EventDesiredLRPCreated, aboutLRP("web"))).Should(Equal(1))
				Eventually(events.count(models.EventActualLRPCreated, aboutLRP("web"))).Should(Equal(6))
				Eventually(events.count(models.EventActualLRPChanged, changedTo("web", models.ActualLRP_ORDINARY, models.ActualLRP_RUNNING))).Should(Equal(6))

				By("crashing index 0 three times: each crash restarts at once")
				for crash := int32(1); crash <= 3; crash++ {
					crashed := crashInstance(cells, "web", 0)
					Expect(crashed.GetCrashCount()).To(Equal(crash))
					Eventually(func() *models.ActualLRP { return instances(board, "web")[0] }).WithTimeout(convergeLimit).
						Should(SatisfyAll(
							WithTransform((*models.ActualLRP).GetState, Equal(models.ActualLRP_RUNNING)),
							WithTransform((*models.ActualLRP).GetCrashCount, Equal(crash))))
				}
				Eventually(events.count(models.EventActualLRPCrashed, aboutLRP("web"))).Should(Equal(3))

				By("crashing it a fourth time: it waits out its backoff (30 s) over several passes")
				crashInstance(cells, "web", 0)
				board.waitForPasses(5)
				Expect(instances(board, "web")[0].GetState()).To(Equal(models.ActualLRP_CRASHED))
				Expect(instances(board, "web")[0].GetCrashCount()).To(Equal(int32(4)))

				By("scaling down to 2: indices 5, 4, 3, 2 go, in that order, and their cells stop them")
				_, err = api.UpdateDesiredLRP(ctx, "web", &models.DesiredLRPUpdate{Instances: int32p(2)})
				Expect(err).NotTo(HaveOccurred())
				removed := events.count(models.EventActualLRPRemoved, aboutLRP("web"))
				Eventually(removed).WithTimeout(convergeLimit).Should(Equal(4))
				Eventually(func() []int32 { return indices(events.matching(models.EventActualLRPRemoved, aboutLRP("web"))) }).
					Should(Equal([]int32{5, 4, 3, 2}))
				Eventually(runningIndices(cells, "web")).Should(Equal([]int32{1}), "index 0 crashed, 2-5 were stopped")
				Expect(stoppedIndices(cells, "web")).To(ConsistOf(int32(2), int32(3), int32(4), int32(5)))
				Eventually(events.count(models.EventDesiredLRPChanged, aboutLRP("web"))).Should(Equal(1))

				By("removing the LRP: every instance goes, the crashed one too")
				Expect(api.RemoveDesiredLRP(ctx, "web")).To(Succeed())
				Eventually(views(board, "web")).WithTimeout(convergeLimit).Should(BeEmpty())
				Eventually(runningIndices(cells, "web")).Should(BeEmpty())
				Eventually(events.count(models.EventDesiredLRPRemoved, aboutLRP("web"))).Should(Equal(1))
				Eventually(removed).Should(Equal(6))
			})

			It("keeps the instances of a lost cell as SUSPECT until their replacements run, then removes them", func() {
				cellA := startCell(board, "cell-a", "z1")
				startCell(board, "cell-b", "z2")
				_, err := api.DesireLRP(ctx, lrpSpec("web", "apps", 4))
				Expect(err).NotTo(HaveOccurred())
				Eventually(placement(board, "web")).WithTimeout(convergeLimit).
					Should(Equal(map[string]int{"cell-a RUNNING": 2, "cell-b RUNNING": 2}))

				cellA.Lose()
				Eventually(placement(board, "web")).WithTimeout(convergeLimit).Should(Equal(map[string]int{"cell-b RUNNING": 4}))

				toSuspect := events.count(models.EventActualLRPChanged, changedTo("web", models.ActualLRP_SUSPECT, models.ActualLRP_RUNNING))
				Eventually(toSuspect).Should(Equal(2))
				suspect := events.matching(models.EventActualLRPChanged, changedTo("web", models.ActualLRP_SUSPECT, models.ActualLRP_RUNNING))
				for _, e := range suspect {
					after := actualOf(e)
					Expect(after.GetCellId()).To(Equal("cell-a"))
					Expect(after.GetRoutable()).To(BeTrue(), "a suspect instance still serves")
				}
				Eventually(events.count(models.EventActualLRPCreated, aboutLRP("web"))).Should(Equal(6), "4 desired, 2 replacements")
				removedSuspects := func() []int32 {
					return indices(events.matching(models.EventActualLRPRemoved, func(e client.Event) bool {
						return actualOf(e).GetPresence() == models.ActualLRP_SUSPECT
					}))
				}
				Eventually(removedSuspects).Should(ConsistOf(indices(suspect)))

				By("the lost cell comes back: the board has no rows for what it still runs, so it stops them")
				Expect(cellA.Return(ctx)).To(Succeed())
				Eventually(func() []int32 {
					return stoppedIndices([]*simcell.Cell{cellA}, "web")
				}).Should(ContainElements(indices(suspect)))
				Eventually(events.count(models.EventCellChanged, aboutCell("cell-a"))).Should(Equal(2), "registered, and present again")

				By("and the instances spread over both zones again, moved start before stop")
				Eventually(placement(board, "web")).WithTimeout(convergeLimit).
					Should(Equal(map[string]int{"cell-a RUNNING": 2, "cell-b RUNNING": 2}))
			})

			// In these two the cells share a zone: a cell that never
			// claims in another zone would draw rebalancing moves.
			It("promotes the suspects back when their cell returns before the replacements run", func() {
				cellA := startCell(board, "cell-a", "z1")
				_, err := api.DesireLRP(ctx, lrpSpec("web", "apps", 2))
				Expect(err).NotTo(HaveOccurred())
				Eventually(placement(board, "web")).WithTimeout(convergeLimit).Should(Equal(map[string]int{"cell-a RUNNING": 2}))
				before := instanceGuids(instances(board, "web"))

				stuck := startCell(board, "cell-b", "z1")
				stuck.IgnoreAssignments()
				cellA.Lose()
				Eventually(placement(board, "web")).WithTimeout(convergeLimit).
					Should(Equal(map[string]int{"SUSPECT cell-a RUNNING": 2, "cell-b UNCLAIMED": 2}))

				Expect(cellA.Return(ctx)).To(Succeed())
				Eventually(placement(board, "web")).WithTimeout(convergeLimit).Should(Equal(map[string]int{"cell-a RUNNING": 2}))
				Expect(instanceGuids(instances(board, "web"))).To(Equal(before), "the same instances, never stopped")
				Eventually(events.count(models.EventActualLRPChanged, changedTo("web", models.ActualLRP_ORDINARY, models.ActualLRP_RUNNING))).Should(Equal(4), "2 started, 2 promoted back")
			})

			// A returning rep reports its instances as ORDINARY (it cannot
			// know the board made their rows SUSPECT); the board must not
			// tell it to stop what it is about to promote back.
			It("lets the returning cell keep running the instances the board promotes back", func() {
				cellA := startCell(board, "cell-a", "z1")
				_, err := api.DesireLRP(ctx, lrpSpec("web", "apps", 2))
				Expect(err).NotTo(HaveOccurred())
				Eventually(placement(board, "web")).WithTimeout(convergeLimit).Should(Equal(map[string]int{"cell-a RUNNING": 2}))
				startCell(board, "cell-b", "z1").IgnoreAssignments()
				cellA.Lose()
				Eventually(placement(board, "web")).WithTimeout(convergeLimit).
					Should(Equal(map[string]int{"SUSPECT cell-a RUNNING": 2, "cell-b UNCLAIMED": 2}))

				Expect(cellA.Return(ctx)).To(Succeed())
				Eventually(placement(board, "web")).WithTimeout(convergeLimit).Should(Equal(map[string]int{"cell-a RUNNING": 2}))
				board.waitForPasses(3)
				Expect(cellA.Stops()).To(BeEmpty())
				Expect(runningIndices([]*simcell.Cell{cellA}, "web")()).To(Equal([]int32{0, 1}))
			})

			It("places an unclaimed instance again when its cell does not claim it in time, and retries what fits nowhere", func() {
				stuck := startCell(board, "cell-a", "z1", withMemory(16384))
				stuck.IgnoreAssignments()
				startCell(board, "cell-b", "z2")

				_, err := api.DesireLRP(ctx, lrpSpec("web", "apps", 1))
				Expect(err).NotTo(HaveOccurred())
				Eventually(placement(board, "web")).WithTimeout(convergeLimit).Should(Equal(map[string]int{"cell-b RUNNING": 1}))
				movedAway := events.count(models.EventActualLRPChanged, func(e client.Event) bool {
					change := e.Payload.(*models.ActualLRPChangedEvent)
					return change.GetBefore().GetCellId() == "cell-a" && change.GetAfter().GetCellId() != "cell-a"
				})
				Eventually(movedAway).Should(Equal(1), "first placed on cell-a, which has the most free memory")

				By("an LRP that needs a tag no cell offers waits with a placement error")
				gpu := lrpSpec("trainer", "apps", 1)
				gpu.PlacementTags = []string{"gpu"}
				_, err = api.DesireLRP(ctx, gpu)
				Expect(err).NotTo(HaveOccurred())
				Eventually(func() string { return instances(board, "trainer")[0].GetPlacementError() }).WithTimeout(convergeLimit).
					Should(Equal("no present cell has tags [gpu]"))
				Expect(placement(board, "trainer")()).To(Equal(map[string]int{" UNCLAIMED": 1}))

				startCell(board, "cell-gpu", "z1", func(c *simcell.Config) { c.Cell.PlacementTags = []string{"gpu"} })
				Eventually(placement(board, "trainer")).WithTimeout(convergeLimit).Should(Equal(map[string]int{"cell-gpu RUNNING": 1}))
				Expect(instances(board, "trainer")[0].GetPlacementError()).To(BeEmpty())
			})

			It("keeps the instances of a removed LRP while its domain is stale, and deletes them once it is fresh", func() {
				cells := []*simcell.Cell{startCell(board, "cell-a", "z1"), startCell(board, "cell-b", "z2")}
				_, err := api.DesireLRP(ctx, lrpSpec("old", "legacy", 2))
				Expect(err).NotTo(HaveOccurred())
				Eventually(placement(board, "old")).WithTimeout(convergeLimit).
					Should(Equal(map[string]int{"cell-a RUNNING": 1, "cell-b RUNNING": 1}))

				Expect(api.RemoveDesiredLRP(ctx, "old")).To(Succeed())
				board.waitForPasses(5)
				Expect(placement(board, "old")()).To(Equal(map[string]int{"cell-a RUNNING": 1, "cell-b RUNNING": 1}),
					"the board may be missing desired state of a stale domain, so it deletes nothing there")
				Expect(events.count(models.EventActualLRPRemoved, aboutLRP("old"))()).To(Equal(0))
				Expect(stoppedIndices(cells, "old")).To(BeEmpty())

				Expect(api.UpsertDomain(ctx, "legacy", 0)).To(Succeed())
				Eventually(views(board, "old")).WithTimeout(convergeLimit).Should(BeEmpty())
				Eventually(runningIndices(cells, "old")).Should(BeEmpty())
				Eventually(events.count(models.EventActualLRPRemoved, aboutLRP("old"))).Should(Equal(2))
			})
		})
	}
})

// placement counts guid's rows by "[PRESENCE ]cell STATE", the presence
// shown unless ORDINARY.
func placement(board *runningBoard, guid string) func() map[string]int {
	return func() map[string]int {
		counts := map[string]int{}
		for _, lrp := range instances(board, guid) {
			key := lrp.GetCellId() + " " + lrp.GetState().String()
			if lrp.GetPresence() != models.ActualLRP_ORDINARY {
				key = lrp.GetPresence().String() + " " + key
			}
			counts[key]++
		}
		return counts
	}
}

// crashInstance makes whichever cell runs guid/index crash it.
func crashInstance(cells []*simcell.Cell, guid string, index int32) *models.ActualLRP {
	GinkgoHelper()
	for _, cell := range cells {
		for _, instance := range cell.Running() {
			if instance.ProcessGuid == guid && instance.Index == index {
				lrp, err := cell.Crash(context.Background(), guid, index, fmt.Sprintf("exit status 1 on %s", cell.ID()))
				Expect(err).NotTo(HaveOccurred())
				return lrp
			}
		}
	}
	Fail(fmt.Sprintf("no cell runs %s/%d", guid, index))
	return nil
}

// runningIndices lists the indices of guid the cells run, sorted.
func runningIndices(cells []*simcell.Cell, guid string) func() []int32 {
	return func() []int32 {
		out := []int32{}
		for _, cell := range cells {
			for _, instance := range cell.Running() {
				if instance.ProcessGuid == guid {
					out = append(out, instance.Index)
				}
			}
		}
		slices.Sort(out)
		return out
	}
}

// stoppedIndices lists the indices of guid the board told the cells to
// stop.
func stoppedIndices(cells []*simcell.Cell, guid string) []int32 {
	out := []int32{}
	for _, cell := range cells {
		for _, stop := range cell.Stops() {
			if stop.GetProcessGuid() == guid {
				out = append(out, stop.GetIndex())
			}
		}
	}
	return out
}

func instanceGuids(lrps []*models.ActualLRP) []string {
	out := make([]string, len(lrps))
	for i, lrp := range lrps {
		out[i] = lrp.GetInstanceGuid()
	}
	return out
}

func withMemory(memoryMB int32) func(*simcell.Config) {
	return func(c *simcell.Config) { c.Cell.Capacity.MemoryMb = memoryMB }
}

func int32p(v int32) *int32 { return &v }
