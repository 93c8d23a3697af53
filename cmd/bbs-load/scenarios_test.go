package main

import (
	"os"
	"os/exec"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/internal/testdb"
)

// Every scenario, at a small size, on every configured database. Each
// scenario checks its own outcome in the database (every instance placed,
// RUNNING, reconciled; a second pass with nothing to do) and exits
// non-zero when a check fails, so these specs pass only when the
// scenarios measure what they say. Nothing here looks at the figures'
// values.
var _ = Describe("scenarios", func() {
	for _, driver := range testdb.MustDialects() {
		Context("on "+driver, func() {
			run := func(args ...string) *gexec.Session {
				args = append(args, "-driver", driver)
				switch driver {
				case testdb.Postgres:
					args = append(args, "-dsn", os.Getenv(testdb.PostgresDSNEnv))
				case testdb.MySQL:
					args = append(args, "-dsn", os.Getenv(testdb.MySQLDSNEnv))
				}
				session, err := gexec.Start(exec.Command(bbsLoadPath, args...), GinkgoWriter, GinkgoWriter)
				Expect(err).NotTo(HaveOccurred())
				Eventually(session, 2*time.Minute).Should(gexec.Exit(0))
				return session
			}

			It("api: desires, desires at a rate, lists", func() {
				session := run("api", "-desires", "100", "-clients", "4", "-rate", "50", "-rate-duration", "1s", "-actual-lrps", "600", "-list-runs", "1")
				Expect(session).To(gbytes.Say(`desire throughput: 100 desires, 4 clients`))
				Expect(session).To(gbytes.Say(`desire at 50/s for 1s: 50 desires`))
				Expect(session).To(gbytes.Say(`list actual LRPs: 600 rows, 1 runs`))
			})

			It("converge: steady passes, a repair pass, a placement pass", func() {
				session := run("converge", "-lrps", "200", "-cells", "20", "-passes", "2", "-place-lrps", "100")
				Expect(session).To(gbytes.Say(`figure converge.steady-pass \[` + driver + `, 1000 instances = 200 LRPs × 5, 20 cells in 4 zones`))
				Expect(session).To(gbytes.Say(`figure converge.targeted-pass \[` + driver + `, one LRP of 1000 instances = 200 LRPs × 5, 20 cells in 4 zones`))
				Expect(session).To(gbytes.Say(`broke 70 instances: 50 missing \(deleted\), 10 crashed \(CRASHED, crash 1\), 10 extra`))
				Expect(session).To(gbytes.Say(`verified: the next pass has nothing to do; 990 instances, none CRASHED`))
				Expect(session).To(gbytes.Say(`figure converge.repair-pass \[` + driver))
				Expect(session).To(gbytes.Say(`verified: all 500 instances placed on a cell`))
				Expect(session).To(gbytes.Say(`figure converge.place-pass \[` + driver + `, 500 new instances`))
			})

			It("lifecycle: cells claim and start their instances", func() {
				session := run("lifecycle", "-cells", "4", "-lrps", "40", "-in-flight", "2", "-converge-during")
				Expect(session).To(gbytes.Say(`verified: all 200 instances RUNNING`))
				Expect(session).To(gbytes.Say(`figure lifecycle.claim-start \[` + driver + `, 4 cells × 2 in flight, 200 claims \+ 200 starts over HTTP, \d+ convergence passes alongside`))
			})

			It("report: scheduled reports, then all cells after a restart", func() {
				session := run("report", "-cells", "20", "-per-cell", "10", "-period", "500ms", "-duration", "1s", "-restart-window", "200ms")
				Expect(session).To(gbytes.Say(`figure report.steady \[` + driver + `, 20 cells × 10 RUNNING instances, each reporting every 500ms for 1s: 40 reports`))
				Expect(session).To(gbytes.Say(`restarted the board with 20 instances CLAIMED`))
				Expect(session).To(gbytes.Say(`verified: all 200 instances RUNNING`))
				Expect(session).To(gbytes.Say(`figure report.restart \[` + driver + `.*all 20 reports answered and reconciled`))
			})

			It("rss: the memory of a bbs process after convergence passes", func() {
				session := run("rss", "-bbs", bbsPath, "-lrps", "100", "-cells", "10", "-interval", "200ms", "-passes", "2")
				Expect(session).To(gbytes.Say(`figure rss.board \[` + driver + `, bin/bbs with 500 instances .* after \d+ full passes .*\]: VmHWM \d+ MB, VmRSS \d+ MB`))
			})

			It("operations: the whole log, page by page", func() {
				session := run("operations", "-operations", "2500", "-lrps", "100", "-page", "1000", "-runs", "2")
				Expect(session).To(gbytes.Say(`verified: every operation listed once, newest first, 2 runs`))
				Expect(session).To(gbytes.Say(`figure operations.list \[` + driver + `, 2500 operations of 100 LRPs over HTTP, pages of 1000, 2 runs`))
			})

			It("lists: the memory of a bbs process while clients list whole", func() {
				session := run("lists", "-bbs", bbsPath, "-lrps", "200", "-instances", "2", "-cells", "10", "-db-mb", "0.2", "-clients", "3", "-rounds", "2", "-settle", "0s")
				Expect(session).To(gbytes.Say(`seeded 400 instances = 200 LRPs × 2, 10 cells in 4 zones, all RUNNING, run_infos definitions 0\.2 MB \(1000 bytes each\)`))
				Expect(session).To(gbytes.Say(`verified: every list complete \(200 desired LRPs, 400 actual LRPs\)`))
				Expect(session).To(gbytes.Say(`figure lists.board \[` + driver + `, \S+ with 200 LRPs × 2 RUNNING, run_infos definitions 0\.2 MB, 3 clients × 2 rounds .*\]: peak RSS \(VmHWM\) \d+ MB`))
				Expect(session).To(gbytes.Say(`figure lists.latency \[` + driver + `.*\]: whole desired_lrps list p50 \S+ max \S+, answer 0\.\d MB`))
			})

			It("peer: the Diego comparison's workload on a bbs process", func() {
				session := run("peer", "-bbs", bbsPath, "-lrps", "200", "-cells", "10", "-clients", "4", "-passes", "2", "-list-rounds", "2", "-updates", "200", "-scale", "50")
				Expect(session).To(gbytes.Say(`figure peer.desire \[` + driver + `, bin/bbs, 200 one-instance LRPs of \d+ bytes, 10 cells, 4 clients over HTTP.*\]: \d+ req/s \(200 in `))
				Expect(session).To(gbytes.Say(`the board placed all 200 instances`))
				Expect(session).To(gbytes.Say(`verified: all 200 instances RUNNING`))
				Expect(session).To(gbytes.Say(`figure peer.claim-start \[` + driver + `.*\]: \d+ ops/s \(200 claims \+ 200 starts in `))
				Expect(session).To(gbytes.Say(`figure peer.steady-pass \[` + driver + `.*in-process on the same database, from a mirror, 2 passes after 1 warm-up`))
				Expect(session).To(gbytes.Say(`figure peer.list-desired \[` + driver + `.*2 whole lists.*\]: p50 `))
				Expect(session).To(gbytes.Say(`figure peer.list-scheduling-infos \[` + driver))
				Expect(session).To(gbytes.Say(`figure peer.list-actual \[` + driver))
				Expect(session).To(gbytes.Say(`figure peer.update-annotation \[` + driver + `.*\]: \d+ ops/s \(200 in `))
				Expect(session).To(gbytes.Say(`figure peer.instances-up \[` + driver + `.*, 50 distinct LRPs each once, .*\]: \d+ ops/s \(50 in .*p99 `))
				Expect(session).To(gbytes.Say(`the board placed every new instance .* \(250 instances placed\)`))
				Expect(session).To(gbytes.Say(`figure peer.instances-down \[` + driver + `.*, 50 distinct LRPs each once, .*\]: \d+ ops/s \(50 in .*p99 `))
				Expect(session).To(gbytes.Say(`the board removed every extra instance .* \(200 instances placed\)`))
				Expect(session).To(gbytes.Say(`figure peer.board-rss \[` + driver + `.*\]: VmHWM \d+ MiB`))
				Expect(session).To(gbytes.Say(`figure peer.db-bytes \[` + driver + `.*after the run, .*\]: \d+ bytes per LRP \([0-9.]+ MB in \d+ tables; per LRP: .*desired_lrps \d+`))
			})

			It("peer -migrate board: the board migrates its own database", func() {
				session := run("peer", "-bbs", bbsPath, "-migrate", "board", "-lrps", "100", "-cells", "10", "-clients", "4", "-passes", "2", "-list-rounds", "1", "-updates", "50")
				Expect(session).To(gbytes.Say(`the board migrated the database to (\d{4}) \(this binary's latest: \d{4}\)`))
				// The board is this tree's: its schema is this binary's, so
				// the in-process steady pass runs.
				Expect(session).To(gbytes.Say(`figure peer.steady-pass \[` + driver))
				Expect(session).To(gbytes.Say(`figure peer.instances-down \[` + driver + `.*, 50 distinct LRPs each once`))
				Expect(session).To(gbytes.Say(`figure peer.db-bytes \[` + driver))
			})

			It("busy: desire, update and get while passes run and cells report", func() {
				// A pass every 200 ms: 4 clients desire about 1,000 LRPs a
				// second here, and a pass re-reads the LRPs desired since the
				// last one and those the last one wrote; past 1,000 of them it
				// reads everything again (runner.Mirror, rightly). With
				// passes every second, the one full read the spec expects
				// depended on the machine's speed.
				session := run("busy", "-cells", "20", "-per-cell", "10", "-duration", "2s", "-period", "1s", "-clients", "4", "-pass-every", "200ms", "-bytes-every", "900ms")
				Expect(session).To(gbytes.Say(`the lease owner's first pass read everything into its mirror`))
				Expect(session).To(gbytes.Say(`database after [\d.]+m?s of the window: [\d.]+ MB in \d+ tables \(MB: .*\); \d+ events in the log`))
				Expect(session).To(gbytes.Say(`the lease owner's passes from its mirror, (back to back|every [0-9.]+m?s): \d+ in the window, .*; \d+ writes, all to the clients' LRPs .*; 1 full reads in all`))
				Expect(session).To(gbytes.Say(`full-read passes .*: \d+ in the window`))
				Expect(session).To(gbytes.Say(`bulk reports: 40 of 20 cells' 10 instances every 1s`))
				Expect(session).To(gbytes.Say(`verified: all 200 instances RUNNING`))
				conditions := `, 200 RUNNING instances = 40 LRPs × 5, 20 cells bulk-reporting every 1s, .* 4 clients closed loop over HTTP for 2s`
				Expect(session).To(gbytes.Say(`figure busy.desire \[` + driver + conditions + `.*\]: \d+ requests \(\d+/s\), 0 failed, .*\(target p99 < 20ms: (met|MISSED)\)`))
				Expect(session).To(gbytes.Say(`figure busy.update \[` + driver + conditions + `.*\]: \d+ requests \(\d+/s\), 0 failed`))
				Expect(session).To(gbytes.Say(`figure busy.get \[` + driver + conditions + `.*\]: \d+ requests \(\d+/s\), 0 failed`))
				// The log holds at least the clients' writes' events.
				Expect(session).To(gbytes.Say(`figure busy.db-bytes \[` + driver + conditions + `.*after the window.*\]: [\d.]+ MB in \d+ tables \(MB: .*\); [1-9]\d* events in the log`))
			})

			It("busy -bbs: a board binary serves and converges on its own", func() {
				session := run("busy", "-bbs", bbsPath, "-cells", "20", "-per-cell", "10", "-duration", "2s", "-period", "1s", "-clients", "4", "-pass-every", "500ms")
				Expect(session).To(gbytes.Say(`the board started and its lease owner's first pass read everything`))
				Expect(session).To(gbytes.Say(`the board's own passes, every 500ms, full reads every 10s: \d+ in the window`))
				Expect(session).To(gbytes.Say(`bulk reports: 40 of 20 cells' 10 instances every 1s`))
				Expect(session).To(gbytes.Say(`verified: all 200 instances RUNNING`))
				Expect(session).To(gbytes.Say(`figure busy.desire \[` + driver + `, 200 RUNNING instances .*'s own passes every 500ms .*\]: \d+ requests \(\d+/s\), 0 failed`))
				Expect(session).To(gbytes.Say(`figure busy.update \[` + driver))
				Expect(session).To(gbytes.Say(`figure busy.get \[` + driver))
				Expect(session).To(gbytes.Say(`figure busy.db-bytes \[` + driver + `.*\]: [\d.]+ MB in \d+ tables`))
			})

			It("rollout: a rolling update to the end, each pass and the whole", func() {
				session := run("rollout", "-lrps", "4", "-instances", "50", "-cells", "12")
				Expect(session).To(gbytes.Say(`every rollout COMPLETE after \d+ passes`))
				Expect(session).To(gbytes.Say(`verified: 4 rollouts COMPLETE, all 200 instances ORDINARY and RUNNING on the new definition, no RETIRING row left`))
				Expect(session).To(gbytes.Say(`figure rollout.pass \[` + driver + `, 200 instances = 4 LRPs × 50, 12 cells in 4 zones, surge 25%, unavailable 0`))
				Expect(session).To(gbytes.Say(`figure rollout.whole \[` + driver))
			})
		})
	}

	It("refuses an unknown scenario, naming the known ones", func() {
		session, err := gexec.Start(exec.Command(bbsLoadPath, "convergence"), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).Should(gexec.Exit(2))
		Expect(string(session.Err.Contents())).To(ContainSubstring(`unknown scenario "convergence" (want one of: api, converge, lifecycle, report, rss, rollout, operations, lists, peer, busy, ratios)`))
	})

	It("needs -dsn for a server database, and creates nothing without it", func() {
		session, err := gexec.Start(exec.Command(bbsLoadPath, "converge", "-driver", "postgres"), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		Eventually(session).Should(gexec.Exit(1))
		Expect(strings.TrimSpace(string(session.Err.Contents()))).To(Equal("bbs-load converge: -dsn is required for driver postgres"))
	})
})
