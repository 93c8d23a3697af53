package e2e_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

// A rep SIGKILLed in the middle of a rolling update: 6 instances of hello
// on three reps in three zones roll from v1 to v2 (surge 1, none
// unavailable, each new instance ready for a second before its
// predecessor goes); once two indices run v2, the rep with the most
// instances is SIGKILLed.
//
// What is true, and asserted: the rep's instances die with it (the
// executor starts them with Pdeathsig SIGKILL, rep/doc.go "No orphans"),
// and nothing tells the board before the cell's presence TTL (2 s here)
// runs out. Until then, and until their replacements run elsewhere, the
// board still lists them RUNNING and routable (as SUSPECT once the TTL is
// out: a cell that merely lost its board keeps serving, see the partition
// spec), so a router sends them requests that fail. Those failures, and
// only those, are allowed: every failed request must be to an instance on
// the killed cell, none may fail once the LRP is steady again, and the
// routable indices may dip below 6 by at most the killed cell's count
// until then. The rollout must complete on the two remaining cells,
// without a second ORDINARY row at any index and without losing the LRP.
// The rep restarted on its cell finds nothing of its predecessor left
// (no process under its data dir it does not run), the zones even out
// again (2, 2, 2) with no request failing, and when every rep stops, no
// process is left behind.
var _ = Describe("Chaos: a rep SIGKILLed mid-rollout", Label("chaos"), func() {
	It("has its instances replaced on the other cells and the rollout completed, failing only requests to the killed cell's instances, leaving no orphan", func() {
		const (
			guid      = "chaos-rep-kill"
			instances = 6
			minReady  = time.Second
			// rolloutLimit bounds the rollout and the recovery. It is a
			// deadline against hanging, not a speed requirement.
			rolloutLimit = 2 * time.Minute
		)
		slots := map[string]any{"capacity": map[string]int{"memory_mb": 1024, "disk_mb": 1024, "instances": instances}}
		b := startBoard(nil)
		b.cork("set-domain", "cork")
		reps := []*runningRep{
			startRep(b, "cell-a", "z1", slots),
			startRep(b, "cell-b", "z2", slots),
			startRep(b, "cell-c", "z3", slots),
		}
		all := cellsOf(reps...)
		_, err := b.client().DesireLRP(context.Background(), chaosHelloLRP(guid, instances))
		Expect(err).NotTo(HaveOccurred())
		steady(b, guid, instances, all...)

		r := startRouter(b, guid)
		Eventually(r.routable).Should(Equal(instances), "the router sees every instance before the fault")
		watch := watchInvariants(b, guid, instances, 0)
		started := time.Now()
		v2 := rollHello(b, guid, "v2", minReady)
		waitForProgress(b, guid, v2, 2)

		By("SIGKILLing the rep that runs the most instances")
		victimAt := 0
		for i, rep := range reps {
			if len(rep.instances()) > len(reps[victimAt].instances()) {
				victimAt = i
			}
		}
		victim := reps[victimAt]
		var survivors []*runningRep
		for i, rep := range reps {
			if i != victimAt {
				survivors = append(survivors, rep)
			}
		}
		pids := victim.pids()
		Expect(pids).NotTo(BeEmpty())
		// The indices the kill can take away: at most one per instance.
		watch.excuse(len(pids))
		killed := time.Now()
		victim.session.Kill()
		Eventually(victim.session).Should(gexec.Exit())
		Eventually(func() []int { return anyAlive(pids) }).Should(BeEmpty(), "the rep's instances die with it (Pdeathsig)")
		chaosEntry("rep SIGKILL: its instances dead after", since(killed))

		By("completing the rollout on the two other cells")
		waitForRollout(b, guid, rolloutLimit, completeOn(v2))
		rows := steady(b, guid, instances, cellsOf(survivors...)...)
		recovered := time.Now()
		watch.excuse(0)
		expectVersion(rows, v2, "v2")
		chaosEntry("rep SIGKILL to the rollout complete and 6 v2 instances answering on the others", since(killed))
		chaosEntry("rollout start to complete, the kill included", recovered.Sub(started).Round(time.Millisecond).String())
		failedAtRecovery, sentAtRecovery := r.failedSoFar(), r.sent()
		Eventually(r.sent).Should(BeNumerically(">", sentAtRecovery+100))
		Expect(r.failedSoFar()).To(Equal(failedAtRecovery), "no request fails once the LRP is steady again")
		expectNoOrphans(instances, reps...)

		By("restarting the killed rep: nothing of its predecessor is left, and the zones even out")
		victim = victim.restart()
		reps[victimAt] = victim
		restarted := time.Now()
		Eventually(func() map[string]int {
			return zonesOf(steady(b, guid, instances, all...))
		}).WithTimeout(rolloutLimit).Should(Equal(map[string]int{"cell-a": 2, "cell-b": 2, "cell-c": 2}))
		chaosEntry("rep restart to 2, 2 and 2 again", since(restarted))
		expectNoOrphans(instances, reps...)

		stats := r.stop()
		report := watch.stop()
		onVictim, elsewhere := failuresOn(stats.Failures, victim.cellID)
		chaosEntry("router", fmt.Sprintf("%d requests, %d failed (%d to the killed %s's instances, %d elsewhere), fewest routable indices %d",
			stats.Requests, len(stats.Failures), len(onVictim), victim.cellID, len(elsewhere), stats.Fewest))
		if len(onVictim) > 0 {
			first, last, span := failureSpan(onVictim)
			chaosEntry("failed requests to the killed cell", fmt.Sprintf("from %s to %s (%s; the kill at %s), the first: %s",
				first, last, span.Round(time.Millisecond), killed.Format(time.StampMilli), onVictim[0]))
		}
		chaosEntry("invariants", report.String())
		for _, dip := range report.excused {
			GinkgoWriter.Println("excused dip:", dip)
		}
		Expect(elsewhere).To(BeEmpty(), "requests that failed on instances the kill did not touch")
		Expect(stats.Fewest).To(BeNumerically(">=", instances-len(pids)), "the router's view at its worst: %s", stats.Worst)
		report.expectHeld()
		Expect(report.fewest).To(BeNumerically(">=", instances-len(pids)))

		By("stopping every rep: no process is left")
		stopRepsAndExpectNoProcesses(reps...)
	})
})
