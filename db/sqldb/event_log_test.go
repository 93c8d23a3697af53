package sqldb_test

import (
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/models"
)

// readAll reads the whole log after position after.
func readAll(b *board, store *sqldb.SQLDB, after uint64) []events.Event {
	GinkgoHelper()
	var all []events.Event
	for {
		page, err := store.ReadEvents(b.ctx, after, 7)
		Expect(err).NotTo(HaveOccurred())
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		after = page[len(page)-1].ID
	}
}

// expectContiguous checks that positions follow each other from first.
func expectContiguous(logged []events.Event, first uint64) {
	GinkgoHelper()
	for i, e := range logged {
		Expect(e.ID).To(Equal(first+uint64(i)), "position of event %d of %d", i, len(logged))
	}
}

var _ = forEachDialect("the event log", func(b *board) {
	bounds := func() (uint64, uint64) {
		GinkgoHelper()
		first, last, err := b.store.EventLogBounds(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		return first, last
	}

	firstKept := func() uint64 {
		GinkgoHelper()
		first, _ := bounds()
		return first
	}

	It("keeps a write's events at consecutive positions after the last one, decoded as they were logged", func() {
		_, before := bounds()
		sink := recordEvents(b)
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 2))
		Expect(err).NotTo(HaveOccurred())

		logged := readAll(b, b.store, before)
		expectContiguous(logged, before+1)
		published := sink.take()
		Expect(logged).To(HaveLen(len(published)))
		for i, e := range logged {
			Expect(e.Type).To(Equal(published[i].Type))
			Expect(e.Key).To(Equal("web"))
			Expect(e.Payload).To(EqualProto(published[i].Payload))
		}
		Expect(eventTypes(published)).To(Equal([]string{"desired_lrp_created", "actual_lrp_created", "actual_lrp_created", "operation_changed"}))
		first, last := bounds()
		Expect(first).To(Equal(before + 1))
		Expect(last).To(Equal(before + 4))
	})

	It("says it keeps nothing when it is empty: the first position is the one after the last", func() {
		first, last := bounds()
		Expect(first).To(Equal(last + 1))
		Expect(b.store.ReadEvents(b.ctx, last, 10)).To(BeEmpty())
	})

	It("logs nothing for a write that changes nothing or is refused", func() {
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
		Expect(err).NotTo(HaveOccurred())
		_, last := bounds()
		_, err = b.store.UpdateDesiredLRP(b.ctx, "nobody", &models.DesiredLRPUpdate{Annotation: stringp("x")})
		Expect(err).To(HaveOccurred())
		err = b.store.RemoveDesiredLRP(b.ctx, "nobody")
		Expect(err).To(HaveOccurred())
		_, again := bounds()
		Expect(again).To(Equal(last))
	})

	It("hands an event of a type it does not know back with an empty payload, in its place", func() {
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
		Expect(err).NotTo(HaveOccurred())
		_, last := bounds()
		tx, err := b.conn.BeginTx(b.ctx, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(execIn(b, tx, "UPDATE event_log_head SET position = position + 1 WHERE id = 1")).To(Succeed())
		Expect(execIn(b, tx, "INSERT INTO event_log (position, event_type, event_key, payload, created_at) SELECT position, 'from_the_future', 'web', ?, 0 FROM event_log_head WHERE id = 1", []byte{0x0a, 0x01, 0x78})).To(Succeed())
		Expect(tx.Commit()).To(Succeed())
		_, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Annotation: stringp("after")})
		Expect(err).NotTo(HaveOccurred())

		logged := readAll(b, b.store, last)
		expectContiguous(logged, last+1)
		Expect(logged[0].Type).To(Equal("from_the_future"))
		Expect(logged[0].Payload).To(BeAssignableToTypeOf(&emptypb.Empty{}))
		Expect(logged[1].Type).To(Equal(models.EventDesiredLRPChanged))
	})

	Describe("trimming", func() {
		// logEvents desires n more LRPs of one instance: 3 events each.
		desired := 0
		logEvents := func(n int) {
			GinkgoHelper()
			for range n {
				desired++
				_, err := b.store.DesireLRP(b.ctx, newLRP(fmt.Sprintf("lrp-%d", desired), "apps", 1))
				Expect(err).NotTo(HaveOccurred())
			}
		}

		It("keeps the newest max events, a batch per statement, and reads on from there", func() {
			logEvents(5)
			first, last := bounds()
			Expect(last - first + 1).To(BeEquivalentTo(15))

			deleted, err := b.store.TrimEventLog(b.ctx, time.Hour, 4, 3, 2)
			Expect(err).NotTo(HaveOccurred())
			Expect(deleted).To(BeEquivalentTo(6), "two statements of three")
			Expect(firstKept()).To(Equal(first + 6))

			deleted, err = b.store.TrimEventLog(b.ctx, time.Hour, 4, 3, 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(deleted).To(BeEquivalentTo(5))
			newFirst, newLast := bounds()
			Expect(newFirst).To(Equal(last - 3))
			Expect(newLast).To(Equal(last))
			expectContiguous(readAll(b, b.store, 0), last-3)
		})

		It("deletes what is older than the retention by the database's clock, and nothing younger", func() {
			logEvents(2)
			first, last := bounds()
			// The first desire's three events are from long ago.
			b.exec("UPDATE event_log SET created_at = 0 WHERE position < ?", int64(first+3))

			deleted, err := b.store.TrimEventLog(b.ctx, time.Hour, 1_000_000, 100, 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(deleted).To(BeEquivalentTo(3))
			Expect(firstKept()).To(Equal(first + 3))

			deleted, err = b.store.TrimEventLog(b.ctx, time.Hour, 1_000_000, 100, 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(deleted).To(BeZero())
			_, stillLast := bounds()
			Expect(stillLast).To(Equal(last))
		})

		It("keeps numbering on after trimming everything", func() {
			logEvents(1)
			_, last := bounds()
			_, err := b.store.TrimEventLog(b.ctx, time.Hour, 0, 100, 10)
			Expect(err).NotTo(HaveOccurred())
			first, stillLast := bounds()
			Expect(first).To(Equal(last + 1))
			Expect(stillLast).To(Equal(last))

			logEvents(1)
			expectContiguous(readAll(b, b.store, 0), last+1)
		})
	})

	It("numbers the writes of two boards racing on one LRP in commit order, without holes", func() {
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
		Expect(err).NotTo(HaveOccurred())
		_, before := bounds()
		boards := []*sqldb.SQLDB{
			sqldb.New(b.conn, b.dialect, sqldb.WithClock(b.clock.Now)),
			sqldb.New(b.conn, b.dialect, sqldb.WithClock(b.clock.Now)),
		}

		const writers, updates = 3, 8
		var wg sync.WaitGroup
		for _, store := range boards {
			for range writers {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					for range updates {
						_, err := store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Annotation: stringp("racing")})
						Expect(err).NotTo(HaveOccurred())
					}
				}()
			}
		}
		wg.Wait()

		logged := readAll(b, boards[1], before)
		expectContiguous(logged, before+1)
		Expect(logged).To(HaveLen(2 * 2 * writers * updates))
		for i := 0; i < len(logged); i += 2 {
			commit := i/2 + 1
			changed := logged[i].Payload.(*models.DesiredLRPChangedEvent)
			Expect(changed.Before.ModificationTag.Index).To(BeEquivalentTo(commit-1), "event at %d", logged[i].ID)
			Expect(changed.After.ModificationTag.Index).To(BeEquivalentTo(commit), "event at %d", logged[i].ID)
		}
	})
})
