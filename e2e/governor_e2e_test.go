package e2e_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

// The rollout governor (issue 31, item 3) with real reps: many LRPs of one
// hello instance each are updated at once on a board with
// max_rollouts_in_flight; while they roll, every LRP's rollout status is
// sampled again and again, and at no sample may more rollouts be in
// flight (admitted and under way) than the limit, or more LRPs have a
// replacement under way (a RETIRING row not yet told to stop) than the
// limit. Every rollout completes.
//
// make test runs 20 LRPs with a limit of 3; make chaos (label chaos,
// CORKBOARD_CHAOS=full) runs the 200 with a limit of 10.
var _ = Describe("the rollout governor", Label("chaos"), func() {
	ctx := context.Background()

	It("updates every LRP at once with never more rollouts in flight than max_rollouts_in_flight, and completes them all", func() {
		lrps, limit, slots := 20, 3, 16
		if os.Getenv("CORKBOARD_CHAOS") == "full" {
			lrps, limit, slots = 200, 10, 110
		}
		b := startBoard(map[string]any{"max_rollouts_in_flight": limit})
		b.cork("set-domain", "cork")
		// Room for every instance and the limit's replacements across two
		// cells (hello-local is 64 MB an instance), a port each.
		cells := []string{"cell-z1", "cell-z2"}
		for i, cell := range cells {
			first := freePortRange(slots + 4)
			startRep(b, cell, fmt.Sprintf("z%d", i+1), map[string]any{
				"capacity":   map[string]int{"memory_mb": 64 * slots, "disk_mb": 64 * slots, "instances": slots},
				"port_range": fmt.Sprintf("%d-%d", first, first+slots+3),
			})
		}

		guids := make([]string, lrps)
		for i := range guids {
			guids[i] = fmt.Sprintf("gov-%03d", i)
			lrp := &models.DesiredLRP{}
			readFixture("hello-local.json", lrp)
			lrp.ProcessGuid = guids[i]
			lrp.Instances = 1
			_, err := b.client().DesireLRP(ctx, lrp)
			Expect(err).NotTo(HaveOccurred())
		}
		for _, guid := range guids {
			steady(b, guid, 1, cells...)
		}

		By(fmt.Sprintf("updating all %d LRPs at once, max_rollouts_in_flight %d", lrps, limit))
		started := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, lrps)
		for _, guid := range guids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				def := definitionFixture("hello-local-v2-definition.json")
				def.Action.Env = append(def.Action.Env, &models.EnvironmentVariable{Name: "VERSION", Value: "governed"})
				_, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{
					Definition:     def,
					UpdateStrategy: &models.UpdateStrategy{MaxSurge: "1", MaxUnavailable: "0"},
				})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			Expect(err).NotTo(HaveOccurred())
		}

		samples, mostInFlight, mostMoving, mostQueued := 0, 0, 0, int32(0)
		var badQueued []string
		queuedReason := regexp.MustCompile(fmt.Sprintf(`^queued: position \d+ of \d+ \(max_rollouts_in_flight %d\); `, limit))
		Eventually(func(g Gomega) {
			inFlight, moving, completed := 0, 0, 0
			for _, guid := range guids {
				s, err := b.client().RolloutStatus(ctx, guid)
				g.Expect(err).NotTo(HaveOccurred())
				if s.GetAdmittedAt() != 0 && models.RolloutUnderWay(s.GetState(), s.GetFinishedAt()) {
					inFlight++
				}
				if s.GetQueuePosition() > 0 {
					mostQueued = max(mostQueued, s.GetQueuePosition())
					// A queued rollout starts nothing and has no deadline.
					if s.GetInFlight() != 0 || s.GetDeadlineAt() != 0 || !queuedReason.MatchString(s.GetReason()) {
						badQueued = append(badQueued, fmt.Sprintf("%s: in flight %d, deadline %d, reason %q", guid, s.GetInFlight(), s.GetDeadlineAt(), s.GetReason()))
					}
				}
				if s.GetState() == models.RolloutStatus_COMPLETE {
					completed++
				}
				for _, row := range b.lrps(guid) {
					// A RETIRING row its rep was told to stop is leaving
					// after its rollout completed; one not told is a
					// replacement under way.
					if row.GetPresence() == models.ActualLRP_RETIRING && !row.GetStopRequested() {
						moving++
						break
					}
				}
			}
			samples++
			// Every sample counts: the most seen is checked once all
			// complete (a failed check here would only be retried).
			mostInFlight, mostMoving = max(mostInFlight, inFlight), max(mostMoving, moving)
			g.Expect(completed).To(Equal(lrps), "rollouts complete")
		}).WithTimeout(time.Duration(lrps)*3*time.Second + time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
		took := time.Since(started)
		Expect(mostInFlight).To(BeNumerically("<=", limit), "rollouts in flight at any sample")
		Expect(mostMoving).To(BeNumerically("<=", limit), "LRPs with a replacement under way at any sample")
		Expect(badQueued).To(BeEmpty(), "queued rollouts start nothing, have no deadline and say where they wait")

		Expect(mostInFlight).To(Equal(limit), "the governor used every slot")
		Expect(mostQueued).To(BeNumerically(">", 0), "some rollouts waited in the queue")
		for _, guid := range guids {
			s, err := b.client().RolloutStatus(ctx, guid)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.GetQueuePosition()).To(BeZero())
			Expect(s.GetAdmittedAt()).To(BeNumerically(">", 0))
		}
		AddReportEntry(fmt.Sprintf("governor: %d LRPs of 1 instance updated at once, max_rollouts_in_flight %d", lrps, limit),
			fmt.Sprintf("all COMPLETE in %s; %d samples: at most %d rollouts in flight and %d LRPs with a replacement under way; queue up to %d long",
				took.Round(100*time.Millisecond), samples, mostInFlight, mostMoving, mostQueued))
	})
})
