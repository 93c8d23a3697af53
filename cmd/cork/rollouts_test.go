package main_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/creack/pty"
	"github.com/onsi/gomega/gbytes"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("cork rollout", func() {
	var (
		board string
		store db.DB
	)

	BeforeEach(func() {
		board, store, _ = startBoardWithEventLog()
		r := runCork(board, "", "desire", fixture("hello-local.json"))
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
		Expect(cork("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2").code).To(Equal(0))
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
		cork("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2")

		s := status(cork("rollout", "abort", "hello"))
		Expect(s.GetActiveDefinitionId()).To(Equal(v1))
		Expect(s.GetReason()).To(Equal("rolling back from v2 to " + v1))

		r := cork("rollout", "abort", "hello")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(HavePrefix("cork: InvalidStateTransition: "))

		r = cork("rollback", "hello", "--to", "v2")
		s = status(r)
		Expect(s.GetActiveDefinitionId()).To(Equal("v2"))
		Expect(r.stderr).To(HavePrefix("cork: warning: v2 never became healthy"), "named, and not known to run: allowed with a warning")
		s = status(cork("rollout", "rollback", "hello"))
		Expect(s.GetActiveDefinitionId()).To(Equal(v1), "without --to: the healthy definition while a rollout is under way")

		r = cork("rollback", "hello", "--to", "nope")
		Expect(r.code).To(Equal(1))
		Expect(r.stderr).To(HavePrefix("cork: ResourceNotFound: "))
	})

	It("rolls back and aborts fast with --fast: the status says fast, and so do the operation's parameters", func() {
		v1 := status(cork("rollout", "status", "hello")).GetActiveDefinitionId()
		cork("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2")
		Expect(status(cork("rollout", "status", "hello")).GetFast()).To(BeFalse(), "an update is not fast")

		s := status(cork("rollback", "hello", "--fast"))
		Expect(s.GetActiveDefinitionId()).To(Equal(v1))
		Expect(s.GetFast()).To(BeTrue())
		Expect(s.GetStage()).To(BeNil(), "never staged")
		Expect(status(cork("rollout", "status", "hello")).GetFast()).To(BeTrue(), "the record keeps it")
		var op models.Operation
		parseLines(cork("operation", s.GetOperationId()), &op)
		Expect(op.GetKind()).To(Equal(models.Operation_ROLLBACK))
		var request models.RollbackRequest
		Expect(op.GetParameters().UnmarshalTo(&request)).To(Succeed())
		Expect(request.GetFast()).To(BeTrue())
		Expect(op.GetHistory()[0].GetMessage()).To(HaveSuffix("(fast)"))

		table := cork("rollout", "status", "hello", "-o", "table").lines()
		Expect(table).To(HaveLen(2))
		Expect(strings.Fields(table[0])[8]).To(Equal("FAST"))
		Expect(table[1][strings.Index(table[0], "FAST"):]).To(HavePrefix("yes "))

		cork("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v3")
		s = status(cork("rollout", "abort", "hello", "--fast"))
		Expect(s.GetActiveDefinitionId()).To(Equal(v1))
		Expect(s.GetFast()).To(BeTrue())
		parseLines(cork("operation", s.GetOperationId()), &op)
		Expect(op.GetKind()).To(Equal(models.Operation_ABORT))
		var abort models.AbortRolloutRequest
		Expect(op.GetParameters().UnmarshalTo(&abort)).To(Succeed())
		Expect(abort.GetFast()).To(BeTrue())

		s = status(cork("rollback", "hello", "--to", "v3"))
		Expect(s.GetFast()).To(BeFalse(), "without --fast, not fast")
		table = cork("rollout", "status", "hello", "-o", "table").lines()
		Expect(table[1][strings.Index(table[0], "FAST"):]).To(HavePrefix("no "))
	})

	// write stores the rollout's record as convergence would, changed by
	// change, while v2 is active.
	write := func(change func(*convergence.RolloutWrite)) {
		GinkgoHelper()
		ctx := context.Background()
		snapshot, err := store.ConvergenceSnapshot(ctx, []string{"hello"})
		Expect(err).NotTo(HaveOccurred())
		Expect(snapshot.Rollouts).To(HaveLen(1))
		record := snapshot.Rollouts[0]
		w := convergence.RolloutWrite{ProcessGuid: "hello", ExpectModificationIndex: record.ModificationIndex, ExpectActiveDefinitionID: "v2", Record: record}
		change(&w)
		result, err := store.ApplyConvergence(ctx, &convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{w}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Applied).To(Equal(1))
	}
	// finish ends the rollout in state, for reason.
	finish := func(state models.RolloutStatus_State, reason string) {
		GinkgoHelper()
		write(func(w *convergence.RolloutWrite) {
			w.Record.State, w.Record.Reason, w.Record.FinishedAt = state, reason, w.Record.StartedAt+1
		})
	}
	// revert has auto_revert take the LRP back from v2 to v1, moving or
	// (finished) done.
	revert := func(v1 string, finished bool) {
		GinkgoHelper()
		write(func(w *convergence.RolloutWrite) {
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
		cork("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2")
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

		cork("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2")
		finish(models.RolloutStatus_FAILED, "no index completed within 10m0s: 0 of 4 run v2")

		r = cork("rollout", "status", "hello", "--watch")
		Expect(r.code).To(Equal(3))
		Expect(r.stderr).To(Equal("cork: rollout failed: no index completed within 10m0s: 0 of 4 run v2\n"))
		Expect(r.lines()).To(HaveLen(1))
		Expect(r.lines()[0]).To(ContainSubstring(`"state":"FAILED"`))
	})

	It("exits 0 for the status of a failed rollout without --watch: the state is in the output", func() {
		cork("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2")
		finish(models.RolloutStatus_FAILED, "no index completed within 10m0s: 0 of 4 run v2")
		Expect(status(cork("rollout", "status", "hello")).GetState()).To(Equal(models.RolloutStatus_FAILED))
	})

	It("follows an auto-revert until every index is back, then exits 4: the requested definition does not run", func() {
		v1 := status(cork("rollout", "status", "hello")).GetActiveDefinitionId()
		cork("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2")
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
		cork("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2")
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

	It("on a terminal, rewrites one progress line, its clocks moving between events, and leaves it with the outcome", func() {
		cork("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2")
		ptmx, tty, err := pty.Open()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(ptmx.Close)
		Expect(pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 100})).To(Succeed())
		screen := gbytes.NewBuffer()
		go func() {
			defer GinkgoRecover()
			io.Copy(screen, ptmx) // ends with an error once the process is gone
		}()
		cmd := exec.Command(corkPath, "rollout", "status", "hello", "--watch", "-o", "table")
		cmd.Env = append(os.Environ(), "BBS_URL="+board)
		// Not gexec.Start: it would take stdout for its own buffer.
		stderr := gbytes.NewBuffer()
		cmd.Stdout, cmd.Stderr = tty, stderr
		Expect(cmd.Start()).To(Succeed())
		exited := make(chan int, 1)
		go func() {
			cmd.Wait()
			exited <- cmd.ProcessState.ExitCode()
		}()
		DeferCleanup(func() { cmd.Process.Kill(); <-exited })
		Expect(tty.Close()).To(Succeed())

		draws := func() int { return strings.Count(string(screen.Contents()), "\x1b[K") }
		// Drawn at the start and once the event stream is open, then
		// again without an event: the clocks move.
		Eventually(draws, 5*time.Second).Should(BeNumerically(">=", 4))
		first := strings.Split(string(screen.Contents()), "\x1b[K")[0]
		Expect(first).To(MatchRegexp(`^\rhello  PROGRESSING  \[░+\]  0/4 updated  0 in flight  elapsed \d+s  deadline in \d+m\d+s$`))
		Expect(len([]rune(strings.TrimPrefix(first, "\r")))).To(BeNumerically("<=", 99), "one column short of the terminal's 100")
		Expect(string(screen.Contents())).NotTo(ContainSubstring("PROCESS_GUID"), "no table header on a terminal")

		finish(models.RolloutStatus_COMPLETE, "every index runs v2")
		var code int
		Eventually(exited, 5*time.Second).Should(Receive(&code))
		exited <- code // for the cleanup
		Expect(code).To(Equal(0))
		Eventually(screen, 5*time.Second).Should(gbytes.Say(`\rhello  COMPLETE  \[░+\]  0/4 updated  0 in flight  elapsed \d+s\x1b\[K\r\nrollout complete: every index runs v2\r\n$`))
		Expect(string(stderr.Contents())).To(BeEmpty())
	})

	It("shows the LRP's effective strategy in the table: defaults filled in, percents with their count", func() {
		Expect(cork("update", "hello", "--max-surge", "50%").code).To(Equal(0))
		table := cork("rollout", "status", "hello", "-o", "table").lines()
		Expect(table).To(HaveLen(2))
		headers := strings.Fields(table[0])
		Expect(headers).To(HaveLen(12))
		Expect(headers[8:]).To(Equal([]string{"FAST", "STRATEGY", "STAGE", "REASON"}))
		Expect(len(strings.Fields(table[1]))).To(BeNumerically(">=", 12))
		Expect(strings.Fields(table[1])[10]).To(Equal("-"), "no staged phase")
		Expect(strings.Fields(table[1])[9]).To(Equal("max_surge=50%(2),max_unavailable=0,min_ready=0s,progress_deadline=10m,auto_revert=no,history_limit=10"))

		var lrp models.DesiredLRP
		parseLines(cork("get", "hello"), &lrp)
		Expect(lrp.GetUpdateStrategy().GetProgressDeadlineMs()).To(BeZero(), "JSON shows the strategy as stored")
		Expect(lrp.GetUpdateStrategy().GetHistoryLimit()).To(BeZero())
	})

	Describe("staged phases", func() {
		// stagedV2 starts hello's v2 in a staged phase to 25% at 5% every
		// 6 hours: the share stays near 0 while a spec runs.
		stagedV2 := func(extra ...string) result {
			GinkgoHelper()
			args := append([]string{"update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2",
				"--target-percent", "25", "--safe-rate", "5%/6h"}, extra...)
			r := cork(args...)
			Expect(r.code).To(Equal(0), "stderr %q", r.stderr)
			return r
		}
		// lastOperation is the id a write's table ends with.
		lastOperation := func(r result) string {
			GinkgoHelper()
			Expect(r.code).To(Equal(0), "stderr %q", r.stderr)
			lines := r.lines()
			Expect(lines).NotTo(BeEmpty())
			match := operationLine.FindStringSubmatch(lines[len(lines)-1])
			Expect(match).NotTo(BeNil(), "stdout %q", r.stdout)
			return match[1]
		}
		kindOf := func(id string) models.Operation_Kind {
			GinkgoHelper()
			var op models.Operation
			parseLines(cork("operation", id), &op)
			return op.GetKind()
		}

		It("stages an update with --target-percent, --safe-rate and --seed, and shows the phase in the status table", func() {
			stagedV2("--seed", "canary-1")
			stage := status(cork("rollout", "status", "hello")).GetStage()
			Expect(stage.GetTargetPercent()).To(Equal(25.0))
			Expect(proto.Equal(stage.GetSafeRate(), &models.SafeRate{Percent: 5, PerMs: (6 * time.Hour).Milliseconds()})).To(BeTrue(), "rate %v", stage.GetSafeRate())
			Expect(stage.GetSeed()).To(Equal("canary-1"))

			table := cork("rollout", "status", "hello", "-o", "table").lines()
			Expect(table).To(HaveLen(2))
			Expect(table[1][strings.Index(table[0], "STAGE"):]).To(MatchRegexp(
				`^0% → 25% at 5%/6h0m0s; share 0\.0%; allowed \d, on v2 \d; target in (30h0m0s|29h59m\d+s)  rolling from `))
		})

		It("promotes, pauses and resumes, printing the status, and in a table the operation each recorded", func() {
			stagedV2()

			s := status(cork("rollout", "promote", "hello", "--to", "50", "--rate", "10%/1h"))
			Expect(s.GetStage().GetTargetPercent()).To(Equal(50.0))
			Expect(proto.Equal(s.GetStage().GetSafeRate(), &models.SafeRate{Percent: 10, PerMs: time.Hour.Milliseconds()})).To(BeTrue())
			promoted := cork("rollout", "promote", "hello", "--to", "60", "-o", "table")
			Expect(promoted.lines()).To(HaveLen(3), "header, row, operation")
			Expect(promoted.lines()[1]).To(ContainSubstring("→ 60% at once; "))
			Expect(kindOf(lastOperation(promoted))).To(Equal(models.Operation_PROMOTE))

			paused := cork("rollout", "pause", "hello", "-o", "table")
			Expect(paused.lines()).To(HaveLen(3))
			Expect(paused.lines()[1]).To(MatchRegexp(`; paused by cork \(\S+@\S+\) from 127\.0\.0\.1:\d+`))
			Expect(kindOf(lastOperation(paused))).To(Equal(models.Operation_PAUSE))
			r := cork("rollout", "pause", "hello")
			Expect(r.code).To(Equal(1))
			Expect(r.stderr).To(HavePrefix("cork: InvalidStateTransition: "))

			s = status(cork("rollout", "resume", "hello"))
			Expect(s.GetStage().GetPaused()).To(BeFalse())
			resumed := cork("rollout", "resume", "hello", "-o", "table")
			Expect(resumed.code).To(Equal(1), "not paused any more")
		})

		It("says why the board refuses a promote, a pause or a resume of a rollout that is not staged", func() {
			cork("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2")
			for _, args := range [][]string{{"promote", "hello", "--to", "50"}, {"pause", "hello"}, {"resume", "hello"}} {
				r := cork(append([]string{"rollout"}, args...)...)
				Expect(r.code).To(Equal(1), "%v", args)
				Expect(r.stderr).To(HavePrefix("cork: InvalidStateTransition: "), "%v", args)
				Expect(r.stdout).To(BeEmpty())
			}
		})

		It("edits a rollout's limits, printing the status, and in a table the EDIT operation with what changed", func() {
			Expect(cork("update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--id", "v2").code).To(Equal(0))
			s := status(cork("rollout", "edit", "hello", "--max-surge", "100%", "--min-ready", "1500ms", "--progress-deadline", "2m"))
			Expect(s.GetState()).To(Equal(models.RolloutStatus_PROGRESSING))
			var lrp models.DesiredLRP
			parseLines(cork("get", "hello"), &lrp)
			Expect(lrp.GetUpdateStrategy().GetMaxSurge()).To(Equal("100%"))
			Expect(lrp.GetUpdateStrategy().GetMinReadyMs()).To(BeEquivalentTo(1500))
			Expect(lrp.GetUpdateStrategy().GetProgressDeadlineMs()).To(BeEquivalentTo(120_000))

			edited := cork("rollout", "edit", "hello", "--max-unavailable", "1", "-o", "table")
			Expect(edited.lines()).To(HaveLen(3), "header, row, operation")
			Expect(edited.lines()[1]).To(ContainSubstring("max_surge=100%(4),max_unavailable=1,min_ready=1.5s,progress_deadline=2m,"))
			id := lastOperation(edited)
			var op models.Operation
			parseLines(cork("operation", id), &op)
			Expect(op.GetKind()).To(Equal(models.Operation_EDIT))
			Expect(op.GetStatus()).To(Equal(models.Operation_FINISHED))
			Expect(op.GetHistory()[0].GetMessage()).To(Equal("max_unavailable 0 → 1"))

			r := cork("rollout", "edit", "hello", "--target-percent", "50")
			Expect(r.code).To(Equal(1))
			Expect(r.stderr).To(HavePrefix("cork: InvalidStateTransition: target_percent: "), "not staged")
		})

		It("edits a staged phase's target and rate, from the share that stands", func() {
			stagedV2()
			s := status(cork("rollout", "edit", "hello", "--target-percent", "50", "--safe-rate", "10%/1h"))
			Expect(s.GetStage().GetTargetPercent()).To(Equal(50.0))
			Expect(proto.Equal(s.GetStage().GetSafeRate(), &models.SafeRate{Percent: 10, PerMs: time.Hour.Milliseconds()})).To(BeTrue())
			Expect(s.GetStage().GetPriorPercent()).To(BeNumerically("<", 1), "5%% every 6h has grown next to nothing")
		})

		It("ends a watch with exit 5 when the phase holds at its target", func() {
			stagedV2()
			session := startCork(board, "rollout", "status", "hello", "--watch")
			Eventually(func() int { return len(outputLines(session)) }, 5*time.Second).Should(Equal(1))
			Consistently(session, "300ms").ShouldNot(gexec.Exit(), "the phase grows")

			write(func(w *convergence.RolloutWrite) {
				w.Record.State, w.Record.Reason = models.RolloutStatus_HOLDING, "1 of 4 run v2"
			})
			Eventually(session, 5*time.Second).Should(gexec.Exit(5))
			Expect(string(session.Err.Contents())).To(Equal("cork: rollout holding at 25% until promoted: 1 of 4 run v2\n"))
			lines := outputLines(session)
			Expect(lines).To(HaveLen(2))
			Expect(lines[1]).To(ContainSubstring(`"state":"HOLDING"`))

			r := cork("rollout", "status", "hello", "--watch", "-o", "table")
			Expect(r.code).To(Equal(5), "a holding phase ends a new watch at once")
			Expect(strings.Fields(r.lines()[1])[1]).To(Equal("HOLDING"))
			Expect(status(cork("rollout", "status", "hello")).GetState()).To(Equal(models.RolloutStatus_HOLDING), "without --watch: exit 0")
		})

		DescribeTable("usage errors exit 2 naming the flag, and send nothing",
			func(want string, args ...string) {
				r := cork(args...)
				Expect(r.code).To(Equal(2), "stdout %q stderr %q", r.stdout, r.stderr)
				Expect(r.stderr).To(HavePrefix("cork: "))
				Expect(r.stderr).To(ContainSubstring(want))
				Expect(r.stdout).To(BeEmpty())
				Expect(status(cork("rollout", "status", "hello")).GetState()).To(Equal(models.RolloutStatus_NONE), "nothing changed")
			},
			Entry("--target-percent without --definition", "--target-percent stages a new definition; it needs --definition",
				"update", "hello", "--target-percent", "25"),
			Entry("--safe-rate without --target-percent", "--safe-rate belongs to a staged phase; it needs --target-percent",
				"update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--safe-rate", "5%/6h"),
			Entry("--seed without --target-percent", "--seed belongs to a staged phase; it needs --target-percent",
				"update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--seed", "s"),
			Entry("a share of 0", "--target-percent must be above 0 and at most 100, got 0",
				"update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--target-percent", "0"),
			Entry("a share over 100", "--target-percent must be above 0 and at most 100, got 150",
				"update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--target-percent", "150"),
			Entry("a share that is no number", `invalid argument "half" for "--target-percent"`,
				"update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--target-percent", "half"),
			Entry("a bad --safe-rate", `--safe-rate "5/6h": the share must end with '%'`,
				"update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--target-percent", "25", "--safe-rate", "5/6h"),
			Entry("a --safe-rate without a period unit", `--safe-rate "5%/6": the period must be a duration`,
				"update", "hello", "--definition", fixture("hello-local-v2-definition.json"), "--target-percent", "25", "--safe-rate", "5%/6"),
			Entry("a promote without --to", "promote needs --to", "rollout", "promote", "hello"),
			Entry("a promote to 0", "--to must be above 0 and at most 100, got 0", "rollout", "promote", "hello", "--to", "0"),
			Entry("a promote at a bad --rate", `--rate "fast": no '/'`, "rollout", "promote", "hello", "--to", "50", "--rate", "fast"),
			Entry("a pause without a guid", "pause wants 1 argument(s), GUID; got 0", "rollout", "pause"),
			Entry("a resume of two guids", "resume wants 1 argument(s), GUID; got 2", "rollout", "resume", "hello", "other"),
			Entry("an edit of nothing", "edit needs at least one of --max-surge", "rollout", "edit", "hello"),
			Entry("an edit of a surge that is no count", `--max-surge "1.5": want a count like "2" or a percent like "25%"`,
				"rollout", "edit", "hello", "--max-surge", "1.5"),
			Entry("an edit of an unavailability past 100%", `--max-unavailable "101%"`, "rollout", "edit", "hello", "--max-unavailable", "101%"),
			Entry("an edit of a negative min-ready", "--min-ready -1s: want a duration of whole milliseconds",
				"rollout", "edit", "hello", "--min-ready", "-1s"),
			Entry("an edit of a min-ready over an hour", "rollout edit: min_ready_ms: must be at most 3600000 (1h0m0s), got 7200000",
				"rollout", "edit", "hello", "--min-ready", "2h"),
			Entry("an edit of a deadline that is no duration", `invalid argument "soon" for "--progress-deadline"`,
				"rollout", "edit", "hello", "--progress-deadline", "soon"),
			Entry("an edit to a share of 0", "--target-percent must be above 0 and at most 100, got 0",
				"rollout", "edit", "hello", "--target-percent", "0"),
			Entry("an edit of a bad --safe-rate", `--safe-rate "5/6h": the share must end with '%'`,
				"rollout", "edit", "hello", "--safe-rate", "5/6h"),
			Entry("an edit without a guid", "edit wants 1 argument(s), GUID; got 0", "rollout", "edit", "--max-surge", "2"),
		)
	})
})
