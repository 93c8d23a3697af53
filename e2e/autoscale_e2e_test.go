package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

// Autoscaling on occupancy with real processes (DESIGN §7, issue 13):
// hello with autoscaling min 2, max 10, ready_target 0.5 and a 3 s
// scale-down window, on two reps. Instances say they are occupied or ready
// through the app's /occupied and /ready, which their rep forwards to the
// board. The specs run in order on one cluster: 2 instances → 4 occupied
// → 8 instances, their processes never restarted; a rollout during that
// state with a router sending requests all along; back to 2 once the
// occupancy is gone; then a scale-down from 6 to 2 while the highest index
// stays occupied, whose process must keep running.
var _ = Describe("autoscaling hello on occupancy, with real reps", Ordered, func() {
	const (
		guid = "hello"
		// window is the LRP's scale_down_stabilization_ms, short for the
		// test.
		window = 3 * time.Second
		// surge is the update strategy's max_surge, an absolute count.
		surge = 2
		// lag is how long after the DesiredLRP's count went down its extra
		// rows may still be seen (stopping, then removed).
		lag = 2 * time.Second
		// rolloutLimit bounds how long the rollout may take: a deadline
		// against hanging, not a speed requirement.
		rolloutLimit = 2 * time.Minute
	)
	var (
		b    *board
		reps []*runningRep
		both = []string{"cell-z1", "cell-z2"}
		// occupiedPids watches the processes of the instances marked
		// occupied during the scale-up, until the rollout starts.
		occupiedPids *pidWatch
	)
	ctx := context.Background()

	desired := func() *models.DesiredLRP {
		GinkgoHelper()
		lrp, err := b.client().DesiredLRPByProcessGuid(ctx, guid)
		Expect(err).NotTo(HaveOccurred())
		return lrp
	}
	// decision reads the autoscaler's last decision.
	decision := func() (*models.AutoscalerDecision, error) {
		lrp, err := b.client().DesiredLRPByProcessGuid(ctx, guid)
		return lrp.GetAutoscaler().GetLastDecision(), err
	}
	// occupy marks the instances at indices occupied and tracks their
	// processes in watch.
	occupy := func(watch *pidWatch, indices ...int32) []*models.ActualLRP {
		GinkgoHelper()
		var rows []*models.ActualLRP
		for _, i := range indices {
			row := occupyIndex(b, guid, i)
			watch.track(row.GetInstanceGuid(), pidOf(reps, guid, row.GetInstanceGuid()))
			rows = append(rows, row)
		}
		return rows
	}

	BeforeAll(func() {
		b = startBoard(nil)
		b.cork("set-domain", "cork")
		reps = []*runningRep{startRep(b, "cell-z1", "z1"), startRep(b, "cell-z2", "z2")}
	})

	It("runs min 2 instances of an LRP desired with autoscaling", func() {
		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.Instances = 2
		lrp.UpdateStrategy = &models.UpdateStrategy{MaxSurge: fmt.Sprint(surge), MaxUnavailable: "0"}
		lrp.Autoscaling = &models.Autoscaling{
			Enabled: true, Min: 2, Max: 10,
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
		steady(b, guid, 2, both...)
		got := desired()
		Expect(got.GetInstances()).To(BeEquivalentTo(2))
		Expect(got.GetAutoscaling().GetEnabled()).To(BeTrue())
		Consistently(func() int32 { return desired().GetInstances() }).WithTimeout(time.Second).
			WithPolling(200*time.Millisecond).Should(BeEquivalentTo(2), "nothing occupied: min 2")
	})

	It("scales up to 8 as 4 instances become occupied, never restarting an occupied one", func() {
		occupiedPids = watchPids(reps, guid)
		start := time.Now()

		By("2 occupied → ceil(2 / 0.5) = 4")
		occupy(occupiedPids, 0, 1)
		steady(b, guid, 4, both...)

		By("4 occupied → ceil(4 / 0.5) = 8")
		occupy(occupiedPids, 2, 3)
		rows := steady(b, guid, 8, both...)
		AddReportEntry("first /occupied to 8 RUNNING", time.Since(start).Round(time.Millisecond).String())
		occupied := 0
		for _, row := range rows {
			if row.GetOccupied() {
				occupied++
				Expect(row.GetIndex()).To(BeNumerically("<", 4), "only indices 0-3 were marked occupied")
			}
		}
		Expect(occupied).To(Equal(4))

		Expect(desired().GetInstances()).To(BeEquivalentTo(8))
		Eventually(decision).Should(And(
			HaveField("Occupied", BeEquivalentTo(4)),
			HaveField("ReadyTarget", Equal(0.5)),
			HaveField("Computed", BeEquivalentTo(8)),
			HaveField("Wanted", BeEquivalentTo(8)),
			HaveField("Instances", BeEquivalentTo(8)),
		))
		last, err := decision()
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("last decision", last.Describe())

		var ops, reasons []string
		Eventually(func() []string {
			ops, reasons = autoscaleOps(b, guid)
			return ops
		}).Should(ContainElement(MatchRegexp(
			`^FINISHED history: .*occupied 4, ready_target 0\.5: ceil\(4 / \(1 − 0\.5\)\) = 8, within \[2, 10\]: wanted 8; instances \d+ → 8`)),
			"an AUTOSCALE operation, FINISHED, with the arithmetic of 4 occupied in its history")
		Expect(ops).To(ContainElement(MatchRegexp(`^FINISHED history: .*instances 2 → \d+`)), "the scale-up from 2")
		AddReportEntry("AUTOSCALE operations (newest first)", strings.Join(ops, "\n"))
		AddReportEntry("their reasons", strings.Join(reasons, "\n"))

		By("the count holds at 8 while occupancy holds")
		Consistently(func() int32 { return desired().GetInstances() }).WithTimeout(time.Second).
			WithPolling(200 * time.Millisecond).Should(BeEquivalentTo(8))
		Expect(b.lrps(guid)).To(HaveLen(8))
	})

	It("rolls out a new definition during the scale-up with zero failed requests, never above wanted + surge", func() {
		r := startRouter(b, guid)
		Eventually(r.routable).Should(Equal(8), "the router sees every instance before the rollout")

		By("no occupied instance was restarted during the scale-up")
		looks, violations := occupiedPids.stop()
		Expect(looks).To(BeNumerically(">", 10), "the pid watch looked often enough to mean something")
		Expect(violations).To(BeEmpty(), "occupied instances' processes before the rollout")

		samples := sampleCounts(b, guid)
		def := definitionFixture("hello-local-v2-definition.json")
		def.Action.Env = append(def.Action.Env, &models.EnvironmentVariable{Name: "AUTOSCALE_E2E", Value: "1"})
		start := time.Now()
		updated, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{Definition: def})
		Expect(err).NotTo(HaveOccurred())
		newID := updated.GetActiveDefinitionId()
		Expect(newID).NotTo(BeEmpty())

		status := waitForRollout(b, guid, rolloutLimit, rolloutCondition{"COMPLETE on the new definition", func(s *models.RolloutStatus) bool {
			return complete().ok(s) && s.GetActiveDefinitionId() == newID
		}})
		AddReportEntry("update to rollout COMPLETE", time.Since(start).Round(time.Millisecond).String())
		Expect(r.failuresSoFar()).To(BeEmpty(), "requests that failed during the rollout")
		Expect(status.GetHealthyDefinitionId()).To(Equal(newID))

		By("the new processes start ready: the occupancy is gone, so back to 2 after the window")
		Eventually(func() int32 { return desired().GetInstances() }).Should(BeEquivalentTo(2))
		rows := steady(b, guid, 2, both...)
		expectVersion(rows, newID, "v2")
		Eventually(decision).Should(And(HaveField("Occupied", BeZero()), HaveField("Wanted", BeEquivalentTo(2))))
		Eventually(r.sent).Should(BeNumerically(">", 100))
		stats := r.stop()
		counts := samples.stop()
		AddReportEntry("router", fmt.Sprintf("%d requests, %d failed, fewest routable indices %d, answers by version %v",
			stats.Requests, len(stats.Failures), stats.Fewest, stats.Versions))
		Expect(stats.Failures).To(BeEmpty(), "requests that failed during the rollout and the scale-down after it")
		Expect(stats.Fewest).To(BeNumerically(">=", 2), "fewest routable indices, at %s", stats.Worst)

		By("never more instances than the wanted count + surge, not counting those told to stop")
		Expect(len(counts)).To(BeNumerically(">", 20), "the sampler looked often enough to mean something")
		most, mostAll := 0, 0
		for i, smp := range counts {
			// The highest count of the last lag: rows of a count that just
			// went down may still be stopping.
			wanted := smp.instances
			for j := i - 1; j >= 0 && smp.at.Sub(counts[j].at) <= lag; j-- {
				wanted = max(wanted, counts[j].instances)
			}
			most, mostAll = max(most, smp.rows), max(mostAll, smp.all)
			Expect(smp.rows).To(BeNumerically("<=", int(wanted)+surge),
				"sample %d at %s: instances %d (at most %d in the %s before), %d rows not told to stop: %s",
				i, smp.at.Format(time.StampMilli), smp.instances, wanted, lag, smp.rows, smp.detail)
		}
		AddReportEntry("most rows during the rollout", fmt.Sprintf("%d not told to stop, %d with those stopping", most, mostAll))
	})

	It("scales down to 2 after the window without stopping an occupied instance of a high index", func() {
		By("releasing whatever is still occupied")
		for _, row := range b.lrps(guid) {
			if row.GetOccupied() {
				setOccupied(b, guid, row, false)
			}
		}
		steady(b, guid, 2, both...)

		watch := watchPids(reps, guid)
		By("2 occupied → 4; then the highest index, 3, too → ceil(3 / 0.5) = 6")
		low := occupy(watch, 0, 1)
		steady(b, guid, 4, both...)
		high := occupy(watch, 3)[0]
		highPid := pidOf(reps, guid, high.GetInstanceGuid())
		steady(b, guid, 6, both...)
		Eventually(decision).Should(And(HaveField("Occupied", BeEquivalentTo(3)), HaveField("Instances", BeEquivalentTo(6))))
		_, violations := watch.stop()
		Expect(violations).To(BeEmpty(), "occupied instances' processes during the scale-up")

		By("releasing 0 and 1, keeping 3 occupied → ceil(1 / 0.5) = 2")
		highWatch := watchPids(reps, guid)
		highWatch.track(high.GetInstanceGuid(), highPid)
		samples := sampleCounts(b, guid)
		released := time.Now()
		for _, row := range low {
			setOccupied(b, guid, row, false)
		}
		Eventually(func() int32 { return desired().GetInstances() }).Should(BeEquivalentTo(2))
		AddReportEntry("first /ready to instances 2", time.Since(released).Round(time.Millisecond).String())
		Eventually(decision).Should(And(HaveField("Occupied", BeEquivalentTo(1)), HaveField("Wanted", BeEquivalentTo(2))))

		By("2 processes run, one of them the occupied instance's, never stopped")
		Eventually(func() error {
			list, err := listInstances(reps, guid)
			if err != nil {
				return err
			}
			var pids []int
			for _, inst := range list {
				pids = append(pids, inst.Pid)
			}
			if len(list) != 2 {
				return fmt.Errorf("the reps run %d processes of %s: %+v", len(list), guid, list)
			}
			if !slices.Contains(pids, highPid) {
				return fmt.Errorf("the occupied instance's process %d is not among %v", highPid, pids)
			}
			if rows := b.lrps(guid); len(rows) != 2 {
				return fmt.Errorf("want 2 rows, have %s", describe(rows))
			}
			return nil
		}).Should(Succeed())
		counts := samples.stop()
		looks, violations := highWatch.stop()
		Expect(looks).To(BeNumerically(">", 10))
		Expect(violations).To(BeEmpty(), "the occupied instance of index 3 during the scale-down")
		kept := rowOf(b, guid, high.GetInstanceGuid())
		Expect(kept.GetOccupied()).To(BeTrue())
		Expect(kept.GetState()).To(Equal(models.ActualLRP_RUNNING))
		AddReportEntry("the occupied instance after the scale-down", describe([]*models.ActualLRP{kept}))

		By("the count went down no sooner than the window after the release")
		for i, smp := range counts {
			if smp.at.Before(released.Add(window - 500*time.Millisecond)) {
				Expect(smp.instances).To(BeEquivalentTo(6), "sample %d, %s after the first /ready: instances %d within the %s window",
					i, smp.at.Sub(released).Round(time.Millisecond), smp.instances, window)
			}
		}

		By("releasing it too: 2, all ready")
		setOccupied(b, guid, kept, false)
		steady(b, guid, 2, both...)
		// The count and the count wanted stay 2, and the last decision
		// follows the occupancy: nothing occupied.
		Eventually(decision).Should(And(HaveField("Occupied", BeZero()), HaveField("Wanted", BeEquivalentTo(2)), HaveField("Instances", BeEquivalentTo(2))))
		Consistently(func() int32 { return desired().GetInstances() }).WithTimeout(time.Second).
			WithPolling(200 * time.Millisecond).Should(BeEquivalentTo(2))
		last, err := decision()
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("last decision at the end", last.Describe())
	})
})
