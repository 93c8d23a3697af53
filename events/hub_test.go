package events_test

import (
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/models"
)

// instance is an actual_lrp_created event for guid/index; the index doubles
// as a sequence number within one guid.
func instance(guid string, index int32) models.Event {
	return models.ActualLRPCreated(&models.ActualLRP{ProcessGuid: guid, Index: index})
}

func cell(id string) models.Event {
	return models.CellChanged(nil, &models.Cell{CellId: id})
}

func indexOf(e events.Event) int32 {
	return e.Payload.(*models.ActualLRPCreatedEvent).GetActualLrp().GetIndex()
}

// publishN publishes guid/0 .. guid/n-1, one Publish call each.
func publishN(hub *events.Hub, guid string, n int) {
	for i := range n {
		hub.Publish(instance(guid, int32(i)))
	}
}

// receive takes n events from the subscription, failing if it closes or
// stalls first.
func receive(sub *events.Subscription, n int) []events.Event {
	GinkgoHelper()
	got := make([]events.Event, 0, n)
	for len(got) < n {
		select {
		case e, ok := <-sub.Events():
			Expect(ok).To(BeTrue(), "closed after %d of %d events: %v", len(got), n, sub.Err())
			got = append(got, e)
		case <-time.After(5 * time.Second):
			Fail(fmt.Sprintf("received %d of %d events", len(got), n))
		}
	}
	return got
}

// expectQuiet shows that nothing more is delivered for now.
func expectQuiet(sub *events.Subscription) {
	GinkgoHelper()
	Consistently(sub.Events(), 50*time.Millisecond).ShouldNot(Receive())
}

// drain reads until the channel closes and returns what it read.
func drain(sub *events.Subscription) []events.Event {
	GinkgoHelper()
	var got []events.Event
	Eventually(func() bool {
		for {
			select {
			case e, ok := <-sub.Events():
				if !ok {
					return true
				}
				got = append(got, e)
			default:
				return false
			}
		}
	}).Should(BeTrue(), "the subscription did not end")
	return got
}

func expectConsecutive(got []events.Event, firstID uint64) {
	GinkgoHelper()
	for i, e := range got {
		Expect(e.ID).To(Equal(firstID+uint64(i)), "event %d", i)
	}
}

func subscribe(hub *events.Hub, lastEventID uint64, filter events.Filter) *events.Subscription {
	sub := hub.Subscribe(lastEventID, filter)
	DeferCleanup(sub.Close)
	return sub
}

