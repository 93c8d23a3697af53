package e2e_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// The disruption budget (docs/disruption-budget.md) with real reps: one
// LRP's rollout, two drains and a scale-down at once never take more of
// its indices down than its budget allows, and a drain the budget holds
// says so and goes ahead at its deadline.
var _ = Describe("disruption budget", func() {
	const guid = "hello"
	ctx := context.Background()
	// The reps' own evacuation timeout is far beyond what the specs wait:
	// a drain that ends ends by its hand-overs, not by the rep stopping
	// what is left.
	reps := map[string]any{"evacuation_timeout": "10m"}
	// changeLimit bounds how long the changes may take to settle. It is a
	// deadline against hanging, not a speed requirement.
	const changeLimit = 3 * time.Minute

	It("keeps 6 instances over 3 cells with budget 1 at most one index down through a rollout, two drains and a scale-down to 5 issued at once", func() {
		const before, after, budget = 6, 5, 1
		b := startBoard(nil)
		b.cork("set-domain", "cork")
		z1 := startRep(b, "cell-z1", "z1", reps)
		z2 := startRep(b, "cell-z2", "z2", reps)
		startRep(b, "cell-z3", "z3", reps)

		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.Instances = before
		// The strategy alone would take two indices down at once: the
		// budget gives it one.
		lrp.UpdateStrategy = &models.UpdateStrategy{MaxSurge: "1", MaxUnavailable: "2"}
		lrp.DisruptionBudget = &models.DisruptionBudget{MaxUnavailable: fmt.Sprint(budget)}
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		rows := steady(b, guid, before, "cell-z1", "cell-z2", "cell-z3")
		v1ID := rows[0].GetDefinitionId()
		expectVersion(rows, v1ID, "v1")
		Expect(zonesOf(rows)).To(HaveLen(3), "every cell holds some of it: %s", describe(rows))
		AddReportEntry("before", fmt.Sprintf("%v", zonesOf(rows)))

		r := startRouter(b, guid)
		Eventually(r.routable).Should(Equal(before), "the router sees every instance before the changes")
		sampler := watchWantedIndices(b, guid, after)

		start := time.Now()
		var issued sync.WaitGroup
		issue := func(what string, change func() error) {
			issued.Add(1)
			go func() {
				defer GinkgoRecover()
				defer issued.Done()
				Expect(change()).To(Succeed(), what)
			}()
		}
		var v2ID string
		issue("the rollout to v2", func() error {
			updated, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{
				Definition: definitionFixture("hello-local-v2-definition.json"),
			})
			v2ID = updated.GetActiveDefinitionId()
			return err
		})
		issue("the drain of cell-z1", func() error { return b.client().DrainCell(ctx, "cell-z1") })
		issue("the drain of cell-z2", func() error { return b.client().DrainCell(ctx, "cell-z2") })
		issue("the scale-down to 5", func() error {
			five := int32(after)
			_, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{Instances: &five})
			return err
		})
		issued.Wait()
		Expect(v2ID).NotTo(BeElementOf(v1ID, ""))

		Eventually(z1.session).WithTimeout(changeLimit).Should(gexec.Exit(0), "cell-z1's rep evacuated everything and exited")
		Eventually(z2.session).WithTimeout(changeLimit).Should(gexec.Exit(0), "cell-z2's rep evacuated everything and exited")
		status := waitForRollout(b, guid, changeLimit, complete())
		Expect(status.GetActiveDefinitionId()).To(Equal(v2ID))
		rows = steady(b, guid, after, "cell-z3")
		took := time.Since(start)
		expectVersion(rows, v2ID, "v2")
		Expect(z1.session.Out).NotTo(gbytes.Say(`rep\.agent\.evacuate\.timed-out-stopping-the-rest`))
		Expect(z2.session.Out).NotTo(gbytes.Say(`rep\.agent\.evacuate\.timed-out-stopping-the-rest`))

		Eventually(r.sent).Should(BeNumerically(">", 100))
		stats := r.stop()
		looks, fewest, worst := sampler.stop()
		AddReportEntry("changes issued to 5 on v2 on cell-z3, both drained reps gone", took.Round(time.Millisecond).String())
		AddReportEntry("router", fmt.Sprintf("%d requests, %d failed, fewest routable indices %d, answers by version %v, %d relists",
			stats.Requests, len(stats.Failures), stats.Fewest, stats.Versions, stats.Relists))
		AddReportEntry("sampler", fmt.Sprintf("%d looks, fewest of indices 0-%d serving %d", looks, after-1, fewest))

		Expect(stats.Requests).To(BeNumerically(">", 50), "the router sent enough requests to mean something")
		Expect(stats.Failures).To(BeEmpty(), "requests that failed")
		Expect(stats.Fewest).To(BeNumerically(">=", after-budget), "fewest routable indices the router saw at one look, at %s", stats.Worst)
		Expect(looks).To(BeNumerically(">", 10), "the sampler looked often enough to mean something")
		Expect(fewest).To(BeNumerically(">=", after-budget), "fewest of the wanted indices serving at one look: %s", worst)
	})

	It("holds a drain while a failed rollout spends the budget, names the LRP budget_exhausted, and goes ahead past its deadline", func() {
		const instances = 4
		b := startBoard(nil)
		b.cork("set-domain", "cork")
		z1 := startRep(b, "cell-z1", "z1", reps)
		startRep(b, "cell-z2", "z2", reps)

		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.Instances = instances
		// Stop before start: the rollout takes one index down first.
		lrp.UpdateStrategy = &models.UpdateStrategy{MaxSurge: "0", MaxUnavailable: "1"}
		lrp.DisruptionBudget = &models.DisruptionBudget{MaxUnavailable: "1"}
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		rows := steady(b, guid, instances, "cell-z1", "cell-z2")
		v1ID := rows[0].GetDefinitionId()
		Expect(zonesOf(rows)).To(HaveKey("cell-z1"), "cell-z1 holds some of it: %s", describe(rows))

		By("a rollout to a definition that never gets healthy fails at its deadline, holding one index down: the budget is spent")
		// Failed, the rollout starts nothing more, so what the drain
		// hands over is replaced on v1. (A rollout still PROGRESSING would
		// move each evacuated index onto the broken definition, and the
		// drain could not end before the rep's evacuation timeout.)
		_, err = b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{
			Definition:     definitionFixture("hello-unhealthy-definition.json"),
			UpdateStrategy: &models.UpdateStrategy{MaxSurge: "0", MaxUnavailable: "1", ProgressDeadlineMs: 5000},
		})
		Expect(err).NotTo(HaveOccurred())
		waitForRollout(b, guid, changeLimit, rolloutCondition{"FAILED", func(s *models.RolloutStatus) bool {
			return s.GetState() == models.RolloutStatus_FAILED
		}})
		Expect(servingIndices(b, guid, v1ID)).To(HaveLen(instances - 1))

		By("a drain without a deadline waits, and says for what")
		drained := time.Now()
		b.cork("cell", "drain", "cell-z1")
		var held *models.DrainStatus
		Eventually(func() ([]*models.DrainBlockedLRP, error) {
			var err error
			held, err = b.client().DrainStatus(ctx, "cell-z1")
			return held.GetBlocked(), err
		}).Should(ContainElement(And(
			HaveField("ProcessGuid", guid),
			HaveField("BlockedBy.Reason", models.BlockedBudgetExhausted),
		)))
		Expect(held.GetWaiting()).To(BeNumerically(">", 0))
		blocked := held.GetBlocked()[0]
		AddReportEntry("blocked_by", fmt.Sprintf("%s: %s", blocked.GetBlockedBy().GetReason(), blocked.GetBlockedBy().GetDetail()))
		text := b.cork("cell", "drain-status", "cell-z1", "-o", "table")
		AddReportEntry("cork cell drain-status cell-z1 (held)", text)
		Expect(text).To(ContainSubstring("no deadline"))
		Expect(text).To(MatchRegexp(`(?m)^hello\s+\d+\s+budget_exhausted\s`))

		// Holding is what is checked here, not a speed: for a few seconds
		// nothing of cell-z1 is handed over and its rep runs on.
		Consistently(func() (int32, error) {
			s, err := b.client().DrainStatus(ctx, "cell-z1")
			return s.GetEvacuating(), err
		}).WithTimeout(3 * time.Second).Should(BeZero())
		Expect(z1.session.ExitCode()).To(Equal(-1), "cell-z1's rep still runs")

		By("a deadline of 5s: the drain goes ahead past it and completes")
		const deadline = 5 * time.Second
		set := time.Now()
		b.cork("cell", "drain", "cell-z1", "--deadline", deadline.String())
		Eventually(z1.session).WithTimeout(changeLimit).Should(gexec.Exit(0), "cell-z1's rep handed everything over and exited")
		took := time.Since(set)
		Expect(z1.session.Out).NotTo(gbytes.Say(`rep\.agent\.evacuate\.timed-out-stopping-the-rest`))

		serving := servingIndices(b, guid, v1ID)
		Expect(serving).To(HaveLen(instances-1), "the indices the rollout did not take down serve on v1: %s", describe(b.lrps(guid)))
		for _, row := range b.lrps(guid) {
			Expect(row.GetCellId()).NotTo(Equal("cell-z1"), "nothing is left on the drained cell: %s", describe(b.lrps(guid)))
		}
		after, err := b.client().DrainStatus(ctx, "cell-z1")
		Expect(err).NotTo(HaveOccurred())
		cell := after.GetCell()
		Expect(cell.GetDrainDeadline()).To(BeNumerically(">=", set.Add(deadline).UnixNano()))
		Expect(cell.GetDrainOverdueAt()).To(BeNumerically(">=", cell.GetDrainDeadline()), "the cell records that its drain went ahead past the deadline")
		Expect(after.GetWaiting()).To(BeZero())
		Expect(after.GetEvacuating()).To(BeZero())
		text = b.cork("cell", "drain-status", "cell-z1", "-o", "table")
		AddReportEntry("cork cell drain-status cell-z1 (done)", text)
		Expect(text).To(ContainSubstring("Overdue:"))

		AddReportEntry("drain held before the deadline was set", set.Sub(drained).Round(time.Millisecond).String())
		AddReportEntry("deadline set to rep exited", took.Round(time.Millisecond).String())
		AddReportEntry("deadline to first overdue hand-over", time.Duration(cell.GetDrainOverdueAt()-cell.GetDrainDeadline()).Round(time.Millisecond).String())

		By("aborting the rollout brings the index it left down back, on the remaining cell")
		_, err = b.client().AbortRollout(ctx, guid, false)
		Expect(err).NotTo(HaveOccurred())
		rows = steady(b, guid, instances, "cell-z2")
		expectVersion(rows, v1ID, "v1")
	})
})

// wantedWatch counts, at each look, the indices below wanted that have a
// RUNNING, routable instance (any presence) answering as itself.
type wantedWatch struct {
	*watcher
	mu     sync.Mutex
	looks  int
	fewest int
	worst  string
}

func watchWantedIndices(b *board, guid string, wanted int32) *wantedWatch {
	w := &wantedWatch{fewest: -1}
	api := b.client()
	w.watcher = startWatcher(func() {
		rows, err := api.ActualLRPs(context.Background(), client.ActualLRPFilter{ProcessGuid: guid})
		if err != nil {
			return // not a look: the board did not answer
		}
		serving := map[int32]bool{}
		for _, row := range rows {
			if row.GetIndex() >= wanted || serving[row.GetIndex()] || row.GetState() != models.ActualLRP_RUNNING || !row.GetRoutable() {
				continue
			}
			if answers(row) {
				serving[row.GetIndex()] = true
			}
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.looks++
		if w.fewest == -1 || len(serving) < w.fewest {
			w.fewest = len(serving)
			w.worst = time.Now().Format(time.StampMilli) + " " + describe(rows)
		}
	})
	return w
}

func (w *wantedWatch) stop() (looks, fewest int, worst string) {
	w.halt()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.looks, w.fewest, w.worst
}
