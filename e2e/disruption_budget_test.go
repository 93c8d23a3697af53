package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/models"
)

// The disruption budget (docs/disruption-budget.md) with real reps: one
// LRP's rollout, two drains and its autoscaler's scale-down at once never
// take more of its indices down than its budget allows; a drain that a
// rollout's new instance, still starting, holds by spending the budget
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

	It("keeps 6 instances over 3 cells with budget 1 at most one index down through a rollout, two drains and an autoscaler scale-down to 5 issued at once", func() {
		const before, after, budget = 6, 5, 1
		// window is the LRP's scale_down_stabilization_ms, short for the
		// test: the autoscaler goes down this long after the occupancy
		// does, while the rollout and the drains are under way.
		const window = 100 * time.Millisecond
		// minReady keeps each of the rollout's new instances from counting
		// as done for this long, so that the rollout is still under way
		// when the autoscaler decides (a deadline, not a speed: the
		// autoscaler's decision comes well within one minReady).
		const minReady = 2 * time.Second
		b := startBoard(nil)
		b.cork("set-domain", "cork")
		z1 := startRep(b, "cell-z1", "z1", reps)
		z2 := startRep(b, "cell-z2", "z2", reps)
		startRep(b, "cell-z3", "z3", reps)

		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.Instances = after
		// The strategy alone would take two indices down at once: the
		// budget gives it one.
		lrp.UpdateStrategy = &models.UpdateStrategy{MaxSurge: "1", MaxUnavailable: "2", MinReadyMs: minReady.Milliseconds()}
		lrp.DisruptionBudget = &models.DisruptionBudget{MaxUnavailable: fmt.Sprint(budget)}
		// The autoscaler owns the count: min 5, and with ready_target 0.5
		// three occupied instances want ceil(3 / (1 − 0.5)) = 6.
		lrp.Autoscaling = &models.Autoscaling{
			Enabled: true, Min: after, Max: 8,
			Policy: &models.AutoscalingPolicy{
				Type: models.RoomOccupancyPolicy,
				Parameters: &models.AutoscalingPolicyParameters{
					RoomOccupancy: &models.RoomOccupancyParameters{ReadyTarget: 0.5},
				},
			},
			ScaleDownStabilizationMs: window.Milliseconds(),
		}
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		steady(b, guid, after, "cell-z1", "cell-z2", "cell-z3")

		By("3 of them occupied: the autoscaler scales up to 6")
		var occupied []*models.ActualLRP
		for i := range int32(3) {
			occupied = append(occupied, occupyIndex(b, guid, i))
		}
		rows := steady(b, guid, before, "cell-z1", "cell-z2", "cell-z3")
		Expect(desiredInstances(b, guid)).To(BeEquivalentTo(before))
		v1ID := rows[0].GetDefinitionId()
		expectVersion(rows, v1ID, "v1")
		Expect(zonesOf(rows)).To(HaveLen(3), "every cell holds some of it: %s", describe(rows))
		AddReportEntry("before", fmt.Sprintf("%v", zonesOf(rows)))

		r := startRouter(b, guid)
		Eventually(r.routable).Should(Equal(before), "the router sees every instance before the changes")
		sampler := watchWantedIndices(b, guid, after)
		counts := sampleCounts(b, guid)

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
		// Nothing sets the count: the instances say they are ready, and
		// the autoscaler decides 5 (ceil(0 / 0.5) = 0, clamped to min 5)
		// once the window has passed.
		issue("the instances' release of their occupancy", func() error {
			for _, row := range occupied {
				if code := post(row, "/ready"); code != http.StatusNoContent {
					return fmt.Errorf("POST /ready to %s/%d: %d", guid, row.GetIndex(), code)
				}
			}
			return nil
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

		By("the autoscaler made the scale-down, while the rollout was under way")
		Expect(desiredInstances(b, guid)).To(BeEquivalentTo(after))
		ops, _ := autoscaleOps(b, guid)
		// Occupied 0, 1 or 2 all want the minimum, 5: which of them the
		// autoscaler saw depends on when the instances' reports of their
		// released occupancy reached it.
		Expect(ops).To(ContainElement(MatchRegexp(`^FINISHED history: occupied [0-2], ready_target 0\.5: .*wanted 5; instances 6 → 5`)),
			"an AUTOSCALE operation took the count from 6 to 5 once the occupancy was released")
		samples := counts.stop()
		down := slices.IndexFunc(samples, func(smp countSample) bool { return smp.instances == after })
		Expect(down).To(BeNumerically(">", 0), "the count was seen at 6, then at 5")
		for _, smp := range samples[:down] {
			Expect(smp.instances).To(BeEquivalentTo(before), "6 until the scale-down, at %s", smp.at.Format(time.StampMilli))
		}
		scaledDown := samples[down].at
		Expect(scaledDown.UnixNano()).To(BeNumerically("<", status.GetFinishedAt()), "the scale-down came before the rollout completed")

		Eventually(r.sent).Should(BeNumerically(">", 100))
		stats := r.stop()
		looks, fewest, worst := sampler.stop()
		AddReportEntry("changes issued to 5 on v2 on cell-z3, both drained reps gone", took.Round(time.Millisecond).String())
		AddReportEntry("autoscaler at 5 after / rollout COMPLETE after", fmt.Sprintf("%s / %s",
			scaledDown.Sub(start).Round(time.Millisecond), time.Unix(0, status.GetFinishedAt()).Sub(start).Round(time.Millisecond)))
		AddReportEntry("AUTOSCALE operations (newest first)", strings.Join(ops, "\n"))
		AddReportEntry("router", fmt.Sprintf("%d requests, %d failed, fewest routable indices %d, answers by version %v, %d relists",
			stats.Requests, len(stats.Failures), stats.Fewest, stats.Versions, stats.Relists))
		AddReportEntry("sampler", fmt.Sprintf("%d looks, fewest of indices 0-%d serving %d", looks, after-1, fewest))

		Expect(stats.Requests).To(BeNumerically(">", 50), "the router sent enough requests to mean something")
		Expect(stats.Failures).To(BeEmpty(), "requests that failed")
		Expect(stats.Fewest).To(BeNumerically(">=", after-budget), "fewest routable indices the router saw at one look, at %s", stats.Worst)
		Expect(looks).To(BeNumerically(">", 10), "the sampler looked often enough to mean something")
		Expect(fewest).To(BeNumerically(">=", after-budget), "fewest of the wanted indices serving at one look: %s", worst)
	})

	It("holds a drain while a rollout's new instance, still starting, spends the budget, names the LRP budget_exhausted, and goes ahead past its deadline", func() {
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

		By("a rollout to a definition slow to become healthy stops one index, whose new instance is still starting: the budget is spent")
		// The new definition's health check fails throughout the spec and
		// its start timeout is far off: its instance is starting, not
		// crashed, and the rollout stays PROGRESSING, as when an operator
		// drains a cell during a rollout of a slow-starting version.
		slow := definitionFixture("hello-unhealthy-definition.json")
		slow.StartTimeoutMs = (10 * time.Minute).Milliseconds()
		updated, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{Definition: slow})
		Expect(err).NotTo(HaveOccurred())
		v2ID := updated.GetActiveDefinitionId()
		Expect(v2ID).NotTo(BeElementOf(v1ID, ""))
		Eventually(func() error {
			var starting []*models.ActualLRP
			for _, row := range b.lrps(guid) {
				if row.GetDefinitionId() == v2ID && row.GetCellId() != "" && row.GetState() != models.ActualLRP_RUNNING {
					starting = append(starting, row)
				}
			}
			if len(starting) != 1 || len(servingIndices(b, guid, v1ID)) != instances-1 {
				return fmt.Errorf("want one instance of the new definition starting and %d indices serving v1, have %s", instances-1, describe(b.lrps(guid)))
			}
			return nil
		}).Should(Succeed())
		expectProgressing := func() {
			GinkgoHelper()
			s, err := b.client().RolloutStatus(ctx, guid)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.GetState()).To(Equal(models.RolloutStatus_PROGRESSING), "the rollout goes on: %s", s.GetReason())
		}
		expectProgressing()

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

		// What cell-z1 handed over went on the definition it ran, not onto
		// the one still starting, which would have taken it down too.
		serving := servingIndices(b, guid, v1ID)
		Expect(serving).To(HaveLen(instances-1), "the indices the rollout did not take down serve on v1: %s", describe(b.lrps(guid)))
		expectProgressing()
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

		By("aborting the rollout brings the index its new instance held down back on v1, on the remaining cell")
		_, err = b.client().AbortRollout(ctx, guid, false)
		Expect(err).NotTo(HaveOccurred())
		rows = steady(b, guid, instances, "cell-z2")
		expectVersion(rows, v1ID, "v1")
	})
})

// watchWantedIndices watches guid's indices below wanted, served by an
// instance of any presence.
func watchWantedIndices(b *board, guid string, wanted int32) *servingWatch {
	return watchServing(b, guid, func(row *models.ActualLRP) bool { return row.GetIndex() < wanted })
}

// desiredInstances is guid's DesiredLRP's instances.
func desiredInstances(b *board, guid string) int32 {
	GinkgoHelper()
	lrp, err := b.client().DesiredLRPByProcessGuid(context.Background(), guid)
	Expect(err).NotTo(HaveOccurred())
	return lrp.GetInstances()
}
