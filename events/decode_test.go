package events_test

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"code.cloudfoundry.org/lager/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/models"
)

// encodedLog is a log whose payloads are protobuf's encoding, except
// those the test marks undecodable.
type encodedLog struct {
	boundsLog
	decodes atomic.Int64
}

var errUndecodable = errors.New("undecodable payload")

func (l *encodedLog) DecodePayload(eventType string, stored []byte) (proto.Message, error) {
	l.decodes.Add(1)
	if string(stored) == "undecodable" {
		return nil, errUndecodable
	}
	payload := models.NewEventPayload(eventType)
	return payload, proto.Unmarshal(stored, payload)
}

func logEvent(id uint64, e models.Event) events.Logged {
	GinkgoHelper()
	stored, err := proto.Marshal(e.Payload)
	Expect(err).NotTo(HaveOccurred())
	return events.Logged{ID: id, Type: e.Type, Key: e.Key, Stored: stored}
}

var _ = Describe("A hub keeping its log's events packed", func() {
	var (
		log *encodedLog
		hub *events.Hub
	)

	BeforeEach(func() {
		log = &encodedLog{}
		ctx, cancel := context.WithCancel(context.Background())
		DeferCleanup(cancel)
		var err error
		hub, _, err = events.Follow(ctx, log, time.Hour, lager.NewLogger("decode-test"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(hub.Close)
	})

	It("decodes an event that can concern a cell once as it keeps it, and the others only for a subscriber that takes them, once for all of them", func() {
		cellSub := subscribe(hub, 0, events.Filter{CellID: "cell-1"})
		Expect(hub.Append(
			logEvent(1, models.ActualLRPCreated(&models.ActualLRP{ProcessGuid: "web", CellId: "cell-1"})),
			logEvent(2, models.DesiredLRPCreated(&models.DesiredLRP{ProcessGuid: "web", Instances: 1})),
			logEvent(3, models.ActualLRPCreated(&models.ActualLRP{ProcessGuid: "api", CellId: "cell-2"})),
		)).To(Succeed())
		log.last.Store(3)
		Expect(log.decodes.Load()).To(Equal(int64(2)), "the two actual LRP events, for their cells")

		got := receive(cellSub, 1)
		Expect(got[0].ID).To(Equal(uint64(1)))
		Expect(got[0].Payload.(*models.ActualLRPCreatedEvent).GetActualLrp().GetProcessGuid()).To(Equal("web"))
		expectQuiet(cellSub)
		Expect(log.decodes.Load()).To(Equal(int64(2)), "the cell's stream took the payload decoded as it was kept")

		everything := subscribe(hub, 1, events.Filter{})
		got = receive(everything, 2)
		Expect(got[0].Payload.(*models.DesiredLRPCreatedEvent).GetDesiredLrp().GetInstances()).To(Equal(int32(1)))
		Expect(got[1].Payload.(*models.ActualLRPCreatedEvent).GetActualLrp().GetCellId()).To(Equal("cell-2"))
		Expect(log.decodes.Load()).To(Equal(int64(3)), "the desired LRP's event, which nothing had decoded")

		By("giving every other subscriber that takes it the same payload, decoded once")
		var payloads []proto.Message
		for range 5 {
			payloads = append(payloads, receive(subscribe(hub, 1, events.Filter{}), 1)[0].Payload)
		}
		for _, p := range payloads {
			Expect(p).To(BeIdenticalTo(got[0].Payload))
		}
		Expect(log.decodes.Load()).To(Equal(int64(3)))
	})

	It("keeps nothing of a batch holding an event it cannot learn the cells of", func() {
		bad := logEvent(2, models.ActualLRPCreated(&models.ActualLRP{ProcessGuid: "web"}))
		bad.Stored = []byte("undecodable")
		err := hub.Append(logEvent(1, models.DesiredLRPCreated(&models.DesiredLRP{ProcessGuid: "web"})), bad)
		Expect(err).To(MatchError(errUndecodable))
		Expect(err.Error()).To(ContainSubstring("actual_lrp_created event at 2"))
		Expect(hub.LastID()).To(BeZero())
	})

	It("ends a stream that reaches a payload it cannot decode, naming the event", func() {
		bad := logEvent(2, models.DesiredLRPCreated(&models.DesiredLRP{ProcessGuid: "api"}))
		bad.Stored = []byte("undecodable")
		sub := subscribe(hub, 0, events.Filter{})
		Expect(hub.Append(logEvent(1, models.DesiredLRPCreated(&models.DesiredLRP{ProcessGuid: "web"})), bad)).To(Succeed())

		got := receive(sub, 1)
		Expect(got[0].Key).To(Equal("web"))
		Eventually(sub.Events()).Should(BeClosed())
		Expect(sub.Err()).To(MatchError(errUndecodable))
		Expect(sub.Err().Error()).To(ContainSubstring("desired_lrp_created event at 2"))
	})
})
