package main

import (
	"context"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/internal/netfault"
	"github.com/corkboard/corkboard/internal/netns"
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
			// The log line and the metric are written together; the line
			// reaches the test through a pipe, a moment later.
			Eventually(func() string { return string(second.session.Out.Contents()) }).Should(ContainSubstring(`"bbs.convergence.lease.acquired"`))

			_, err = api.DesireLRP(ctx, lrpSpec("after", "apps", 2))
			Expect(err).NotTo(HaveOccurred())
			Eventually(placement(second, "after")).WithTimeout(convergeLimit).
				Should(Equal(map[string]int{"cell-a RUNNING": 1, "cell-b RUNNING": 1}))
			Expect(second.fullPasses()).To(BeNumerically(">=", 1))
		})
	}
})

// The converging board on a host of its own (internal/netns: a network
// namespace joined to this one by a veth pair) partitioned from everything
// — its database, its clients — while it places an LRP: the other board
// takes the lease over once it runs out and places what is desired
// meanwhile. When the partition heals, the first board's writes — those
// its TCP retransmits into the database late, and any it tries after —
// change nothing: it does not get the lease back, no instance is placed
// twice, and what it sent before learning it lost the lease is either
// refused by the fence (db/rowlock; convergence/runner's specs prove the
// refusal on every database) or was committed while its lease still ran.
// The database listens on this host's loopback, so the partitioned board
// reaches it through a netfault.Link on the namespace's host address.
var _ = Describe("The converging board partitioned from its database", func() {
	ctx := context.Background()
	const heldSeries = "corkboard_convergence_lease_held"

	for _, dialect := range testdb.MustDialects() {
		if dialect == testdb.SQLite {
			continue
		}
		It("loses the lease to the other board, which converges, and changes nothing when the partition heals, on "+dialect, func() {
			database := newDatabase(dialect)
			upstream := regexp.MustCompile(`127\.0\.0\.1:\d+`).FindString(database.DSN)
			Expect(upstream).NotTo(BeEmpty(), "the test database is on a loopback address: %s", database.DSN)
			host, err := netns.Create()
			Expect(err).NotTo(HaveOccurred(), "a network namespace needs root and iproute2")
			DeferCleanup(host.Delete)
			link, err := netfault.NewLinkOn(host.HostIP, upstream)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(link.Close)

			config := convergingConfigFile(database, map[string]any{
				"board_id":       "board-partitioned",
				"listen_address": host.IP + ":0",
				"database_dsn":   strings.Replace(database.DSN, upstream, link.Addr, 1),
			})
			first := startBoardCommand(GinkgoWriter, host.Command(bbsPath, "-config", config))
			Eventually(func() float64 { return first.metric(heldSeries) }).WithTimeout(convergeLimit).Should(Equal(1.0))
			second := startConvergingBoard(database, map[string]any{"board_id": "board-second"})
			api := second.client()
			Expect(api.UpsertDomain(ctx, "apps", 0)).To(Succeed())
			startCell(second, "cell-a", "z1")
			startCell(second, "cell-b", "z2")
			_, err = api.DesireLRP(ctx, lrpSpec("before", "apps", 2))
			Expect(err).NotTo(HaveOccurred())
			Eventually(placement(second, "before")).WithTimeout(convergeLimit).
				Should(Equal(map[string]int{"cell-a RUNNING": 1, "cell-b RUNNING": 1}))

			By("partitioning the first board while it places a larger LRP")
			_, err = api.DesireLRP(ctx, lrpSpec("during", "apps", 20))
			Expect(err).NotTo(HaveOccurred())
			Expect(host.Partition()).To(Succeed())
			cut := time.Now()
			Eventually(func() float64 { return second.metric(heldSeries) }).WithTimeout(2 * convergeLimit).Should(Equal(1.0))
			AddReportEntry("takeover from a partitioned board ("+dialect+", lease TTL "+e2eLeaseTTL+")", time.Since(cut).Round(time.Millisecond).String())
			Eventually(placement(second, "during")).WithTimeout(convergeLimit).
				Should(Equal(map[string]int{"cell-a RUNNING": 10, "cell-b RUNNING": 10}))

			By("healing the partition")
			Expect(host.Heal()).To(Succeed())
			_, err = api.DesireLRP(ctx, lrpSpec("after", "apps", 2))
			Expect(err).NotTo(HaveOccurred())
			Eventually(placement(second, "after")).WithTimeout(convergeLimit).
				Should(Equal(map[string]int{"cell-a RUNNING": 1, "cell-b RUNNING": 1}))
			// The first board's late writes are in, or refused, once it
			// answers again: every LRP keeps exactly its instances, once each.
			Eventually(func() float64 { return first.metric(heldSeries) }).WithTimeout(convergeLimit).Should(Equal(0.0),
				"the partitioned board answers again, and does not own the lease")
			Consistently(func() []map[string]int {
				return []map[string]int{placement(second, "before")(), placement(second, "during")(), placement(second, "after")()}
			}, 3*time.Second, 250*time.Millisecond).Should(Equal([]map[string]int{
				{"cell-a RUNNING": 1, "cell-b RUNNING": 1},
				{"cell-a RUNNING": 10, "cell-b RUNNING": 10},
				{"cell-a RUNNING": 1, "cell-b RUNNING": 1},
			}))
			Expect(first.metric(heldSeries)).To(Equal(0.0), "the partitioned board does not take the lease back")
			Expect(second.metric(heldSeries)).To(Equal(1.0))
			logs := string(first.session.Out.Contents())
			Expect(logs).To(ContainSubstring(`"bbs.convergence.lease.lost"`))
			AddReportEntry("the partitioned board's writes refused by the fence ("+dialect+")",
				strings.Count(logs, "refused a write of a lease tenure that ended"))
		})
	}
})
