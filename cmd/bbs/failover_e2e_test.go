package main

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/internal/testdb"
)

// Two boards on one database: one converges, the other serves the API;
// when the converging one dies, the other takes over within the lease TTL
// (2 s here) and a pass interval. SQLite is left out: its file is not
// shared between machines.
var _ = Describe("Two boards on one database", func() {
	ctx := context.Background()
	const heldSeries = "corkboard_convergence_lease_held"

	for _, dialect := range testdb.MustDialects() {
		if dialect == testdb.SQLite {
			continue
		}
		It("lets one converge, and the other take over when it is killed, on "+dialect, func() {
			database := newDatabase(dialect)
			first := startConvergingBoard(database, map[string]any{"board_id": "board-first"})
			Eventually(func() float64 { return first.metric(heldSeries) }).WithTimeout(convergeLimit).Should(Equal(1.0))
			second := startConvergingBoard(database, map[string]any{"board_id": "board-second"})

			// The cells and the API client use the second board only:
			// what the first one does, it does through the database.
			api := second.client()
			Expect(api.UpsertDomain(ctx, "apps", 0)).To(Succeed())
			startCell(second, "cell-a", "z1")
			startCell(second, "cell-b", "z2")
			_, err := api.DesireLRP(ctx, lrpSpec("before", "apps", 2))
			Expect(err).NotTo(HaveOccurred())
			Eventually(placement(second, "before")).WithTimeout(convergeLimit).
				Should(Equal(map[string]int{"cell-a RUNNING": 1, "cell-b RUNNING": 1}))

			By("only the first board converges")
			first.waitForPasses(5)
			Expect(second.metric(heldSeries)).To(Equal(0.0))
			Expect(second.fullPasses()).To(Equal(0.0))
			Expect(second.metric("corkboard_lrps_desired")).To(Equal(-1.0), "no counts from a board that does not converge")
			Expect(first.metric("corkboard_lrps_desired")).To(Equal(2.0))
			Expect(string(second.session.Out.Contents())).NotTo(ContainSubstring(`"bbs.convergence.pass.done"`))

			By("killing the first board")
			killed := time.Now()
			first.session.Kill()
			Eventually(first.session).WithTimeout(startupLimit).Should(gexec.Exit())
			Eventually(func() float64 { return second.metric(heldSeries) }).WithTimeout(convergeLimit).Should(Equal(1.0))
			AddReportEntry("takeover after SIGKILL ("+dialect+", lease TTL "+e2eLeaseTTL+")", time.Since(killed).Round(time.Millisecond).String())
			Expect(string(second.session.Out.Contents())).To(ContainSubstring(`"bbs.convergence.lease.acquired"`))

			_, err = api.DesireLRP(ctx, lrpSpec("after", "apps", 2))
			Expect(err).NotTo(HaveOccurred())
			Eventually(placement(second, "after")).WithTimeout(convergeLimit).
				Should(Equal(map[string]int{"cell-a RUNNING": 1, "cell-b RUNNING": 1}))
			Expect(second.fullPasses()).To(BeNumerically(">=", 1))
		})
	}
})
