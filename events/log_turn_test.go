package events_test

import (
	"context"
	"math"
	"sync"
	"time"

	"code.cloudfoundry.org/lager/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/models"
)

// pagedLog is a log of events 1..size, all kept, that counts the reads
// of it running at once; each read takes a millisecond, so that reads
// that could overlap do.
type pagedLog struct {
	encodedLog
	size uint64

	mu              sync.Mutex
	reading, widest int
}

func newPagedLog(size uint64) *pagedLog {
	l := &pagedLog{size: size}
	l.last.Store(size)
	return l
}

func (l *pagedLog) ReadLogged(ctx context.Context, after uint64, limit int) ([]events.Logged, error) {
	if after >= l.size {
		return nil, nil // the tailer, at the end of the log
	}
	l.mu.Lock()
	l.reading++
	l.widest = max(l.widest, l.reading)
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.reading--
		l.mu.Unlock()
	}()
	time.Sleep(time.Millisecond)
	var page []events.Logged
	for id := after + 1; id <= l.size && len(page) < limit; id++ {
		stored, err := proto.Marshal(instance("logged", int32(id)).Payload)
		if err != nil {
			return nil, err
		}
		page = append(page, events.Logged{ID: id, Type: models.EventActualLRPCreated, Key: "logged", Stored: stored})
	}
	return page, nil
}

// widestRead is the most reads of the log that ran at once.
func (l *pagedLog) widestRead() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.widest
}

// hubOn is a hub following log from its end, as a board's is, with a
// history of 10 events, so that every resume reads the log.
func hubOn(log events.Log, readers int) *events.Hub {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	hub, _, err := events.Follow(ctx, log, time.Hour, lager.NewLogger("log-turn-test"),
		events.WithHistory(10), events.WithLogReaders(readers))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(hub.Close)
	return hub
}

// receiveAll takes every event after the first from sub, concurrently
// with the others, and says whether each stream got them all in order.
func receiveAll(subs []*events.Subscription, size uint64) {
	GinkgoHelper()
	var wg sync.WaitGroup
	got := make([][]events.Event, len(subs))
	for i, sub := range subs {
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			got[i] = receive(sub, int(size-1))
		}()
	}
	wg.Wait()
	for i := range subs {
		expectConsecutive(got[i], 2)
		Expect(indexOf(got[i][len(got[i])-1])).To(Equal(int32(size)))
	}
}

var _ = Describe("Subscribers reading the log take turns", func() {
	const size = 1000

	// widestOfFour has four subscribers resume from the log's start at
	// once on a hub of that many readers, each getting every event, and
	// says how many reads of the log ran at once at most.
	widestOfFour := func(readers int) int {
		log := newPagedLog(size)
		hub := hubOn(log, readers)
		var subs []*events.Subscription
		for range 4 {
			subs = append(subs, subscribe(hub, 1, events.Filter{}))
		}
		receiveAll(subs, size)
		return log.widestRead()
	}

	It("lets only as many read the log at once as the hub is told, each still getting every event in order", func() {
		Expect(widestOfFour(1)).To(Equal(1))
	})

	It("lets more read at once when told more (so the count above could fail)", func() {
		Expect(widestOfFour(4)).To(BeNumerically(">", 1))
	})

	It("gives each client turns of its own: other clients' streams catch up beside one client's", func() {
		log := newPagedLog(size)
		hub := hubOn(log, 1)
		var subs []*events.Subscription
		for _, client := range []string{"cell-a", "cell-b", "cell-c", "cell-d"} {
			sub := hub.SubscribeAs(client, 1, events.Filter{})
			DeferCleanup(sub.Close)
			subs = append(subs, sub)
		}
		receiveAll(subs, size)
		Expect(log.widestRead()).To(BeNumerically(">", 1))
		Eventually(func() int { reading, waiting := hub.LogReaders(); return reading + waiting }).Should(BeZero())
	})

	It("gives the turn to a waiting subscriber once the one holding it has taken nothing for a while, and hands the first the rest later", func() {
		log := newPagedLog(size)
		hub := hubOn(log, 1)
		idle := subscribe(hub, 1, events.Filter{})
		// The idle one's feeder has read a page and filled its channel:
		// it holds the turn, waiting for its reader.
		Eventually(func() int { return len(idle.Events()) }).Should(Equal(64))

		began := time.Now()
		reading := subscribe(hub, 1, events.Filter{})
		receiveAll([]*events.Subscription{reading}, size)
		Expect(time.Since(began)).To(BeNumerically("<", 3*time.Second))

		receiveAll([]*events.Subscription{idle}, size)
	})

	It("ends a subscriber waiting for its turn when it is closed, and when the hub closes", func() {
		log := newPagedLog(size)
		hub := hubOn(log, 1)
		holder := subscribe(hub, 1, events.Filter{})
		Eventually(func() int { return len(holder.Events()) }).Should(Equal(64))

		waiting := hub.Subscribe(1, events.Filter{})
		closed := hub.Subscribe(1, events.Filter{})
		Expect(hub.Subscribers()).To(Equal(3))
		closed.Close()
		Eventually(closed.Events()).Should(BeClosed())
		Expect(closed.Err()).NotTo(HaveOccurred())
		Eventually(hub.Subscribers).Should(Equal(2))

		hub.Close()
		drain(waiting)
		Expect(waiting.Err()).To(MatchError(events.ErrHubClosed))
	})
})

var _ = Describe("Resuming after the largest id", func() {
	It("is told it lost events and goes on with the history, as after any id the log never gave, rather than replaying the log from its start", func() {
		log := newPagedLog(1000)
		hub := hubOn(log, 1)
		for _, last := range []uint64{math.MaxUint64, math.MaxUint64 - 1} {
			sub := subscribe(hub, last, events.Filter{})
			got := receive(sub, 1)
			Expect(got[0].Type).To(Equal(models.EventEventsLost))
			Expect(got[0].Payload).To(Equal(&models.EventsLostEvent{LastEventId: last, OldestKeptId: 1001}))
			expectQuiet(sub)
		}
		Expect(log.widestRead()).To(BeZero(), "nothing read from the log")
	})
})
