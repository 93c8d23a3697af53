package events_test

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"code.cloudfoundry.org/lager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/events"
)

// boundsLog is a log whose last position the test sets; the hub reads
// nothing from it.
type boundsLog struct{ last atomic.Uint64 }

func (l *boundsLog) SequenceEvents(context.Context, int) (int, error) { return 0, nil }

func (l *boundsLog) ReadLogged(context.Context, uint64, int) ([]events.Logged, error) {
	return nil, nil
}

func (l *boundsLog) DecodePayload(string, []byte) (proto.Message, error) {
	return nil, errors.New("boundsLog keeps no payloads")
}

func (l *boundsLog) EventLogBounds(context.Context) (uint64, uint64, error) {
	return 1, l.last.Load(), nil
}

// following is a hub placed at the end of log (empty), as a board's
// tailer places it; the tailer reads nothing from log, so the hub has only
// what the test appends.
func following(log *boundsLog) *events.Hub {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	hub, _, err := events.Follow(ctx, log, time.Hour, lager.NewLogger("catch-up-test"))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(hub.Close)
	return hub
}

func logged(ids ...uint64) []events.Logged {
	var got []events.Logged
	for _, id := range ids {
		got = append(got, events.Logged{ID: id})
	}
	return got
}

var _ = Describe("Catching up with the log", func() {
	It("returns once the hub has published every event the log held when asked, and not before", func() {
		log := &boundsLog{}
		hub := following(log)
		log.last.Store(5)
		Expect(hub.Append(logged(1, 2, 3)...)).To(Succeed())

		done := make(chan error, 1)
		go func() { done <- hub.CatchUp(context.Background()) }()
		Consistently(done).WithTimeout(100 * time.Millisecond).ShouldNot(Receive())
		// What the log gains after the call does not hold it back.
		log.last.Store(9)
		Expect(hub.Append(logged(4)...)).To(Succeed())
		Consistently(done).WithTimeout(100 * time.Millisecond).ShouldNot(Receive())
		Expect(hub.Append(logged(5)...)).To(Succeed())
		Eventually(done).Should(Receive(BeNil()))
	})

	It("gives up with the context, and when the hub closes", func() {
		log := &boundsLog{}
		hub := following(log)
		log.last.Store(5)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		Expect(hub.CatchUp(ctx)).To(MatchError(context.DeadlineExceeded))

		done := make(chan error, 1)
		go func() { done <- hub.CatchUp(context.Background()) }()
		Consistently(done).WithTimeout(50 * time.Millisecond).ShouldNot(Receive())
		hub.Close()
		Eventually(done).Should(Receive(MatchError("the event hub is closed")))
	})

	It("has nothing to wait for on a hub without a log, which publishes as it is told", func() {
		Expect(events.NewHub().CatchUp(context.Background())).To(Succeed())
	})
})
