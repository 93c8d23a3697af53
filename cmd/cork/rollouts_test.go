package main_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("cork rollout", func() {
	var (
		board string
		store db.DB
	)

	BeforeEach(func() {
		hub := events.NewHub()
		board, store = startBoardWithStore([]sqldb.Option{sqldb.WithEvents(hub)}, handlers.WithEvents(hub))
		r := runCork(board, "", "desire", fixture("hello.json"))
		Expect(r.code).To(Equal(0), r.stderr)
	})

	cork := func(args ...string) result { return runCork(board, "", args...) }
	status := func(r result) *models.RolloutStatus {
		GinkgoHelper()
		Expect(r.code).To(Equal(0), "stderr %q", r.stderr)
		var s models.RolloutStatus
		parseLines(r, &s)
		return &s
	}

	It("shows a rollout under way, as JSON and as a table", func() {
		Expect(cork("update", "hello", "--definition", fixture("hello-v2-definition.json"), "--id", "v2").code).To(Equal(0))
		s := status(cork("rollout", "status", "hello"))
		Expect(s.GetState()).To(Equal(models.RolloutStatus_PROGRESSING))
		Expect(s.GetActiveDefinitionId()).To(Equal("v2"))
		Expect(s.GetInstances()).To(BeEquivalentTo(4))

		table := cork("rollout", "status", "hello", "-o", "table").lines()
		Expect(table).To(HaveLen(2))
		Expect(strings.Fields(table[0])[:4]).To(Equal([]string{"PROCESS_GUID", "STATE", "ACTIVE", "HEALTHY"}))
		Expect(strings.Fields(table[1])[:5]).To(Equal([]string{"hello", "PROGRESSING", "v2", s.GetHealthyDefinitionId(), "0/4"}))
	})

	It("sets the update strategy with cork update, keeping the fields not given, and refuses a bad one", func() {
		r := cork("update", "hello", "--max-surge", "50%", "--auto-revert", "--progress-deadline", "90s")
		Expect(r.code).To(Equal(0), r.stderr)
		var lrp models.DesiredLRP
		parseLines(r, &lrp)
		want := &models.UpdateStrategy{MaxSurge: "50%", MaxUnavailable: "0", AutoRevert: true, ProgressDeadlineMs: 90_000}
		Expect(proto.Equal(lrp.GetUpdateStrategy(), want)).To(BeTrue(),
			"max_unavailable kept from the desired spec; got %v", lrp.GetUpdateStrategy())

		r = cork("update", "hello", "--max-unavailable", "150%")
		Expect(r.code).To(Equal(2))
		Expect(r.stderr).To(ContainSubstring("max_unavailable"))
		r = cork("get", "hello")
		parseLines(r, &lrp)
		Expect(lrp.GetUpdateStrategy().GetMaxUnavailable()).To(Equal("0"), "nothing changed")
	})

	It("rolls back with --to, aborts to the healthy definition, and says why it cannot", func() {
		v1 := status(cork("rollout", "status", "hello")).GetActiveDefinitionId()
		cork("update", "hello", "--definition", fixture("hello-v2-definition.json"), "--id", "v2")

		s := status(cork("rollout", "abort", "hello"))
		Expect(s.GetActiveDefinitionId()).To(Equal(v1))
		Expect(s.GetReason()).To(Equal("rolling back from v2 to " + v1))

		r := cork("rollout", "abort", "hello")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(HavePrefix("cork: InvalidStateTransition: "))

		s = status(cork("rollback", "hello", "--to", "v2"))
		Expect(s.GetActiveDefinitionId()).To(Equal("v2"))
		s = status(cork("rollout", "rollback", "hello"))
		Expect(s.GetActiveDefinitionId()).To(Equal(v1), "without --to: the healthy definition while a rollout is under way")

		r = cork("rollback", "hello", "--to", "nope")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(HavePrefix("cork: ResourceNotFound: "))
	})

	// write stores the rollout's record as convergence would, changed by
	// change, while v2 is active.
	write := func(change func(*db.RolloutWrite)) {
		GinkgoHelper()
		ctx := context.Background()
		snapshot, err := store.ConvergenceSnapshot(ctx, []string{"hello"})
		Expect(err).NotTo(HaveOccurred())
		Expect(snapshot.Rollouts).To(HaveLen(1))
		record := snapshot.Rollouts[0]
		w := db.RolloutWrite{ProcessGuid: "hello", ExpectModificationIndex: record.ModificationIndex, ExpectActiveDefinitionID: "v2", Record: record}
		change(&w)
		result, err := store.ApplyConvergence(ctx, &db.ConvergenceWrites{Rollouts: []db.RolloutWrite{w}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Applied).To(Equal(1))
	}
	// finish ends the rollout in state, for reason.
	finish := func(state models.RolloutStatus_State, reason string) {
		GinkgoHelper()
		write(func(w *db.RolloutWrite) {
			w.Record.State, w.Record.Reason, w.Record.FinishedAt = state, reason, w.Record.StartedAt+1
		})
	}
	// revert has auto_revert take the LRP back from v2 to v1, moving or
	// (finished) done.
	revert := func(v1 string, finished bool) {
		GinkgoHelper()
		write(func(w *db.RolloutWrite) {
			w.Record.State, w.Record.FailedDefinitionID, w.Record.DefinitionID = models.RolloutStatus_REVERTED, "v2", v1
			w.Record.Reason = "v2 failed, no index completed within 10m0s: 0 of 4 run v2; reverting to " + v1
			w.SetActiveDefinitionID = v1
			if finished {
				w.ExpectActiveDefinitionID = v1
				w.SetActiveDefinitionID = ""
				w.Record.Reason = "v2 failed; every index is back on " + v1
				w.Record.FinishedAt = w.Record.StartedAt + 1
			}
		})
	}

	It("watches a rollout, printing each change, and exits 0 once it completes", func() {
		cork("update", "hello", "--definition", fixture("hello-v2-definition.json"), "--id", "v2")
		session := startCork(board, "rollout", "status", "hello", "--watch")
		Eventually(func() int { return len(outputLines(session)) }, 5*time.Second).Should(Equal(1))
		Consistently(session, "300ms").ShouldNot(gexec.Exit(), "the rollout goes on")

		finish(models.RolloutStatus_COMPLETE, "every index runs v2")
		Eventually(session, 5*time.Second).Should(gexec.Exit(0))
		lines := outputLines(session)
		Expect(lines).To(HaveLen(2))
		Expect(lines[0]).To(ContainSubstring(`"state":"PROGRESSING"`))
		Expect(lines[1]).To(ContainSubstring(`"state":"COMPLETE"`))
	})

	It("watches until the rollout is over: at once when there is none, exit 3 when it failed", func() {
		r := cork("rollout", "status", "hello", "--watch")
		Expect(status(r).GetState()).To(Equal(models.RolloutStatus_NONE))

		cork("update", "hello", "--definition", fixture("hello-v2-definition.json"), "--id", "v2")
		finish(models.RolloutStatus_FAILED, "no index completed within 10m0s: 0 of 4 run v2")

		r = cork("rollout", "status", "hello", "--watch")
		Expect(r.code).To(Equal(3))
		Expect(r.stderr).To(Equal("cork: rollout failed: no index completed within 10m0s: 0 of 4 run v2\n"))
		Expect(r.lines()).To(HaveLen(1))
		Expect(r.lines()[0]).To(ContainSubstring(`"state":"FAILED"`))
	})

	It("exits 0 for the status of a failed rollout without --watch: the state is in the output", func() {
		cork("update", "hello", "--definition", fixture("hello-v2-definition.json"), "--id", "v2")
		finish(models.RolloutStatus_FAILED, "no index completed within 10m0s: 0 of 4 run v2")
		Expect(status(cork("rollout", "status", "hello")).GetState()).To(Equal(models.RolloutStatus_FAILED))
	})

	It("follows an auto-revert until every index is back, then exits 4: the requested definition does not run", func() {
		v1 := status(cork("rollout", "status", "hello")).GetActiveDefinitionId()
		cork("update", "hello", "--definition", fixture("hello-v2-definition.json"), "--id", "v2")
		revert(v1, false)

		session := startCork(board, "rollout", "status", "hello", "--watch")
		Eventually(func() int { return len(outputLines(session)) }, 5*time.Second).Should(Equal(1))
		Consistently(session, "300ms").ShouldNot(gexec.Exit(), "the instances are still moving back")

		revert(v1, true)
		Eventually(session, 5*time.Second).Should(gexec.Exit(4))
		Expect(string(session.Err.Contents())).To(Equal("cork: rollout reverted: v2 failed; every index is back on " + v1 + "\n"))
		lines := outputLines(session)
		Expect(lines).To(HaveLen(2))
		Expect(lines[1]).To(ContainSubstring(`"state":"REVERTED"`))

		r := cork("rollout", "status", "hello", "--watch")
		Expect(r.code).To(Equal(4), "a finished revert ends a new watch at once")
		Expect(r.lines()).To(HaveLen(1))
	})

	It("prints the table header once while it watches", func() {
		cork("update", "hello", "--definition", fixture("hello-v2-definition.json"), "--id", "v2")
		session := startCork(board, "rollout", "status", "hello", "--watch", "-o", "table")
		Eventually(func() int { return len(outputLines(session)) }, 5*time.Second).Should(Equal(2))
		Consistently(session, "300ms").ShouldNot(gexec.Exit())

		finish(models.RolloutStatus_COMPLETE, "every index runs v2")
		Eventually(session, 5*time.Second).Should(gexec.Exit(0))
		lines := outputLines(session)
		Expect(lines).To(HaveLen(3), "one header, a row per change")
		Expect(lines[0]).To(HavePrefix("PROCESS_GUID"))
		Expect(strings.Fields(lines[1])[1]).To(Equal("PROGRESSING"))
		Expect(strings.Fields(lines[2])[1]).To(Equal("COMPLETE"))
		Expect(strings.Index(lines[2], "COMPLETE")).To(Equal(strings.Index(lines[0], "STATE")), "aligned under the header")
		Expect(strings.Index(lines[2], "max_surge=")).To(Equal(strings.Index(lines[0], "STRATEGY")))
	})

	It("shows the LRP's effective strategy in the table: defaults filled in, percents with their count", func() {
		Expect(cork("update", "hello", "--max-surge", "50%").code).To(Equal(0))
		table := cork("rollout", "status", "hello", "-o", "table").lines()
		Expect(table).To(HaveLen(2))
		headers := strings.Fields(table[0])
		Expect(headers).To(HaveLen(10))
		Expect(headers[8:]).To(Equal([]string{"STRATEGY", "REASON"}))
		Expect(len(strings.Fields(table[1]))).To(BeNumerically(">=", 10))
		Expect(strings.Fields(table[1])[8]).To(Equal("max_surge=50%(2),max_unavailable=0,min_ready=0s,progress_deadline=10m,auto_revert=no,history_limit=10"))

		var lrp models.DesiredLRP
		parseLines(cork("get", "hello"), &lrp)
		Expect(lrp.GetUpdateStrategy().GetProgressDeadlineMs()).To(BeZero(), "JSON shows the strategy as stored")
		Expect(lrp.GetUpdateStrategy().GetHistoryLimit()).To(BeZero())
	})
})
