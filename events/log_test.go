package events_test

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"code.cloudfoundry.org/lager/v3"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/events"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/migrations"
	"github.com/corkboard/corkboard/models"
)

// logBoard is what a board has of the event log: a store writing to it,
// and a hub following it.
type logBoard struct {
	store  *sqldb.SQLDB
	hub    *events.Hub
	tailer *events.Tailer
}

// followingBoard opens a store on conn whose commits wake a tailer, and a
// hub of history events following the log, as cmd/bbs does. poll is the
// tailer's poll interval.
func followingBoard(conn *sql.DB, dialect string, history int, poll time.Duration) *logBoard {
	GinkgoHelper()
	b := &logBoard{}
	b.store = sqldb.New(conn, dialect, sqldb.WithEventsCommitted(func() { b.tailer.Wake() }))
	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	var err error
	b.hub, b.tailer, err = events.Follow(ctx, b.store, poll, lager.NewLogger("events-test"), events.WithHistory(history))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(b.hub.Close)
	return b
}

// desire desires guid with one instance: three events in the log.
func (b *logBoard) desire(guid string) {
	GinkgoHelper()
	_, err := b.store.DesireLRP(context.Background(), &models.DesiredLRP{
		ProcessGuid: guid, Domain: "apps", Instances: 1,
		Definition: &models.LRPDefinition{Action: &models.RunAction{Path: "/bin/" + guid}, MemoryMb: 64, DiskMb: 64},
	})
	Expect(err).NotTo(HaveOccurred())
}

func createdGuids(got []events.Event) []string {
	var guids []string
	for _, e := range got {
		if e.Type == models.EventDesiredLRPCreated {
			guids = append(guids, e.Key)
		}
	}
	return guids
}

