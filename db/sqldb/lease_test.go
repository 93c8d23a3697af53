package sqldb_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("LeaseDB", func(b *board) {
	const ttl = 15 * time.Second

	acquire := func(owner string) bool {
		GinkgoHelper()
		tenure, err := b.store.AcquireLease(b.ctx, "convergence", owner, ttl)
		Expect(err).NotTo(HaveOccurred())
		return tenure > 0
	}
	stored := func() (string, int64) {
		GinkgoHelper()
		var owner string
		var expires int64
		Expect(b.conn.QueryRow("SELECT owner, expires_at FROM leases WHERE name = 'convergence'").Scan(&owner, &expires)).To(Succeed())
		return owner, expires
	}

	// Leases are judged by the database's clock, so these specs wait real
	// time for a short lease to run out instead of moving the store's
	// clock (which leases do not read).
	const short = 300 * time.Millisecond
	acquireFor := func(owner string, d time.Duration) bool {
		GinkgoHelper()
		tenure, err := b.store.AcquireLease(b.ctx, "convergence", owner, d)
		Expect(err).NotTo(HaveOccurred())
		return tenure > 0
	}

	It("grants a free lease until the database's now plus the TTL, and refuses it to others while it runs", func() {
		before := time.Now()
		Expect(acquire("board-a")).To(BeTrue())
		after := time.Now()
		owner, expires := stored()
		Expect(owner).To(Equal("board-a"))
		// The database runs on this machine: its clock is this one, to
		// its precision (SQLite: milliseconds).
		Expect(expires).To(BeNumerically(">=", before.Add(ttl-2*time.Millisecond).UnixNano()))
		Expect(expires).To(BeNumerically("<=", after.Add(ttl).UnixNano()))

		Expect(acquire("board-b")).To(BeFalse())
		owner, _ = stored()
		Expect(owner).To(Equal("board-a"), "a refused acquire changes nothing")
	})

	It("renews the owner's lease", func() {
		Expect(acquireFor("board-a", short)).To(BeTrue())
		Expect(acquireFor("board-a", short)).To(BeTrue(), "even within the same instant")
		time.Sleep(short / 2)
		_, first := stored()
		Expect(acquire("board-a")).To(BeTrue())
		_, renewed := stored()
		Expect(renewed).To(BeNumerically(">", first))

		time.Sleep(short)
		Expect(acquire("board-b")).To(BeFalse(), "the renewal moved the expiry on")
	})

	It("passes an expired lease to the next board, and the old owner loses it", func() {
		Expect(acquireFor("board-a", short)).To(BeTrue())
		time.Sleep(short + 50*time.Millisecond)
		Expect(acquire("board-b")).To(BeTrue())
		Expect(acquire("board-a")).To(BeFalse())
		owner, _ := stored()
		Expect(owner).To(Equal("board-b"))
	})

	It("judges expiry by the database's clock, whatever the boards' clocks say", func() {
		behind := newStore(b.conn, b.dialect, sqldb.WithClock(func() time.Time { return time.Now().Add(-time.Hour) }))
		ahead := newStore(b.conn, b.dialect, sqldb.WithClock(func() time.Time { return time.Now().Add(time.Hour) }))

		tenure, err := behind.AcquireLease(b.ctx, "convergence", "board-behind", ttl)
		Expect(err).NotTo(HaveOccurred())
		Expect(tenure).To(BeEquivalentTo(1))
		tenure, err = b.store.AcquireLease(b.ctx, "convergence", "board-a", ttl)
		Expect(err).NotTo(HaveOccurred())
		Expect(tenure).To(BeZero(), "a lease taken by a board an hour behind still runs for the others")
		tenure, err = ahead.AcquireLease(b.ctx, "convergence", "board-ahead", ttl)
		Expect(err).NotTo(HaveOccurred())
		Expect(tenure).To(BeZero(), "a board an hour ahead does not read a running lease as expired")
		owner, _ := stored()
		Expect(owner).To(Equal("board-behind"))
	})

	It("keeps leases of other names apart", func() {
		Expect(acquire("board-a")).To(BeTrue())
		tenure, err := b.store.AcquireLease(b.ctx, "other", "board-b", ttl)
		Expect(err).NotTo(HaveOccurred())
		Expect(tenure).To(BeEquivalentTo(1))
	})

	It("numbers tenures: a renewal keeps the number, a taking of a free or expired lease moves it on", func() {
		number := func(owner string) int64 {
			GinkgoHelper()
			n, err := b.store.AcquireLease(b.ctx, "convergence", owner, time.Minute)
			Expect(err).NotTo(HaveOccurred())
			return n
		}
		// As the lease oracle does: the lease runs out by moving its
		// expiry into the past, not by waiting on a loaded machine.
		expire := func() {
			GinkgoHelper()
			Expect(b.exec("UPDATE leases SET expires_at = ? WHERE name = 'convergence'", time.Now().Add(-time.Second).UnixNano())).To(BeEquivalentTo(1))
		}
		Expect(number("board-a")).To(BeEquivalentTo(1), "the first tenure")
		Expect(number("board-a")).To(BeEquivalentTo(1), "a renewal in time")
		Expect(number("board-b")).To(BeZero(), "refused while a's runs")
		expire()
		Expect(number("board-b")).To(BeEquivalentTo(2), "b takes the expired lease")
		Expect(b.store.ReleaseLease(b.ctx, "convergence", "board-b")).To(Succeed())
		Expect(number("board-a")).To(BeEquivalentTo(3), "a takes the released lease")
		expire()
		Expect(number("board-a")).To(BeEquivalentTo(4), "a's own lease expired: its next tenure is a new one")
	})

	It("refuses a write made under a tenure that ended, changing nothing, and lets the new owner's through", func() {
		Expect(acquire("board-a")).To(BeTrue())
		tenureA := db.WithFence(b.ctx, db.Fence{Lease: "convergence", Owner: "board-a", Tenure: 1})
		create := func(ctx context.Context, index int32) error {
			_, err := b.store.ApplyConvergence(ctx, &convergence.ConvergenceWrites{
				Create: []convergence.NewActualLRP{{ProcessGuid: "web", Index: index, Domain: "apps", DefinitionID: "v1"}},
			})
			return err
		}
		Expect(create(tenureA, 0)).To(Succeed(), "a writes while its tenure runs")

		// a is cut off from the database: its lease runs out and b takes it.
		Expect(b.exec("UPDATE leases SET expires_at = ? WHERE name = 'convergence'", time.Now().Add(-time.Second).UnixNano())).To(BeEquivalentTo(1))
		numberB, err := b.store.AcquireLease(b.ctx, "convergence", "board-b", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(numberB).To(BeEquivalentTo(2))

		// a comes back and writes what it planned before: refused.
		err = create(tenureA, 1)
		Expect(err).To(HaveErrorType(models.Error_ResourceConflict))
		Expect(err.Error()).To(ContainSubstring("tenure that ended"))
		Expect(b.count("SELECT COUNT(*) FROM actual_lrps")).To(Equal(1), "the refused write changed nothing")

		// Taking the lease again does not revive a's old tenure.
		Expect(acquire("board-a")).To(BeFalse())
		Expect(create(tenureA, 1)).To(HaveErrorType(models.Error_ResourceConflict))

		tenureB := db.WithFence(b.ctx, db.Fence{Lease: "convergence", Owner: "board-b", Tenure: numberB})
		Expect(create(tenureB, 1)).To(Succeed())
		Expect(b.count("SELECT COUNT(*) FROM actual_lrps")).To(Equal(2))
		Expect(create(b.ctx, 2)).To(Succeed(), "a write under no tenure is not fenced")
	})

	It("frees a released lease at once, and ignores a release by anyone else", func() {
		Expect(acquire("board-a")).To(BeTrue())
		Expect(b.store.ReleaseLease(b.ctx, "convergence", "board-b")).To(Succeed())
		Expect(acquire("board-b")).To(BeFalse())

		Expect(b.store.ReleaseLease(b.ctx, "convergence", "board-a")).To(Succeed())
		Expect(acquire("board-b")).To(BeTrue())
	})

	It("leaves exactly one owner when many boards race for it", func() {
		const boards, rounds = 12, 4
		// A TTL no round outlasts, however slow the machine: a lease that
		// ran out while the losers waited for its row would rightly go to
		// one of them.
		const long = time.Minute
		for round := range rounds {
			winners := make(chan string, boards)
			var wg sync.WaitGroup
			for i := range boards {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					owner := fmt.Sprintf("board-%d", i)
					tenure, err := b.store.AcquireLease(b.ctx, "convergence", owner, long)
					Expect(err).NotTo(HaveOccurred())
					if tenure > 0 {
						winners <- owner
					}
				}()
			}
			wg.Wait()
			close(winners)
			var won []string
			for owner := range winners {
				won = append(won, owner)
			}
			Expect(won).To(HaveLen(1), "round %d", round)
			owner, _ := stored()
			Expect(owner).To(Equal(won[0]))
			// The next round races for a free lease again.
			Expect(b.store.ReleaseLease(b.ctx, "convergence", owner)).To(Succeed())
		}
	})

	It("refuses a lease without a name, an owner or a positive TTL", func() {
		_, err := b.store.AcquireLease(b.ctx, "", "board-a", ttl)
		Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
		_, err = b.store.AcquireLease(b.ctx, "convergence", "", ttl)
		Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
		_, err = b.store.AcquireLease(b.ctx, "convergence", "board-a", 0)
		Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
		Expect(b.count("SELECT COUNT(*) FROM leases")).To(BeZero())
	})
})
