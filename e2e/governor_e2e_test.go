package e2e_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// The rollout governor (issue 31, item 3) with real reps: many LRPs of one
// hello instance each are updated at once on a board with
// max_rollouts_in_flight. At no change the board publishes (its
// rollout_changed events, replayed in order) may more rollouts hold a slot
// (admitted and under way) than the limit, nor more be between their
// admitted_at and finished_at at one instant; at no read of every row of
// the board may more LRPs have a replacement under way (a RETIRING row not
// yet told to stop) than the limit. Every rollout completes.
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
		// The board's rollout_changed events, in its order, say at every
		// change how many rollouts hold a slot. Reading 200 statuses one by
		// one takes long enough for one rollout to complete and the next to
		// be admitted within one read, so a count over such a read is no
		// count of any one moment; the events' is.
		changes := recordEvents(b, models.EventRolloutChanged)
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

		samples, mostMoving, mostQueued := 0, 0, int32(0)
		var badQueued []string
		var longestRead time.Duration
		queuedReason := regexp.MustCompile(fmt.Sprintf(`^queued: position \d+ of \d+ \(max_rollouts_in_flight %d\); `, limit))
		ours := map[string]bool{}
		for _, guid := range guids {
			ours[guid] = true
		}
		Eventually(func(g Gomega) {
			read := time.Now()
			completed := 0
			for _, guid := range guids {
				s, err := b.client().RolloutStatus(ctx, guid)
				g.Expect(err).NotTo(HaveOccurred())
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
			}
			longestRead = max(longestRead, time.Since(read))
			// Every row of the board in one read: one moment.
			rows, err := b.client().ActualLRPs(ctx, client.ActualLRPFilter{})
			g.Expect(err).NotTo(HaveOccurred())
			moving := map[string]bool{}
			for _, row := range rows {
				// A RETIRING row its rep was told to stop is leaving after
				// its rollout completed; one not told is a replacement
				// under way.
				if ours[row.GetProcessGuid()] && row.GetPresence() == models.ActualLRP_RETIRING && !row.GetStopRequested() {
					moving[row.GetProcessGuid()] = true
				}
			}
			samples++
			// Every sample counts: the most seen is checked once all
			// complete (a failed check here would only be retried).
			mostMoving = max(mostMoving, len(moving))
			g.Expect(completed).To(Equal(lrps), "rollouts complete")
		}).WithTimeout(time.Duration(lrps)*3*time.Second + time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
		took := time.Since(started)
		events, lost := changes.stop()
		Expect(lost).To(BeZero(), "the event stream lost none of the rollouts' changes")

		By("at every change the board published, no more rollouts held a slot than the limit")
		latest := map[string]*models.RolloutStatus{}
		mostInFlight, atEvent := 0, ""
		for _, event := range events {
			status := event.Payload.(*models.RolloutChangedEvent).GetStatus()
			if !ours[status.GetProcessGuid()] {
				continue
			}
			latest[status.GetProcessGuid()] = status
			inFlight := 0
			for _, s := range latest {
				if holdsSlot(s) {
					inFlight++
				}
			}
			if inFlight > mostInFlight {
				mostInFlight, atEvent = inFlight, fmt.Sprintf("event %d (%s %s)", event.ID, status.GetProcessGuid(), status.GetState())
			}
		}
		Expect(latest).To(HaveLen(lrps), "every rollout's changes were seen")

		By("and by the board's own times, no more were admitted and unfinished at any instant")
		var edges []slotEdge
		for _, guid := range guids {
			s, err := b.client().RolloutStatus(ctx, guid)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.GetQueuePosition()).To(BeZero())
			Expect(s.GetAdmittedAt()).To(BeNumerically(">", 0))
			Expect(s.GetFinishedAt()).To(BeNumerically(">=", s.GetAdmittedAt()))
			edges = append(edges, slotEdge{at: s.GetAdmittedAt(), delta: 1}, slotEdge{at: s.GetFinishedAt(), delta: -1})
		}
		mostOverlapping := mostAtOnce(edges)

		Expect(mostInFlight).To(BeNumerically("<=", limit), "rollouts holding a slot after %s", atEvent)
		Expect(mostOverlapping).To(BeNumerically("<=", limit), "rollouts between their admitted_at and finished_at at one instant")
		Expect(mostMoving).To(BeNumerically("<=", limit), "LRPs with a replacement under way at any sample")
		Expect(badQueued).To(BeEmpty(), "queued rollouts start nothing, have no deadline and say where they wait")

		Expect(mostInFlight).To(Equal(limit), "the governor used every slot")
		Expect(mostQueued).To(BeNumerically(">", 0), "some rollouts waited in the queue")
		AddReportEntry(fmt.Sprintf("governor: %d LRPs of 1 instance updated at once, max_rollouts_in_flight %d", lrps, limit),
			fmt.Sprintf("all COMPLETE in %s; at most %d rollouts holding a slot over %d rollout_changed events, at most %d admitted and unfinished at one instant by their times; "+
				"%d samples (reading every status took up to %s): at most %d LRPs with a replacement under way, queue up to %d long",
				took.Round(100*time.Millisecond), mostInFlight, len(events), mostOverlapping, samples, longestRead.Round(time.Millisecond), mostMoving, mostQueued))
	})
})

// holdsSlot reports whether a rollout status takes one of the governor's
// slots, as convergence.RolloutRow.HoldsSlot decides it from the record:
// admitted, and under way or HELD.
func holdsSlot(s *models.RolloutStatus) bool {
	return s.GetAdmittedAt() != 0 &&
		(models.RolloutUnderWay(s.GetState(), s.GetFinishedAt()) || s.GetState() == models.RolloutStatus_HELD)
}

// slotEdge is a rollout taking (+1) or giving back (-1) a slot at a Unix
// nanosecond.
type slotEdge struct {
	at    int64
	delta int
}

// mostAtOnce is the most slots held at one instant, each held from its
// admission up to, not including, its finish: at an equal instant a finish
// gives its slot back before an admission takes one.
func mostAtOnce(edges []slotEdge) int {
	slices.SortFunc(edges, func(a, b slotEdge) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta))
	})
	held, most := 0, 0
	for _, e := range edges {
		held += e.delta
		most = max(most, held)
	}
	return most
}
