package sqldb_test

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// A write whose COMMIT fails is run again or not by what happened to it
// (commit.go): a conflict and a connection lost before the COMMIT did not
// apply and run again; a connection lost after the COMMIT applied, and its
// receipt says so, so it is not run again — or, for a claim or a start,
// which keep no receipt, it is decided again and found a repeat. Either
// way the caller sees what a write without the fault sees: the same
// answers, the same rows, each event logged once and each operation
// recorded once.
var _ = forEachDialect("writes whose commit fails", func(b *board) {
	// transcript runs a desire, a claim, a start, an update and a remove
	// on store and writes down what each answered and what the tables hold
	// after it.
	transcript := func(store *sqldb.SQLDB) []string {
		GinkgoHelper()
		var lines []string
		state := func(label string, err error) {
			GinkgoHelper()
			var events []string
			for _, table := range []string{"event_outbox", "event_log"} {
				rows, qerr := b.conn.Query("SELECT event_type, event_key FROM " + table)
				Expect(qerr).NotTo(HaveOccurred())
				for rows.Next() {
					var typ, key string
					Expect(rows.Scan(&typ, &key)).To(Succeed())
					events = append(events, typ+"/"+key)
				}
				Expect(rows.Err()).NotTo(HaveOccurred())
				rows.Close()
			}
			sort.Strings(events)
			var instances []string
			for _, lrp := range b.instances("web") {
				instances = append(instances, fmt.Sprintf("%d:%s:%s", lrp.Index, lrp.State, lrp.CellId))
			}
			lines = append(lines, fmt.Sprintf("%s: err=%v; operations=%d; instances=%s; events=%s", label, err,
				b.count("SELECT COUNT(*) FROM operations WHERE process_guid = 'web'"),
				strings.Join(instances, ","), strings.Join(events, ",")))
		}
		lrp := newLRP("web", "apps", 2)
		_, err := store.DesireLRP(b.ctx, lrp)
		state("desire", err)
		_, err = store.DesireLRP(b.ctx, newLRP("web", "apps", 2))
		state("desire again", err)
		b.exec("UPDATE actual_lrps SET cell_id = 'cell-1' WHERE process_guid = 'web'")
		caller := models.Caller{InstanceGuid: "ig-0", CellID: "cell-1"}
		key := models.ActualLRPKey{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY}
		_, err = store.ClaimActualLRP(b.ctx, key, caller)
		state("claim", err)
		_, err = store.StartActualLRP(b.ctx, key, caller, &models.NetInfo{Address: "10.0.0.1"}, true)
		state("start", err)
		_, err = store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Annotation: stringp("faulted")})
		state("update", err)
		_, err = store.AcquireLease(b.ctx, "convergence", "board-1", 3600_000_000_000)
		state("lease", err)
		err = store.RemoveDesiredLRP(b.ctx, "web")
		state("remove", err)
		return lines
	}

	// lost-after-logged has the sequencer move the committed events into
	// the log before settling looks for the receipt.
	kinds := []string{"conflict", "lost-before", "lost-after", "lost-after-logged"}
	if b.dialect == testdb.SQLite {
		kinds = kinds[:1] // no connection to lose: SQLite runs in the board's process
	}
	for _, kind := range kinds {
		It(fmt.Sprintf("answers and stores alike when every write's first commit fails with %s", kind), func() {
			plain := transcript(sqldb.New(b.conn, b.dialect, sqldb.WithClock(b.clock.Now)))
			b.reset()
			faulty := sqldb.New(b.conn, b.dialect, sqldb.WithClock(b.clock.Now), sqldb.WithEveryCommitFaulted(kind))
			Expect(transcript(faulty)).To(Equal(plain))
			conflicts, before, after := faulty.InjectedCommitFaults()
			Expect(conflicts+before+after).To(BeNumerically(">=", 6), "every write that commits met its fault: all but the refused second desire")
		})
	}

	if b.dialect == testdb.SQLite {
		return
	}
	// receipts counts the receipts stored: in commit_receipts, and on
	// MySQL on event rows (commit.go).
	receipts := func() int {
		GinkgoHelper()
		return b.count("SELECT COUNT(*) FROM commit_receipts") +
			b.count("SELECT COUNT(*) FROM event_outbox WHERE receipt IS NOT NULL") +
			b.count("SELECT COUNT(*) FROM event_log WHERE receipt IS NOT NULL")
	}

	It("keeps a receipt per committed write", func() {
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
		Expect(err).NotTo(HaveOccurred())
		Expect(receipts()).To(BeNumerically(">=", 1))
	})

	if b.dialect == testdb.MySQL {
		It("keeps a write's receipt on its first event row, and carries it into the log with it", func() {
			_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 2))
			Expect(err).NotTo(HaveOccurred())
			Expect(b.count("SELECT COUNT(*) FROM commit_receipts")).To(BeZero(), "no receipt row of its own")
			Expect(b.count("SELECT COUNT(*) FROM event_outbox WHERE receipt IS NOT NULL")).To(Equal(1))
			first := b.count("SELECT COUNT(*) FROM event_outbox WHERE receipt IS NOT NULL AND id = (SELECT MIN(id) FROM event_outbox)")
			Expect(first).To(Equal(1), "on the transaction's first event row")

			_, err = b.store.SequenceEvents(b.ctx, 1000)
			Expect(err).NotTo(HaveOccurred())
			Expect(b.count("SELECT COUNT(*) FROM event_outbox")).To(BeZero())
			Expect(b.count("SELECT COUNT(*) FROM event_log WHERE receipt IS NOT NULL")).To(Equal(1))
			Expect(b.count("SELECT COUNT(*) FROM event_log WHERE receipt IS NOT NULL AND position = (SELECT MIN(position) FROM event_log)")).To(Equal(1))
		})
	}

	if b.dialect == testdb.Postgres {
		It("keeps a receipt per committed write in commit_receipts until it is pruned", func() {
			_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
			Expect(err).NotTo(HaveOccurred())
			Expect(b.count("SELECT COUNT(*) FROM commit_receipts")).To(BeNumerically(">=", 1))
			n, err := b.store.PruneCommitReceipts(b.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(BeZero(), "a fresh receipt is kept")
			b.clock.Advance(2 * time.Minute)
			_, err = b.store.PruneCommitReceipts(b.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(b.count("SELECT COUNT(*) FROM commit_receipts")).To(BeZero())
		})
	}

	// The prune's exact count needs a store without the suite's commit
	// faults: a prune whose answer is lost runs again and deletes nothing.
	plainStore := func() *sqldb.SQLDB { return sqldb.New(b.conn, b.dialect, sqldb.WithClock(b.clock.Now)) }

	It("keeps no receipt for a claim or a start, whose repeat writes nothing, and one for a crash", func() {
		store := plainStore()
		_, err := store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
		Expect(err).NotTo(HaveOccurred())
		b.exec("UPDATE actual_lrps SET cell_id = 'cell-1' WHERE process_guid = 'web'")
		caller := models.Caller{InstanceGuid: "ig-0", CellID: "cell-1"}
		key := models.ActualLRPKey{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY}
		changed := func() int {
			GinkgoHelper()
			return b.count("SELECT COUNT(*) FROM event_outbox WHERE event_type = 'actual_lrp_changed'") +
				b.count("SELECT COUNT(*) FROM event_log WHERE event_type = 'actual_lrp_changed'")
		}
		kept := receipts()

		_, err = store.ClaimActualLRP(b.ctx, key, caller)
		Expect(err).NotTo(HaveOccurred())
		started, err := store.StartActualLRP(b.ctx, key, caller, &models.NetInfo{Address: "10.0.0.1"}, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(started.State).To(Equal(models.ActualLRP_RUNNING))
		Expect(changed()).To(Equal(2), "the claim and the start wrote")
		Expect(receipts()).To(Equal(kept), "and kept no receipt")

		_, err = store.CrashActualLRP(b.ctx, key, caller, "OOM")
		Expect(err).NotTo(HaveOccurred())
		Expect(receipts()).To(Equal(kept+1), "a crash's repeat would be refused: it keeps one")
	})

	// tokens lists the stored receipts' tokens in the database's order.
	tokens := func() [][]byte {
		GinkgoHelper()
		rows, err := b.conn.Query("SELECT token FROM commit_receipts ORDER BY token")
		Expect(err).NotTo(HaveOccurred())
		defer rows.Close()
		var out [][]byte
		for rows.Next() {
			var token []byte
			Expect(rows.Scan(&token)).To(Succeed())
			out = append(out, token)
		}
		Expect(rows.Err()).NotTo(HaveOccurred())
		return out
	}

	It("prunes exactly the receipts made more than 30 s ago by the store's clock, and keeps the rest", func() {
		// Tokens made at these offsets from the start; the prune runs at
		// 1m, so the receipts made before 30s go and those from 30s on stay.
		offsets := []time.Duration{0, 15 * time.Second, 30*time.Second - time.Nanosecond,
			30 * time.Second, 30*time.Second + time.Nanosecond, 45 * time.Second, time.Minute}
		store := plainStore()
		start := b.clock.Now()
		var made [][]byte
		for _, offset := range offsets {
			b.clock.Advance(start.Add(offset).Sub(b.clock.Now()))
			made = append(made, store.NewReceiptToken())
		}
		for i := len(made) - 1; i >= 0; i-- { // stored newest first: the key orders them
			b.exec("INSERT INTO commit_receipts (token) VALUES (?)", made[i])
		}

		n, err := store.PruneCommitReceipts(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(BeEquivalentTo(3))
		Expect(tokens()).To(Equal(made[3:]), "the receipts made at 30s and later, in the order they were made")

		n, err = store.PruneCommitReceipts(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(n).To(BeZero(), "nothing more is old enough")
	})

	if b.dialect == testdb.Postgres {
		It("prunes the receipts of the writes made more than 30 s ago, and keeps those of later writes", func() {
			_, err := b.store.DesireLRP(b.ctx, newLRP("old", "apps", 1))
			Expect(err).NotTo(HaveOccurred())
			older := b.count("SELECT COUNT(*) FROM commit_receipts")
			Expect(older).To(BeNumerically(">=", 1))
			b.clock.Advance(20 * time.Second)
			_, err = b.store.DesireLRP(b.ctx, newLRP("new", "apps", 1))
			Expect(err).NotTo(HaveOccurred())
			total := b.count("SELECT COUNT(*) FROM commit_receipts")
			Expect(total).To(BeNumerically(">", older))

			b.clock.Advance(15 * time.Second) // the first write's receipts are 35 s old, the second's 15 s
			n, err := plainStore().PruneCommitReceipts(b.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(BeEquivalentTo(older))
			Expect(b.count("SELECT COUNT(*) FROM commit_receipts")).To(Equal(total - older))
		})
	}

	if b.dialect != testdb.SQLite {
		// A lost COMMIT is settled by inserting its token again (commit.go,
		// cases 1, 2 and 4): the receipt there means it committed, at any
		// age; none there means it did not, but only while the token is
		// younger than the 20 s a receipt's absence is trusted; after that
		// a prune may have taken the receipt of a commit that applied.
		DescribeTable("settling a lost commit by its receipt",
			func(age time.Duration, stored bool, want string) {
				store := plainStore()
				token := store.NewReceiptToken()
				if stored {
					b.exec("INSERT INTO commit_receipts (token) VALUES (?)", token)
				}
				b.clock.Advance(age)
				commitErr := errors.New("connection reset by peer")
				err := store.Settle(token, commitErr)
				switch want {
				case "committed":
					Expect(err).NotTo(HaveOccurred())
				case "run again":
					Expect(sqldb.IsCommitLost(err)).To(BeTrue(), "%v", err)
				case "unknown":
					Expect(err).To(BeIdenticalTo(commitErr))
				}
				Expect(tokens()).To(Equal([][]byte{token}), "the token is stored either way: a late COMMIT of it can no longer apply")
			},
			Entry("a receipt there, fresh: committed", time.Duration(0), true, "committed"),
			Entry("a receipt there, 5 minutes old: committed", 5*time.Minute, true, "committed"),
			Entry("no receipt, fresh: did not apply, run again", time.Duration(0), false, "run again"),
			Entry("no receipt, a nanosecond short of 20 s: run again", 20*time.Second-time.Nanosecond, false, "run again"),
			Entry("no receipt, 20 s old: unknown, it may have been pruned", 20*time.Second, false, "unknown"),
			Entry("no receipt, a minute old: unknown", time.Minute, false, "unknown"),
		)
	}

	It("makes tokens that sort after the ones it made earlier, byte by byte and in the database", func() {
		store := plainStore()
		var made [][]byte
		for _, step := range []time.Duration{0, time.Nanosecond, time.Nanosecond, time.Microsecond, time.Second, time.Hour, 24 * 365 * time.Hour} {
			b.clock.Advance(step)
			token := store.NewReceiptToken()
			Expect(token).To(HaveLen(16))
			if len(made) > 0 {
				Expect(bytes.Compare(made[len(made)-1], token)).To(Equal(-1), "a token made %v after the one before sorts after it", step)
			}
			made = append(made, token)
		}
		for i := len(made) - 1; i >= 0; i-- {
			b.exec("INSERT INTO commit_receipts (token) VALUES (?)", made[i])
		}
		Expect(tokens()).To(Equal(made))
	})

	It("makes distinct tokens in the same nanosecond", func() {
		store := plainStore()
		seen := map[string]bool{}
		for range 1000 {
			seen[string(store.NewReceiptToken())] = true
		}
		Expect(seen).To(HaveLen(1000))
	})
})
