package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// A router-like client through database faults, with real reps: the
// board runs on a private Postgres (internal/testdb: its own initdb'd
// cluster on a temporary directory and port; the machine's shared server
// is never touched), and 6 instances of hello on three reps roll twice
// (surge 1, none unavailable, min_ready 1 s). Under the first rollout the
// database restarts (a fast shutdown, then a start); under the second it
// is frozen with SIGSTOP — it accepts connections and answers nothing —
// for three presence TTLs, then thawed.
//
// Throughout, the router sees no failed request and never fewer than 6
// routable indices; the invariants hold on every look the board could
// answer. Each rollout completes by itself after the fault. No instance is
// replaced because of either fault: no row ever goes SUSPECT (the board
// judges presence on the time it could see its database, see
// convergence.PresenceGrace), nothing crashes, and the two rollouts create
// exactly 12 instances, 6 each — a cell judged gone would have had its
// instances replaced on top.
//
// Last, with the router stopped (a process killed unannounced fails the
// requests sent to it until its rep can tell the board), an instance is
// SIGKILLed while the database is frozen: its rep's crash call gets
// Unavailable, and once the database is back the crash must reach the
// board and the index run again. (The rep used to take Unavailable as the
// board's final answer and drop the crash, leaving the row RUNNING and
// routable on a dead process for good; see rep.answered.) When the reps
// stop, no process is left.
var _ = Describe("Chaos: the board's database restarted and frozen under rollouts", Label("chaos"), func() {
	It("fails no request, replaces no instance because of the faults, completes both rollouts, and reports a crash from the outage after it", func() {
		const (
			guid        = "chaos-database"
			instances   = 6
			minReady    = time.Second
			presenceTTL = 2 * time.Second
			// frozenFor is well over the presence TTL: every cell's
			// presence runs out while no rep can renew it.
			frozenFor = 3 * presenceTTL
			// rolloutLimit bounds each rollout's end after its fault. It
			// is a deadline against hanging, not a speed requirement.
			rolloutLimit = 2 * time.Minute
		)
		ctx := context.Background()
		server, err := testdb.StartPrivatePostgres()
		if errors.Is(err, testdb.ErrNoPostgresBinaries) && os.Getenv(testdb.RequireEnv) != "1" {
			Skip(err.Error())
		}
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(server.Close)
		database, err := testdb.CreateOn(testdb.Postgres, server.AdminDSN())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(database.Drop)

		// Registered after the server's cleanups, so the board and the
		// reps stop before the database goes.
		b := startBoard(map[string]any{
			"database_driver":      testdb.Postgres,
			"database_dsn":         database.DSN,
			"database_timeout":     "1s",
			"cell_presence_ttl":    presenceTTL.String(),
			"max_open_connections": 16,
		})
		b.cork("set-domain", "cork")
		slots := map[string]any{"capacity": map[string]int{"memory_mb": 1024, "disk_mb": 1024, "instances": instances}}
		reps := []*runningRep{
			startRep(b, "cell-a", "z1", slots),
			startRep(b, "cell-b", "z2", slots),
			startRep(b, "cell-c", "z3", slots),
		}
		all := cellsOf(reps...)
		_, err = b.client().DesireLRP(ctx, chaosHelloLRP(guid, instances))
		Expect(err).NotTo(HaveOccurred())
		steady(b, guid, instances, all...)

		r := startRouter(b, guid)
		Eventually(r.routable).Should(Equal(instances), "the router sees every instance before the faults")
		watch := watchInvariants(b, guid, instances, 0)
		events := recordLRPEvents(b, guid)

		By("restarting the database under a rollout to v2")
		v2 := rollHello(b, guid, "v2", minReady)
		waitForProgress(b, guid, v2, 2)
		restartBegan := time.Now()
		Expect(server.Restart()).To(Succeed())
		back := time.Now()
		waitForRollout(b, guid, rolloutLimit, completeOn(v2))
		expectVersion(steady(b, guid, instances, all...), v2, "v2")
		chaosEntry("database restart (shutdown and start)", back.Sub(restartBegan).Round(time.Millisecond).String())
		chaosEntry("database back to the v2 rollout complete and steady", since(back))

		By("freezing the database for three presence TTLs under a rollout to v3")
		v3 := rollHello(b, guid, "v3", minReady)
		waitForProgress(b, guid, v3, 2)
		Expect(server.Freeze()).To(Succeed())
		frozen := time.Now()
		time.Sleep(frozenFor)
		Expect(server.Thaw()).To(Succeed())
		thawed := time.Now()
		Eventually(func() error { _, err := b.client().Ping(ctx); return err }).Should(Succeed())
		chaosEntry("database frozen for", thawed.Sub(frozen).Round(time.Millisecond).String())
		chaosEntry("thaw to the board answering", since(thawed))
		waitForRollout(b, guid, rolloutLimit, completeOn(v3))
		expectVersion(steady(b, guid, instances, all...), v3, "v3")
		chaosEntry("thaw to the v3 rollout complete and steady", since(thawed))
		expectNoOrphans(instances, reps...)

		Eventually(r.sent).Should(BeNumerically(">", r.sent()+100), "the router goes on a while after the last fault")
		stats := r.stop()
		report := watch.stop()
		seen := events.stop()
		chaosEntry("router", fmt.Sprintf("%d requests, %d failed, fewest routable indices %d, answers by version %v",
			stats.Requests, len(stats.Failures), stats.Fewest, stats.Versions))
		chaosEntry("invariants", report.String())
		chaosEntry("events", fmt.Sprintf("%d instances created, %d marked SUSPECT, %d crashes, %d stream breaks, %d events_lost",
			seen.created, len(seen.suspects), seen.crashes, seen.breaks, seen.lost))
		expectServedThroughout(stats, instances)
		report.expectHeld()
		Expect(report.unanswered).To(BeNumerically(">", 0), "the watch saw the board unable to answer during the faults")
		Expect(report.suspects).To(BeEmpty(), "rows the watch saw SUSPECT")
		Expect(seen.suspects).To(BeEmpty(), "rows marked SUSPECT")
		Expect(seen.crashes).To(BeZero())
		Expect(seen.lost).To(BeZero(), "the count of created instances below needs every event")
		Expect(seen.created).To(Equal(2*instances), "each rollout creates one instance per index and no more")

		By("killing an instance while the database is frozen: once it is back, the crash is reported and the index runs again")
		// The router has stopped: a process killed unannounced fails the
		// requests sent to it until its rep can tell the board, which is
		// not what this step is about.
		victim := b.lrps(guid)[0]
		victimIndex := victim.GetIndex()
		var victimPid int
		for _, rep := range reps {
			if rep.cellID != victim.GetCellId() {
				continue
			}
			for _, inst := range rep.instances() {
				if inst.InstanceGuid == victim.GetInstanceGuid() {
					victimPid = inst.Pid
				}
			}
		}
		Expect(victimPid).NotTo(BeZero())
		Expect(server.Freeze()).To(Succeed())
		frozen = time.Now()
		Expect(syscall.Kill(victimPid, syscall.SIGKILL)).To(Succeed())
		// Long enough for the rep's crash call to get the board's answer
		// (Unavailable, after the 1 s database timeout), well short of the
		// presence TTL.
		time.Sleep(presenceTTL - 500*time.Millisecond)
		Expect(server.Thaw()).To(Succeed())
		thawed = time.Now()
		// The board may answer Unavailable a while yet after the thaw.
		Eventually(func() (*models.ActualLRP, error) {
			rows, err := b.client().ActualLRPs(ctx, client.ActualLRPFilter{ProcessGuid: guid, Index: &victimIndex})
			if err != nil || len(rows) != 1 {
				return nil, fmt.Errorf("want index 0's row, have %d rows (%v)", len(rows), err)
			}
			return rows[0], nil
		}).Should(And(
			HaveField("State", models.ActualLRP_RUNNING),
			HaveField("CrashCount", BeEquivalentTo(1)),
			HaveField("InstanceGuid", Not(Equal(victim.GetInstanceGuid()))),
		), "index 0 crashed and runs again")
		chaosEntry("thaw to the instance killed while frozen running again", since(thawed))
		steady(b, guid, instances, all...)

		By("stopping every rep: no process is left")
		stopRepsAndExpectNoProcesses(reps...)
	})
})
