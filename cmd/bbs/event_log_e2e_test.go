package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// streamed is one event a client read, and from which board.
type streamed struct {
	id        uint64
	eventType string
	payload   any
}

// follower reads a board's event stream, and when the stream breaks opens
// it again on whatever board board() then returns, resuming after the last
// event it read, as a router would.
type follower struct {
	board func() *runningBoard

	mu      sync.Mutex
	events  []streamed
	reopens int
}

func (f *follower) run(ctx context.Context) {
	defer GinkgoRecover()
	var last uint64
	for ctx.Err() == nil {
		stream, err := f.board().client().Events(ctx, client.EventsOptions{LastEventID: last})
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for {
			e, err := stream.Next()
			if err != nil {
				break
			}
			f.mu.Lock()
			f.events = append(f.events, streamed{id: e.ID, eventType: e.Type, payload: e.Payload})
			f.mu.Unlock()
		}
		last = stream.LastEventID()
		stream.Close()
		f.mu.Lock()
		f.reopens++
		f.mu.Unlock()
	}
}

func (f *follower) reopened() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reopens
}

func (f *follower) seen() []streamed {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]streamed(nil), f.events...)
}

// annotations lists the annotations of desired_lrp_changed events of guid,
// in stream order.
func annotations(events []streamed, guid string) []string {
	var out []string
	for _, e := range events {
		if changed, ok := e.payload.(*models.DesiredLRPChangedEvent); ok && changed.GetAfter().GetProcessGuid() == guid {
			out = append(out, changed.GetAfter().GetAnnotation())
		}
	}
	return out
}

// expectOneSequence checks that events have consecutive ids, none missing
// and none repeated, and no events_lost.
func expectOneSequence(events []streamed) {
	GinkgoHelper()
	Expect(events).NotTo(BeEmpty())
	for i, e := range events {
		Expect(e.eventType).NotTo(Equal(models.EventEventsLost), "event %d", i)
		Expect(e.id).To(Equal(events[0].id+uint64(i)), "event %d of %d: ids must follow each other", i, len(events))
	}
}

var _ = Describe("One event stream for every board", func() {
	ctx := context.Background()

	for _, dialect := range testdb.MustDialects() {
		if dialect == testdb.SQLite {
			continue
		}
		It("gives a client of board B every change made through board A, in order, across a restart of B, on "+dialect, func() {
			database := newDatabase(dialect)
			a := startConvergingBoard(database, map[string]any{"board_id": "board-a"})
			settingsB := map[string]any{"board_id": "board-b"}
			b := startConvergingBoard(database, settingsB)

			var mu sync.Mutex
			current := b
			following, stop := context.WithCancel(ctx)
			defer stop()
			onB := &follower{board: func() *runningBoard { mu.Lock(); defer mu.Unlock(); return current }}
			onA := &follower{board: func() *runningBoard { return a }}
			go onB.run(following)
			go onA.run(following)
			// Both streams are open once a first write reaches both.
			api := a.client()
			Expect(api.UpsertDomain(ctx, "apps", 0)).To(Succeed())
			_, err := api.DesireLRP(ctx, lrpSpec("web", "apps", 2))
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() int { return len(onB.seen()) }).WithTimeout(convergeLimit).ShouldNot(BeZero())
			Eventually(func() int { return len(onA.seen()) }).WithTimeout(convergeLimit).ShouldNot(BeZero())

			const updates = 60
			var want []string
			restartedAt := 0
			var restartTook time.Duration
			for i := 1; i <= updates; i++ {
				annotation := strconv.Itoa(i)
				_, err := api.UpdateDesiredLRP(ctx, "web", &models.DesiredLRPUpdate{Annotation: &annotation})
				Expect(err).NotTo(HaveOccurred())
				want = append(want, annotation)
				if i == updates/3 {
					By("SIGKILLing board B, and starting it again, while writes go on through A")
					restartedAt = len(onB.seen())
					began := time.Now()
					b.session.Kill()
					Eventually(b.session).WithTimeout(startupLimit).Should(gexec.Exit())
					restarted := startConvergingBoard(database, settingsB)
					mu.Lock()
					current = restarted
					mu.Unlock()
					restartTook = time.Since(began)
				}
				if i == updates/2 {
					_, err := api.DesireLRP(ctx, lrpSpec("api", "apps", 1))
					Expect(err).NotTo(HaveOccurred())
				}
				time.Sleep(10 * time.Millisecond)
			}

			Eventually(func() []string { return annotations(onB.seen(), "web") }).WithTimeout(convergeLimit).Should(Equal(want))
			Eventually(func() []string { return annotations(onA.seen(), "web") }).WithTimeout(convergeLimit).Should(Equal(want))
			stop()

			seenOnB, seenOnA := onB.seen(), onA.seen()
			expectOneSequence(seenOnB)
			expectOneSequence(seenOnA)
			// Both boards streamed the same events under the same ids.
			last := min(seenOnA[len(seenOnA)-1].id, seenOnB[len(seenOnB)-1].id)
			first := max(seenOnA[0].id, seenOnB[0].id)
			pick := func(events []streamed) []string {
				var out []string
				for _, e := range events {
					if e.id >= first && e.id <= last {
						out = append(out, fmt.Sprintf("%d %s", e.id, e.eventType))
					}
				}
				return out
			}
			Expect(pick(seenOnB)).To(Equal(pick(seenOnA)))
			Expect(restartedAt).To(BeNumerically(">", 0))
			Expect(onB.reopened()).To(BeNumerically(">=", 1), "the stream on B broke with B and was opened again")
			AddReportEntry("event stream across boards", fmt.Sprintf("%d events read from B (%d before its restart, which took %s), %d from A; ids consecutive, same on both",
				len(seenOnB), restartedAt, restartTook.Round(time.Millisecond), len(seenOnA)))
		})
	}
})