var _ = Describe("Hub", func() {
	var hub *events.Hub

	BeforeEach(func() {
		hub = events.NewHub(events.WithHistory(100))
		DeferCleanup(hub.Close)
	})

	It("delivers events in publish order with consecutive ids, payloads and keys intact", func() {
		sub := subscribe(hub, 0, events.Filter{})
		hub.Publish(instance("a", 0), instance("b", 0))
		hub.Publish(instance("a", 1))
		hub.Publish()
		hub.Publish(cell("cell-1"))

		got := receive(sub, 4)
		expectConsecutive(got, got[0].ID)
		Expect(got[0].ID).To(Equal(hub.LastID() - 3))
		Expect([]string{got[0].Key, got[1].Key, got[2].Key, got[3].Key}).To(Equal([]string{"a", "b", "a", "cell-1"}))
		Expect(got[0].Type).To(Equal(models.EventActualLRPCreated))
		Expect(got[3].Type).To(Equal(models.EventCellChanged))
		Expect(got[3].Payload.(*models.CellChangedEvent).GetAfter().GetCellId()).To(Equal("cell-1"))
		expectQuiet(sub)
	})

	It("starts a subscription without a last event id at the next event", func() {
		publishN(hub, "before", 3)
		sub := subscribe(hub, 0, events.Filter{})
		expectQuiet(sub)

		hub.Publish(instance("after", 0))
		got := receive(sub, 1)
		Expect(got[0].Key).To(Equal("after"))
		Expect(got[0].ID).To(Equal(hub.LastID()))
	})

	It("gives ids that keep growing across hubs, as across board restarts", func() {
		publishN(hub, "old", 3)
		last := hub.LastID()
		Eventually(func() int64 { return time.Now().UnixMicro() }).Should(BeNumerically(">", last))

		restarted := events.NewHub()
		DeferCleanup(restarted.Close)
		Expect(restarted.LastID()).To(BeNumerically(">=", last))
		restarted.Publish(instance("new", 0))
		Expect(restarted.LastID()).To(BeNumerically(">", last))
	})

	Describe("resuming", func() {
		var ids []uint64

		BeforeEach(func() {
			publishN(hub, "g", 10)
			last := hub.LastID()
			ids = nil
			for i := range uint64(10) {
				ids = append(ids, last-9+i)
			}
		})

		It("replays the events after the last event id, then goes on live", func() {
			sub := subscribe(hub, ids[6], events.Filter{})
			replayed := receive(sub, 3)
			Expect(replayed[0].ID).To(Equal(ids[7]))
			expectConsecutive(replayed, ids[7])
			Expect([]int32{indexOf(replayed[0]), indexOf(replayed[1]), indexOf(replayed[2])}).To(Equal([]int32{7, 8, 9}))
			expectQuiet(sub)

			hub.Publish(instance("g", 10))
			live := receive(sub, 1)
			Expect(live[0].ID).To(Equal(ids[9] + 1))
			Expect(indexOf(live[0])).To(BeEquivalentTo(10))
		})

		It("replays nothing when the last event id is the newest", func() {
			sub := subscribe(hub, ids[9], events.Filter{})
			expectQuiet(sub)
			hub.Publish(instance("g", 10))
			Expect(indexOf(receive(sub, 1)[0])).To(BeEquivalentTo(10))
		})

		It("replays the whole history when the last event id is just before the oldest kept", func() {
			small := events.NewHub(events.WithHistory(5))
			DeferCleanup(small.Close)
			publishN(small, "g", 8)
			oldest := small.LastID() - 4

			sub := subscribe(small, oldest-1, events.Filter{})
			got := receive(sub, 5)
			expectConsecutive(got, oldest)
			Expect(indexOf(got[0])).To(BeEquivalentTo(3))
			expectQuiet(sub)
		})

		It("starts with events_lost when the last event id is older than the history, then replays what it keeps", func() {
			small := events.NewHub(events.WithHistory(5))
			DeferCleanup(small.Close)
			publishN(small, "g", 8)
			newest := small.LastID()
			oldest := newest - 4

			sub := subscribe(small, oldest-2, events.Filter{})
			got := receive(sub, 6)
			Expect(got[0].Type).To(Equal(models.EventEventsLost))
			Expect(got[0].ID).To(BeZero())
			lost := got[0].Payload.(*models.EventsLostEvent)
			Expect(lost.GetLastEventId()).To(Equal(oldest - 2))
			Expect(lost.GetOldestKeptId()).To(Equal(oldest))
			expectConsecutive(got[1:], oldest)
			Expect(indexOf(got[1])).To(BeEquivalentTo(3))
			expectQuiet(sub)
		})

		It("starts with events_lost for an id this hub never gave, e.g. from before a restart", func() {
			for _, unknown := range []uint64{ids[0] - 1000, ids[9] + 1, ids[9] + 1000000} {
				sub := subscribe(hub, unknown, events.Filter{})
				got := receive(sub, 11)
				Expect(got[0].Type).To(Equal(models.EventEventsLost), "last event id %d", unknown)
				Expect(got[0].Payload.(*models.EventsLostEvent).GetLastEventId()).To(Equal(unknown))
				expectConsecutive(got[1:], ids[0])
			}
		})

		It("starts with events_lost on a fresh hub for an id from an earlier one", func() {
			last := hub.LastID()
			Eventually(func() int64 { return time.Now().UnixMicro() }).Should(BeNumerically(">", last+1))
			restarted := events.NewHub()
			DeferCleanup(restarted.Close)

			sub := subscribe(restarted, last, events.Filter{})
			got := receive(sub, 1)
			Expect(got[0].Type).To(Equal(models.EventEventsLost))
			expectQuiet(sub)
		})
	})

	Describe("filters", func() {
		It("delivers only the types asked for", func() {
			sub := subscribe(hub, 0, events.Filter{Types: []string{models.EventCellChanged, models.EventActualLRPRemoved}})
			hub.Publish(instance("g", 0), cell("c1"), models.ActualLRPRemoved(&models.ActualLRP{ProcessGuid: "g"}), instance("g", 1), cell("c2"))

			got := receive(sub, 3)
			Expect([]string{got[0].Type, got[1].Type, got[2].Type}).To(Equal([]string{models.EventCellChanged, models.EventActualLRPRemoved, models.EventCellChanged}))
			Expect(got[2].ID).To(Equal(hub.LastID()))
			Expect(got[0].ID).To(Equal(hub.LastID() - 3))
			expectQuiet(sub)
		})

		It("matches against each type once, however often a request repeats it", func() {
			repeated := []string{models.EventCellChanged}
			for range 10_000 {
				repeated = append(repeated, models.EventActualLRPRemoved, models.EventCellChanged)
			}
			sub := subscribe(hub, 0, events.Filter{Types: repeated})
			Expect(sub.FilterTypes()).To(ConsistOf(models.EventCellChanged, models.EventActualLRPRemoved))
			hub.Publish(instance("g", 0), cell("c1"), models.ActualLRPRemoved(&models.ActualLRP{ProcessGuid: "g"}))
			got := receive(sub, 2)
			Expect([]string{got[0].Type, got[1].Type}).To(Equal([]string{models.EventCellChanged, models.EventActualLRPRemoved}))
			expectQuiet(sub)
		})

		It("always delivers events_lost", func() {
			small := events.NewHub(events.WithHistory(2))
			DeferCleanup(small.Close)
			publishN(small, "g", 5)
			sub := subscribe(small, small.LastID()-3, events.Filter{Types: []string{models.EventCellChanged}})
			got := receive(sub, 1)
			Expect(got[0].Type).To(Equal(models.EventEventsLost))
			expectQuiet(sub)
		})
	})

	Describe("a slow subscriber", func() {
		It("is cut off when it falls behind the history, while publishing goes on and others keep up", func() {
			slow := subscribe(hub, 0, events.Filter{})
			fast := subscribe(hub, 0, events.Filter{})
			firstID := hub.LastID() + 1

			published := make(chan struct{})
			var fastGot []events.Event
			go func() {
				defer GinkgoRecover()
				defer close(published)
				// Chunks smaller than the history, each read by the fast
				// subscriber before the next: it never falls behind. The
				// slow one never reads.
				for chunk := range 50 {
					for i := range 10 {
						hub.Publish(instance("g", int32(chunk*10+i)))
					}
					fastGot = append(fastGot, receive(fast, 10)...)
				}
			}()
			Eventually(published).Should(BeClosed(), "publishing was blocked by the slow subscriber")

			Expect(fastGot).To(HaveLen(500))
			expectConsecutive(fastGot, firstID)

			got := drain(slow)
			Expect(len(got)).To(BeNumerically("<", 500), "it was cut off before it could read everything")
			expectConsecutive(got, firstID)
			Expect(slow.Err()).To(MatchError(events.ErrSlowSubscriber))
			Expect(slow.Err().Error()).To(ContainSubstring("dropped from the history of 100"))

			Eventually(hub.Subscribers).Should(Equal(1))
			hub.Publish(instance("g", 500))
			Expect(indexOf(receive(fast, 1)[0])).To(BeEquivalentTo(500))
		})
	})

	Describe("ending", func() {
		It("closes the channel on Close, with no error, and forgets the subscriber", func() {
			sub := hub.Subscribe(0, events.Filter{})
			Expect(hub.Subscribers()).To(Equal(1))
			sub.Close()
			sub.Close()
			drain(sub)
			Expect(sub.Err()).NotTo(HaveOccurred())
			Eventually(hub.Subscribers).Should(BeZero())
			hub.Publish(instance("g", 0))
		})

		It("ends every subscription with ErrHubClosed when the hub closes, also one blocked on its reader", func() {
			idle := subscribe(hub, 0, events.Filter{})
			blocked := subscribe(hub, 0, events.Filter{})
			publishN(hub, "g", 90)
			receive(idle, 90)

			hub.Close()
			drain(idle)
			drain(blocked)
			Expect(idle.Err()).To(MatchError(events.ErrHubClosed))
			Expect(blocked.Err()).To(MatchError(events.ErrHubClosed))
			Eventually(hub.Subscribers).Should(BeZero())

			late := hub.Subscribe(0, events.Filter{})
			Expect(drain(late)).To(BeEmpty())
			Expect(late.Err()).To(MatchError(events.ErrHubClosed))
			last := hub.LastID()
			hub.Publish(instance("g", 90))
			Expect(hub.LastID()).To(Equal(last), "events after Close are dropped")
		})
	})

	It("keeps per-key order and gap-free ids with concurrent publishers and subscribers", func() {
		const publishers, perPublisher, subscribers = 8, 400, 4
		big := events.NewHub(events.WithHistory(publishers * perPublisher))
		DeferCleanup(big.Close)

		var subs []*events.Subscription
		for range subscribers {
			subs = append(subs, subscribe(big, 0, events.Filter{}))
		}
		results := make([][]events.Event, subscribers)
		var readers sync.WaitGroup
		for i, sub := range subs {
			readers.Add(1)
			go func() {
				defer GinkgoRecover()
				defer readers.Done()
				results[i] = receive(sub, publishers*perPublisher)
			}()
		}

		var writers sync.WaitGroup
		for p := range publishers {
			writers.Add(1)
			go func() {
				defer writers.Done()
				guid := fmt.Sprintf("lrp-%d", p)
				for i := 0; i < perPublisher; i += 2 {
					big.Publish(instance(guid, int32(i)), instance(guid, int32(i+1)))
				}
			}()
		}
		writers.Wait()
		readers.Wait()

		for _, got := range results {
			expectConsecutive(got, results[0][0].ID)
			next := map[string]int32{}
			for _, e := range got {
				Expect(indexOf(e)).To(Equal(next[e.Key]), "events of %s out of order", e.Key)
				next[e.Key]++
			}
			Expect(next).To(HaveLen(publishers))
		}
	})
})
