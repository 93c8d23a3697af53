package sqldb_test

import (
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
// receipt says so, so it is not run again. Either way the caller sees what
// a write without the fault sees: the same answers, the same rows, each
// event logged once and each operation recorded once.
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

	kinds := []string{"conflict", "lost-before", "lost-after"}
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
	It("keeps a receipt per committed write until it is pruned", func() {
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
})
