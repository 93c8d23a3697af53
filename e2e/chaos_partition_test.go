package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

// A rep cut off from the board for longer than its cell's presence TTL,
// then healed: 6 instances of hello on three reps in three zones, the
// third rep talking to the board through a partitionProxy (every packet
// dropped while cut; chaos_proxy_test.go). The instances themselves stay
// reachable, as they would be from a router on the other side of the cut.
//
// While cut: the rep keeps its instances running (it must not stop them
// just because it cannot reach the board); the board, once the cell's
// presence runs out, marks them SUSPECT, still routable, and starts
// replacements on the other cells; once a replacement runs, the SUSPECT
// row goes (convergence/doc.go, "Decisions"). After healing: the rep finds
// its rows gone and stops those instances, so each index ends with exactly
// one instance; the zones even out again (2, 2, 2). Throughout, a router
// sees no failed request (the cut instances answer for as long as the
// board calls them routable), the invariants hold, and no process is left
// that a rep does not account for.
var _ = Describe("Chaos: a rep partitioned from the board", Label("chaos"), func() {
	It("keeps serving while cut off, is replaced after the presence TTL, and stops its extra instances once healed, with no failed request", func() {
		const (
			guid      = "chaos-partition"
			instances = 6
			// cutFor is how long the partition lasts at least: over twice
			// the presence TTL (2 s), so the cell is well and truly gone.
			cutFor = 5 * time.Second
			// rebalanceLimit bounds the return to 2, 2 and 2. It is a
			// deadline against hanging, not a speed requirement.
			rebalanceLimit = 2 * time.Minute
		)
		slots := map[string]any{"capacity": map[string]int{"memory_mb": 1024, "disk_mb": 1024, "instances": instances}}
		b := startBoard(nil)
		b.cork("set-domain", "cork")
		proxy := startPartitionProxy(b)
		reps := []*runningRep{
			startRep(b, "cell-a", "z1", slots),
			startRep(b, "cell-b", "z2", slots),
			startRep(b, "cell-c", "z3", slots, map[string]any{"board_url": proxy.url}),
		}
		all := cellsOf(reps...)
		cutRep := reps[2]
		_, err := b.client().DesireLRP(context.Background(), chaosHelloLRP(guid, instances))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() map[string]int {
			return zonesOf(steady(b, guid, instances, all...))
		}).Should(Equal(map[string]int{"cell-a": 2, "cell-b": 2, "cell-c": 2}))

		r := startRouter(b, guid)
		Eventually(r.routable).Should(Equal(instances), "the router sees every instance before the fault")
		watch := watchInvariants(b, guid, instances, 0)
		events := recordLRPEvents(b, guid)
		var cutRows []*models.ActualLRP
		for _, row := range b.lrps(guid) {
			if row.GetCellId() == cutRep.cellID {
				cutRows = append(cutRows, row)
			}
		}
		pids := cutRep.pids()
		Expect(pids).To(HaveLen(2))
		Expect(cutRows).To(HaveLen(2))
		answering := watchInstances(cutRows)

		By("cutting the rep off from the board")
		proxy.cutOff()
		cut := time.Now()
		steady(b, guid, instances, "cell-a", "cell-b")
		chaosEntry("cut to the cut cell's instances replaced on the others", since(cut))
		Eventually(func() []string { return events.snapshot().suspects }).Should(HaveLen(2),
			"the board marked the cut cell's two instances SUSPECT first")
		time.Sleep(cutFor - time.Since(cut))

		By("the cut rep's instances still running and answering as themselves")
		Expect(anyAlive(pids)).To(ConsistOf(pids), "the rep stopped instances while it could not reach the board")
		for _, row := range cutRows {
			Expect(answers(row)).To(BeTrue(), "%s/%d on %s", guid, row.GetIndex(), row.GetCellId())
		}
		looks, unanswered := answering.stop()
		Expect(looks).To(BeNumerically(">", 10))
		Expect(unanswered).To(BeEmpty(), "the cut cell's instances answered throughout the cut")

		By("healing: the rep stops the instances the board replaced, and each index has one instance")
		proxy.heal()
		healed := time.Now()
		accepted, swallowed := proxy.counts()
		Eventually(func() []int { return anyAlive(pids) }).Should(BeEmpty(), "the replaced instances are stopped")
		chaosEntry("heal to the replaced instances stopped", since(healed))
		Eventually(func() map[string]int {
			return zonesOf(steady(b, guid, instances, all...))
		}).WithTimeout(rebalanceLimit).Should(Equal(map[string]int{"cell-a": 2, "cell-b": 2, "cell-c": 2}))
		chaosEntry("heal to 2, 2 and 2 again", since(healed))
		var perIndex []int32
		for _, rep := range reps {
			for _, inst := range rep.instances() {
				perIndex = append(perIndex, inst.Index)
			}
		}
		slices.Sort(perIndex)
		Expect(perIndex).To(Equal([]int32{0, 1, 2, 3, 4, 5}), "one running instance per index across the reps")
		expectNoOrphans(instances, reps...)

		stats := r.stop()
		report := watch.stop()
		seen := events.stop()
		chaosEntry("router", fmt.Sprintf("%d requests, %d failed, fewest routable indices %d", stats.Requests, len(stats.Failures), stats.Fewest))
		chaosEntry("invariants", report.String())
		chaosEntry("events", fmt.Sprintf("%d instances created, %d marked SUSPECT, %d crashes, %d stream breaks", seen.created, len(seen.suspects), seen.crashes, seen.breaks))
		chaosEntry("partition proxy", fmt.Sprintf("%d connections, %d of them swallowed by the cut", accepted, swallowed))
		expectServedThroughout(stats, instances)
		report.expectHeld()
		Expect(report.fewest).To(Equal(instances))

		By("stopping every rep: no process is left")
		stopRepsAndExpectNoProcesses(reps...)
	})
})