var _ = Describe("A hub following the event log", func() {
	var conn *sql.DB

	BeforeEach(func() {
		database, err := testdb.Create(testdb.SQLite)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(database.Drop)
		conn, err = sqldb.Open(context.Background(), database.Dialect, database.DSN)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(conn.Close)
		Expect(migrations.Up(context.Background(), conn, database.Dialect)).To(Succeed())
	})

	It("streams a board's writes numbered by their log positions, at once though it polls rarely", func() {
		board := followingBoard(conn, testdb.SQLite, 100, time.Hour)
		sub := subscribe(board.hub, 0, events.Filter{})
		board.desire("web")

		got := receive(sub, 3)
		_, last, err := board.store.EventLogBounds(context.Background())
		Expect(err).NotTo(HaveOccurred())
		expectConsecutive(got, last-2)
		Expect(createdGuids(got)).To(Equal([]string{"web"}))
	})

	It("says when its last read of the log succeeded: every poll while the database answers, never after", func() {
		board := followingBoard(conn, testdb.SQLite, 100, 20*time.Millisecond)
		started := board.tailer.LastRead()
		Expect(started).To(BeTemporally("~", time.Now(), time.Second), "Start's read of the log's end counts")
		Eventually(board.tailer.LastRead).Should(BeTemporally(">", started))

		Expect(conn.Close()).To(Succeed())
		// A read under way when the database went may still succeed.
		time.Sleep(100 * time.Millisecond)
		failing := board.tailer.LastRead()
		Consistently(board.tailer.LastRead, 300*time.Millisecond).Should(Equal(failing))
	})

	It("streams what another board on the database wrote, within its poll interval", func() {
		writer := followingBoard(conn, testdb.SQLite, 100, time.Hour)
		reader := followingBoard(conn, testdb.SQLite, 100, 20*time.Millisecond)
		sub := subscribe(reader.hub, 0, events.Filter{})
		writer.desire("web")
		writer.desire("api")

		got := receive(sub, 6)
		Expect(createdGuids(got)).To(Equal([]string{"web", "api"}))
		Expect(reader.hub.LastID()).To(Equal(got[5].ID))
	})

	It("replays from the log what a resuming client missed before the board's history", func() {
		board := followingBoard(conn, testdb.SQLite, 4, time.Hour)
		board.desire("first")
		Eventually(board.hub.LastID).ShouldNot(BeZero())
		seen := board.hub.LastID()
		for i := range 5 {
			board.desire(fmt.Sprintf("later-%d", i))
		}
		Eventually(board.hub.LastID).Should(Equal(seen + 15))

		sub := subscribe(board.hub, seen, events.Filter{Types: []string{models.EventDesiredLRPCreated}})
		got := receive(sub, 5)
		Expect(createdGuids(got)).To(Equal([]string{"later-0", "later-1", "later-2", "later-3", "later-4"}))
		Expect(got[0].ID).To(Equal(seen + 1))
		expectQuiet(sub)

		board.desire("live")
		Expect(createdGuids(receive(sub, 1))).To(Equal([]string{"live"}))
	})

	It("replays from the log an event of the filtered type behind more than a batch of others, without waiting for a write", func() {
		board := followingBoard(conn, testdb.SQLite, 4, time.Hour)
		board.desire("first")
		Eventually(board.hub.LastID).ShouldNot(BeZero())
		seen := board.hub.LastID()
		// 40 desires: 120 events, none of them the one the client asks for.
		for i := range 40 {
			board.desire(fmt.Sprintf("filler-%d", i))
		}
		Expect(board.store.RemoveDesiredLRP(context.Background(), "first")).To(Succeed())
		Eventually(board.hub.LastID).Should(BeNumerically(">", seen+120))

		sub := subscribe(board.hub, seen, events.Filter{Types: []string{models.EventDesiredLRPRemoved}})
		got := receive(sub, 1)
		Expect(got[0].Type).To(Equal(models.EventDesiredLRPRemoved))
		Expect(got[0].Key).To(Equal("first"))
	})

	It("resumes a client on a board started after the events it missed, as after a restart", func() {
		before := followingBoard(conn, testdb.SQLite, 100, time.Hour)
		before.desire("web")
		Eventually(before.hub.LastID).ShouldNot(BeZero())
		seen := before.hub.LastID()
		before.desire("api")
		before.hub.Close()

		restarted := followingBoard(conn, testdb.SQLite, 100, time.Hour)
		sub := subscribe(restarted.hub, seen, events.Filter{})
		got := receive(sub, 3)
		expectConsecutive(got, seen+1)
		Expect(createdGuids(got)).To(Equal([]string{"api"}))
	})

	It("waits for an event a client saw on another board that this one has not read yet", func() {
		writer := followingBoard(conn, testdb.SQLite, 100, time.Hour)
		slow := followingBoard(conn, testdb.SQLite, 100, 300*time.Millisecond)
		writer.desire("web")
		Eventually(writer.hub.LastID).ShouldNot(BeZero())
		last := writer.hub.LastID()
		writer.desire("api")

		sub := subscribe(slow.hub, last, events.Filter{})
		got := receive(sub, 3)
		expectConsecutive(got, last+1)
		Expect(createdGuids(got)).To(Equal([]string{"api"}))
	})

	It("starts with events_lost when the log no longer keeps what follows the client's last event", func() {
		board := followingBoard(conn, testdb.SQLite, 2, time.Hour)
		board.desire("old")
		Eventually(board.hub.LastID).ShouldNot(BeZero())
		seen := board.hub.LastID() - 2
		board.desire("newer")
		board.desire("newest")
		Eventually(board.hub.LastID).Should(Equal(seen + 8))
		_, err := board.store.TrimEventLog(context.Background(), time.Hour, 4, 100, 10)
		Expect(err).NotTo(HaveOccurred())
		first, _, err := board.store.EventLogBounds(context.Background())
		Expect(err).NotTo(HaveOccurred())
		Expect(first).To(BeNumerically("<", seen+7), "the log keeps more than the history")

		sub := subscribe(board.hub, seen, events.Filter{})
		got := receive(sub, int(seen+8-first)+2)
		Expect(got[0].Type).To(Equal(models.EventEventsLost))
		Expect(got[0].ID).To(BeZero())
		Expect(got[0].Payload.(*models.EventsLostEvent).GetLastEventId()).To(Equal(seen))
		Expect(got[0].Payload.(*models.EventsLostEvent).GetOldestKeptId()).To(Equal(first), "the log's oldest, not the history's")
		expectConsecutive(got[1:], first)
	})

	It("answers a resume the log trimmed the same on a board whose history still holds it", func() {
		board := followingBoard(conn, testdb.SQLite, 100, time.Hour)
		board.desire("old")
		Eventually(board.hub.LastID).ShouldNot(BeZero())
		seen := board.hub.LastID() - 2
		board.desire("newer")
		board.desire("newest")
		Eventually(board.hub.LastID).Should(Equal(seen + 8))
		_, err := board.store.TrimEventLog(context.Background(), time.Hour, 4, 100, 10)
		Expect(err).NotTo(HaveOccurred())
		first, _, err := board.store.EventLogBounds(context.Background())
		Expect(err).NotTo(HaveOccurred())
		Expect(first).To(BeNumerically(">", seen+1), "the log trimmed what follows the client's last event")

		sub := subscribe(board.hub, seen, events.Filter{})
		got := receive(sub, int(seen+8-first)+2)
		Expect(got[0].Type).To(Equal(models.EventEventsLost))
		Expect(got[0].Payload.(*models.EventsLostEvent).GetOldestKeptId()).To(Equal(first))
		expectConsecutive(got[1:], first)
		expectQuiet(sub)
	})

	It("starts with events_lost for an id the log never gave, e.g. from a board before the log", func() {
		board := followingBoard(conn, testdb.SQLite, 100, time.Hour)
		board.desire("web")
		Eventually(board.hub.LastID).ShouldNot(BeZero())

		sub := subscribe(board.hub, uint64(time.Now().UnixMicro()), events.Filter{})
		got := receive(sub, 1)
		Expect(got[0].Type).To(Equal(models.EventEventsLost))
		board.desire("api")
		Expect(createdGuids(receive(sub, 6))).To(Equal([]string{"web", "api"}), "the history, then what follows")
	})

	It("scopes a cell's stream to its own rows, from the history and from the log alike, each payload decoded", func() {
		board := followingBoard(conn, testdb.SQLite, 3, time.Hour)
		board.desire("web")
		board.desire("api")
		Eventually(board.hub.LastID).ShouldNot(BeZero())
		seen := board.hub.LastID()
		live := subscribe(board.hub, 0, events.Filter{CellID: "cell-1"})
		for _, cellID := range []string{"cell-1", "cell-2"} {
			cell := &models.Cell{CellId: cellID, RepUrl: "http://" + cellID, Zone: "z1", Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Instances: 10}}
			Expect(board.store.RegisterCell(context.Background(), cell, time.Minute)).To(Succeed())
		}
		Eventually(board.hub.LastID).Should(BeNumerically(">=", seen+2))
		board.desire("later")
		Eventually(board.hub.LastID).Should(BeNumerically(">=", seen+5))

		// The history holds 3 events: a resume from before the cells
		// registered reads their events from the log.
		resumed := subscribe(board.hub, seen, events.Filter{CellID: "cell-1"})
		for _, sub := range []*events.Subscription{live, resumed} {
			got := receive(sub, 1)
			Expect(got[0].Type).To(Equal(models.EventCellChanged))
			Expect(got[0].Payload.(*models.CellChangedEvent).GetAfter().GetCellId()).To(Equal("cell-1"))
			expectQuiet(sub)
		}
	})

	It("lets a slow subscriber read the log rather than cutting it off", func() {
		board := followingBoard(conn, testdb.SQLite, 3, time.Hour)
		sub := subscribe(board.hub, 0, events.Filter{})
		for i := range 40 {
			board.desire(fmt.Sprintf("lrp-%02d", i))
		}
		got := receive(sub, 120)
		expectConsecutive(got, got[0].ID)
		Expect(createdGuids(got)).To(HaveLen(40))
		Expect(sub.Err()).NotTo(HaveOccurred())
	})
})
