package sqldb_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/models"
)

// sequence logs every committed event of the outbox, as a tailer does.
func sequence(b *board, store *sqldb.SQLDB) {
	GinkgoHelper()
	for {
		moved, err := store.SequenceEvents(b.ctx, 5)
		Expect(err).NotTo(HaveOccurred())
		if moved == 0 {
			return
		}
	}
}

// readAll sequences the outbox and reads the whole log after position
// after.
func readAll(b *board, store *sqldb.SQLDB, after uint64) []events.Event {
	GinkgoHelper()
	sequence(b, store)
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

// eventsOf drops the positions.
func eventsOf(logged []events.Event) []models.Event {
	out := make([]models.Event, len(logged))
	for i, e := range logged {
		out[i] = e.Event
	}
	return out
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
		sequence(b, b.store)
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

	It("logs a transaction's events about one LRP as one row, and reads on from any position inside it", func() {
		_, before := bounds()
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 2))
		Expect(err).NotTo(HaveOccurred())
		whole := readAll(b, b.store, before)
		Expect(eventTypes(eventsOf(whole))).To(Equal([]string{"desired_lrp_created", "actual_lrp_created", "actual_lrp_created", "operation_changed"}))

		By("storing the four events in one row at the last one's position")
		var rows, events, position int64
		Expect(b.conn.QueryRow(dialect.Rebind(dialect.Name(b.dialect), "SELECT COUNT(*), SUM(event_count), MAX(position) FROM event_log WHERE position > ?"), int64(before)).
			Scan(&rows, &events, &position)).To(Succeed())
		Expect([]int64{rows, events, position}).To(Equal([]int64{1, 4, int64(before) + 4}))

		By("reading from every position inside it, whole or a page at a time")
		for k := range uint64(4) {
			page, err := b.store.ReadEvents(b.ctx, before+k, 100)
			Expect(err).NotTo(HaveOccurred())
			expectContiguous(page, before+k+1)
			Expect(eventsOf(page)).To(HaveLen(int(4 - k)))
			for i, e := range page {
				Expect(e.Type).To(Equal(whole[k+uint64(i)].Type))
				Expect(e.Key).To(Equal("web"))
				Expect(e.Payload).To(EqualProto(whole[k+uint64(i)].Payload))
			}
			Expect(readAll(b, b.store, before+k)).To(HaveLen(int(4 - k)))
		}
		page, err := b.store.ReadEvents(b.ctx, before+1, 2)
		Expect(err).NotTo(HaveOccurred())
		Expect(page).To(HaveLen(2))
		expectContiguous(page, before+2)

		By("saying where it begins, and that convergence misses none of it from inside it")
		first, last := bounds()
		Expect([]uint64{first, last}).To(Equal([]uint64{before + 1, before + 4}))
		for k := range uint64(4) {
			guids, lost, err := b.store.ConvergenceChanges(b.ctx, before+k, last)
			Expect(err).NotTo(HaveOccurred())
			Expect(lost).To(BeFalse())
			Expect(guids).To(Equal([]string{"web"}))
		}
	})

	It("hands a bundle's events out one by one, each in memory of its own size: packed again when large, as they are when small", func() {
		_, before := bounds()
		large := newLRP("large", "apps", 1)
		large.Annotation = strings.Repeat("a", 8000)
		for _, lrp := range []*models.DesiredLRP{large, newLRP("small", "apps", 1)} {
			_, err := b.store.DesireLRP(b.ctx, lrp)
			Expect(err).NotTo(HaveOccurred())
		}
		sequence(b, b.store)
		logged, err := b.store.ReadLogged(b.ctx, before, 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(logged).To(HaveLen(6))
		for _, l := range logged {
			// Not a slice of the bundle's expanded blob, nor pack's buffer
			// (the size unpacked): a slice of its own, as the allocator
			// rounds it.
			Expect(cap(l.Stored)).To(BeNumerically("<=", 2*len(l.Stored)), "%s of %s: a slice of its own", l.Type, l.Key)
			payload, err := b.store.DecodePayload(l.Type, l.Stored)
			Expect(err).NotTo(HaveOccurred())
			packed := len(l.Stored) >= 2 && l.Stored[0] == 0x00 && l.Stored[1] == 0x02
			if l.Key == "small" || l.Type == models.EventActualLRPCreated {
				Expect(packed).To(BeFalse(), "%s of %s, small, as it is", l.Type, l.Key)
				Expect(proto.Size(payload)).To(Equal(len(l.Stored)))
				continue
			}
			Expect(packed).To(BeTrue(), "%s of %s, with the 8 KB annotation, packed", l.Type, l.Key)
			Expect(len(l.Stored)).To(BeNumerically("<", 1000))
			Expect(proto.Size(payload)).To(BeNumerically(">", 8000))
		}
	})

	It("refuses a bundle row that does not hold its event_count events, naming its position", func() {
		_, last := bounds()
		b.exec("INSERT INTO event_outbox (event_type, event_key, payload, event_count) VALUES ('bundle', 'web', ?, 3)",
			sqldb.AppendBundle(nil, []string{"desired_lrp_changed", "operation_changed"}, [][]byte{nil, nil}))
		sequence(b, b.store)
		_, err := b.store.ReadEvents(b.ctx, last, 10)
		Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("event_log row at %d: malformed event bundle: 2 events, event_count 3", last+3))))
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
		b.exec("INSERT INTO event_outbox (event_type, event_key, payload) VALUES ('from_the_future', 'web', ?)", []byte{0x0a, 0x01, 0x78})
		_, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Annotation: stringp("after")})
		Expect(err).NotTo(HaveOccurred())

		logged := readAll(b, b.store, last)
		expectContiguous(logged, last+1)
		Expect(logged[0].Type).To(Equal("from_the_future"))
		Expect(logged[0].Payload).To(BeAssignableToTypeOf(&emptypb.Empty{}))
		Expect(logged[1].Type).To(Equal(models.EventDesiredLRPChanged))
	})

	It("stores a changed event packed, and reads it back as it was published", func() {
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
		Expect(err).NotTo(HaveOccurred())
		_, last := bounds()
		sink := recordEvents(b)
		_, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Annotation: stringp("after")})
		Expect(err).NotTo(HaveOccurred())

		logged := readAll(b, b.store, last)
		published := sink.take()
		Expect(eventsOf(logged)).To(HaveLen(len(published)))
		for i, e := range logged {
			Expect(e.Type).To(Equal(published[i].Type))
			Expect(e.Payload).To(EqualProto(published[i].Payload))
		}
		// The update's two events, the LRP's change and its operation's,
		// are one bundle, at the second one's position.
		var raw []byte
		Expect(b.conn.QueryRow(dialect.Rebind(dialect.Name(b.dialect), "SELECT payload FROM event_log WHERE position = ?"), int64(logged[1].ID)).Scan(&raw)).To(Succeed())
		Expect(eventTypes(eventsOf(logged))).To(Equal([]string{models.EventDesiredLRPChanged, models.EventOperationChanged}))
		Expect(raw[:2]).To(Equal([]byte{0x00, 0x02}))
		Expect(len(raw)).To(BeNumerically("<", proto.Size(logged[0].Payload)))
	})

	It("stores an instance's changed event packed too, and reads it back as it was published", func() {
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
		Expect(err).NotTo(HaveOccurred())
		b.exec("UPDATE actual_lrps SET cell_id = 'cell-1' WHERE process_guid = 'web'")
		_, last := bounds()
		sink := recordEvents(b)
		key := models.ActualLRPKey{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY}
		_, err = b.store.ClaimActualLRP(b.ctx, key, models.Caller{InstanceGuid: "ig-1", CellID: "cell-1"})
		Expect(err).NotTo(HaveOccurred())

		logged := readAll(b, b.store, last)
		published := sink.take()
		Expect(eventsOf(logged)).To(HaveLen(len(published)))
		Expect(logged[0].Type).To(Equal(models.EventActualLRPChanged))
		Expect(logged[0].Payload).To(EqualProto(published[0].Payload))
		var raw []byte
		Expect(b.conn.QueryRow(dialect.Rebind(dialect.Name(b.dialect), "SELECT payload FROM event_log WHERE position = ?"), int64(logged[0].ID)).Scan(&raw)).To(Succeed())
		Expect(raw[:2]).To(Equal([]byte{0x00, 0x02}))
		Expect(len(raw)).To(BeNumerically("<", proto.Size(logged[0].Payload)))
	})

	It("reads an event logged before payloads were packed: plain protobuf", func() {
		_, last := bounds()
		lrp := newLRP("web", "apps", 1)
		lrp.Definition = nil
		changed := &models.DesiredLRPChangedEvent{Before: lrp, After: proto.CloneOf(lrp)}
		changed.After.Annotation = "after"
		raw, err := proto.Marshal(changed)
		Expect(err).NotTo(HaveOccurred())
		b.exec("INSERT INTO event_outbox (event_type, event_key, payload) VALUES ('desired_lrp_changed', 'web', ?)", raw)

		logged := readAll(b, b.store, last)
		Expect(logged).To(HaveLen(1))
		Expect(logged[0].Payload).To(EqualProto(changed))
	})

	It("logs a write that commits late after what was logged meanwhile, and holds nobody up while it has not", func() {
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
		Expect(err).NotTo(HaveOccurred())
		_, before := bounds()

		// A write that appended its event first, with the lower outbox id,
		// and has not committed ...
		tx, err := b.conn.BeginTx(b.ctx, nil)
		Expect(err).NotTo(HaveOccurred())
		defer tx.Rollback()
		raw, err := proto.Marshal(&models.CellChangedEvent{After: &models.Cell{CellId: "late"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(execIn(b, tx, "INSERT INTO event_outbox (event_type, event_key, payload) VALUES ('cell_changed', 'late', ?)", raw)).To(Succeed())

		// ... neither holds up a write that commits meanwhile nor its
		// logging (SQLite has one writer at a time: the late write there
		// is simply the later one) ...
		if b.dialect != sqldb.SQLite {
			_, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Annotation: stringp("meanwhile")})
			Expect(err).NotTo(HaveOccurred())
			meanwhile := readAll(b, b.store, before)
			Expect(eventTypes(eventsOf(meanwhile))).To(Equal([]string{"desired_lrp_changed", "operation_changed"}))
			before += 2
		}

		// ... and is logged after it once it commits, at the next positions.
		Expect(tx.Commit()).To(Succeed())
		late := readAll(b, b.store, before)
		expectContiguous(late, before+1)
		Expect(eventTypes(eventsOf(late))).To(Equal([]string{"cell_changed"}))
		Expect(late[0].Key).To(Equal("late"))
	})

	It("leaves an uncommitted row between two committed ones for a later run, and logs it once it commits", func() {
		if b.dialect == sqldb.SQLite {
			Skip("SQLite has one writer at a time: no commit lands while a write is open")
		}
		_, before := bounds()
		appendCell := func(q interface {
			ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		}, cell string) {
			GinkgoHelper()
			raw, err := proto.Marshal(&models.CellChangedEvent{After: &models.Cell{CellId: cell}})
			Expect(err).NotTo(HaveOccurred())
			_, err = q.ExecContext(b.ctx, dialect.Rebind(dialect.Name(b.dialect), "INSERT INTO event_outbox (event_type, event_key, payload) VALUES ('cell_changed', ?, ?)"), cell, raw)
			Expect(err).NotTo(HaveOccurred())
		}
		// Outbox ids in order: first (committed), middle (open), last
		// (committed). A run moving "first to last" must not take middle.
		appendCell(b.conn, "first")
		tx, err := b.conn.BeginTx(b.ctx, nil)
		Expect(err).NotTo(HaveOccurred())
		defer tx.Rollback()
		appendCell(tx, "middle")
		appendCell(b.conn, "last")

		logged := readAll(b, b.store, before)
		expectContiguous(logged, before+1)
		Expect([]string{logged[0].Key, logged[1].Key}).To(Equal([]string{"first", "last"}))
		Expect(logged).To(HaveLen(2))

		Expect(tx.Commit()).To(Succeed())
		late := readAll(b, b.store, before+2)
		expectContiguous(late, before+3)
		Expect(late).To(HaveLen(1))
		Expect(late[0].Key).To(Equal("middle"))
	})

	It("sequences on once the database ends the idle transaction of a board cut off holding the log's head", func() {
		if b.dialect == sqldb.SQLite {
			Skip("SQLite runs in the board's process: no board is cut off from it")
		}
		// The operator's own limit, 1 s, shows what the board's default
		// (sqldb.IdleTransactionLimit) does.
		dsn := migratedDatabaseFor(b.dialect).database.DSN
		separator := "?"
		if strings.Contains(dsn, "?") {
			separator = "&"
		}
		limit := map[string]string{sqldb.Postgres: "idle_in_transaction_session_timeout=1000", sqldb.MySQL: "idle_transaction_timeout=1"}[b.dialect]
		cut, err := sqldb.Open(b.ctx, b.dialect, dsn+separator+limit)
		Expect(err).NotTo(HaveOccurred())
		defer cut.Close()

		// A board's sequencer locks the head, then its board is cut off:
		// the transaction waits on a board that never comes back.
		tx, err := cut.BeginTx(b.ctx, nil)
		Expect(err).NotTo(HaveOccurred())
		defer tx.Rollback()
		var head int64
		Expect(tx.QueryRowContext(b.ctx, "SELECT position FROM event_log_head WHERE id = 1 FOR UPDATE").Scan(&head)).To(Succeed())

		// Writes go on; their events wait for the head, and are logged
		// once the database has ended the cut board's transaction (not
		// after MariaDB's 50 s lock wait, nor ever on Postgres).
		_, err = b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
		Expect(err).NotTo(HaveOccurred())
		started := time.Now()
		moved, err := b.store.SequenceEvents(b.ctx, 10)
		Expect(err).NotTo(HaveOccurred())
		Expect(moved).To(Equal(1), "the desire's one row")
		Expect(time.Since(started)).To(BeNumerically("<", 10*time.Second))
		logged, err := b.store.ReadEvents(b.ctx, uint64(head), 10)
		Expect(err).NotTo(HaveOccurred())
		expectContiguous(logged, uint64(head)+1)
		Expect(eventTypes(eventsOf(logged))).To(Equal([]string{"desired_lrp_created", "actual_lrp_created", "operation_changed"}))
		Expect(tx.Commit()).NotTo(Succeed(), "the cut board's transaction is over")
	})

	Describe("trimming", func() {
		// logEvents desires n more LRPs of one instance: 3 events each,
		// one row.
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

			// Each desire's three events are one row (a bundle), at
			// first+2, first+5, … first+14.
			deleted, err := b.store.TrimEventLog(b.ctx, time.Hour, 4, 3, 2)
			Expect(err).NotTo(HaveOccurred())
			Expect(deleted).To(BeEquivalentTo(2), "two statements of three positions, a row each")
			Expect(firstKept()).To(Equal(first + 6))

			// The newest four events are the last row's and the one
			// before's last: that row is kept whole.
			deleted, err = b.store.TrimEventLog(b.ctx, time.Hour, 4, 3, 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(deleted).To(BeEquivalentTo(1))
			newFirst, newLast := bounds()
			Expect(newFirst).To(Equal(last - 5))
			Expect(newLast).To(Equal(last))
			expectContiguous(readAll(b, b.store, 0), last-5)
		})

		It("works off a backlog of bundles statement by statement, though each holds fewer rows than its batch", func() {
			logEvents(10)
			first, last := bounds()
			deleted, err := b.store.TrimEventLog(b.ctx, time.Hour, 3, 9, 2)
			Expect(err).NotTo(HaveOccurred())
			Expect(deleted).To(BeEquivalentTo(6), "two statements of nine positions, three rows each")
			Expect(firstKept()).To(Equal(first + 18))
			deleted, err = b.store.TrimEventLog(b.ctx, time.Hour, 3, 9, 100)
			Expect(err).NotTo(HaveOccurred())
			Expect(deleted).To(BeEquivalentTo(3))
			Expect(firstKept()).To(Equal(last - 2))
		})

		It("deletes what is older than the retention by the database's clock, and nothing younger", func() {
			logEvents(2)
			first, last := bounds()
			// The first desire's three events are from long ago.
			b.exec("UPDATE event_log SET created_at = 0 WHERE position < ?", int64(first+3))

			deleted, err := b.store.TrimEventLog(b.ctx, time.Hour, 1_000_000, 100, 10)
			Expect(err).NotTo(HaveOccurred())
			Expect(deleted).To(BeEquivalentTo(1), "one row, the bundle of the first desire's events")
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
			newStore(b.conn, b.dialect, sqldb.WithClock(b.clock.Now)),
			newStore(b.conn, b.dialect, sqldb.WithClock(b.clock.Now)),
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
