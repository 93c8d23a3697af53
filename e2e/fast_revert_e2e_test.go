package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// A fast rollback with real processes (issue 30, item 6): 12 hello
// instances on v2, rolled there from v1, on two reps with room for all 12
// replacements at once; the LRP's strategy is serial (max_surge 1,
// max_unavailable 0) with a min_ready of 5s, so a rollback that is not
// fast would take at least 12 × 5s. `cork rollback --fast` must bring
// every index back to v1 within two health-check intervals plus the start
// time of one instance, measured in the same spec, while a router-like
// client (router_test.go) sees no failed request.
var _ = Describe("a fast rollback of 12 hello instances", func() {
	const (
		guid      = "hello"
		instances = 12
		minReady  = 5 * time.Second
	)
	ctx := context.Background()
	both := []string{"cell-z1", "cell-z2"}

	It("starts every replacement at once and completes within two health intervals plus a start, serving throughout", func() {
		b := startBoard(nil)
		b.cork("set-domain", "cork")
		// 16 slots a cell (the default), 64 MB an instance: 32 in all, so
		// 12 instances and their 12 replacements fit at once.
		startRep(b, "cell-z1", "z1")
		startRep(b, "cell-z2", "z2")

		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.Instances = instances
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		v1ID := steady(b, guid, instances, both...)[0].GetDefinitionId()

		By("rolling to v2 quickly, then making the strategy serial with a min_ready")
		_, err = b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{
			Definition:     definitionFixture("hello-local-v2-definition.json"),
			UpdateStrategy: &models.UpdateStrategy{MaxSurge: "100%", MaxUnavailable: "0"},
		})
		Expect(err).NotTo(HaveOccurred())
		status := waitForRollout(b, guid, 2*time.Minute, complete())
		v2ID := status.GetActiveDefinitionId()
		Expect(v2ID).NotTo(Equal(v1ID))
		Expect(status.GetFast()).To(BeFalse(), "an update is not fast")
		_, err = b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{
			UpdateStrategy: &models.UpdateStrategy{MaxSurge: "1", MaxUnavailable: "0", MinReadyMs: minReady.Milliseconds()},
		})
		Expect(err).NotTo(HaveOccurred())
		expectVersion(steady(b, guid, instances, both...), v2ID, "v2")

		By("measuring the start of one instance: a 13th, from the scale-up to RUNNING and routable")
		startTime := timeOneStart(b, guid, instances)
		_, err = b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{Instances: proto.Int32(instances)})
		Expect(err).NotTo(HaveOccurred())
		steady(b, guid, instances, both...)

		def, err := b.client().Definition(ctx, guid, v1ID)
		Expect(err).NotTo(HaveOccurred())
		interval := def.GetHealthCheck().Interval()
		bound := 2*interval + startTime

		By("rolling back to v1 fast with cork, a router sending requests throughout")
		r := startRouter(b, guid)
		Eventually(r.routable).Should(Equal(instances), "the router sees every instance before the rollback")
		events := recordRollouts(b, guid)
		called := time.Now()
		out := b.cork("rollback", guid, "--to", v1ID, "--fast")
		status = waitForRollout(b, guid, time.Minute, complete())
		took := time.Since(called)

		var answered models.RolloutStatus
		Expect(protojson.Unmarshal([]byte(strings.TrimSpace(out)), &answered)).To(Succeed())
		Expect(answered.GetFast()).To(BeTrue(), "cork's answer: %s", out)
		Expect(status.GetActiveDefinitionId()).To(Equal(v1ID))
		Expect(status.GetFast()).To(BeTrue())
		boardTook := time.Duration(status.GetFinishedAt() - status.GetStartedAt())

		rows := steady(b, guid, instances, both...)
		expectVersion(rows, v1ID, "v1")
		// The router goes on until it has asked enough of what runs now.
		Eventually(r.sent).Should(BeNumerically(">", 100))
		stats := r.stop()
		recorded := events.stop()
		AddReportEntry("fast rollback of 12", fmt.Sprintf("%s from the call to COMPLETE seen (%s on the board's clock); bound %s = 2 × %s health interval + %s start of one instance",
			took.Round(time.Millisecond), boardTook.Round(time.Millisecond), bound.Round(time.Millisecond), interval, startTime.Round(time.Millisecond)))
		AddReportEntry("router", fmt.Sprintf("%d requests, %d failed, fewest routable indices %d, answers by version %v",
			stats.Requests, len(stats.Failures), stats.Fewest, stats.Versions))

		Expect(recorded.maxInFlight()).To(BeEquivalentTo(instances), "every index started its replacement at once")
		Expect(took).To(BeNumerically("<=", bound), "completed within two health intervals plus a start")
		expectServedThroughout(stats, instances)
	})
})

// timeOneStart scales guid from n to n+1 instances and returns the time
// from the call until index n is RUNNING and routable, as a client sees
// it.
func timeOneStart(b *board, guid string, n int32) time.Duration {
	GinkgoHelper()
	started := time.Now()
	_, err := b.client().UpdateDesiredLRP(context.Background(), guid, &models.DesiredLRPUpdate{Instances: proto.Int32(n + 1)})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() error {
		for _, row := range b.lrps(guid) {
			if row.GetIndex() == n && row.GetState() == models.ActualLRP_RUNNING && row.GetRoutable() {
				return nil
			}
		}
		return fmt.Errorf("index %d is not running yet", n)
	}).WithTimeout(time.Minute).WithPolling(10 * time.Millisecond).Should(Succeed())
	return time.Since(started)
}
