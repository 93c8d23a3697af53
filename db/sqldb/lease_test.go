package sqldb_test

import (
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("LeaseDB", func(b *board) {
	const ttl = 15 * time.Second

	acquire := func(owner string) bool {
		GinkgoHelper()
		ok, err := b.store.AcquireLease(b.ctx, "convergence", owner, ttl)
		Expect(err).NotTo(HaveOccurred())
		return ok
	}
	holder := func() (string, int64) {
		GinkgoHelper()
		var owner string
		var expires int64
		Expect(b.conn.QueryRow("SELECT owner, expires_at FROM leases WHERE name = 'convergence'").Scan(&owner, &expires)).To(Succeed())
		return owner, expires
	}

	It("grants a free lease and refuses it to others while it runs", func() {
		Expect(acquire("board-a")).To(BeTrue())
		owner, expires := holder()
		Expect(owner).To(Equal("board-a"))
		Expect(expires).To(Equal(b.clock.Now().Add(ttl).UnixNano()))

		b.clock.Advance(ttl - time.Nanosecond)
		Expect(acquire("board-b")).To(BeFalse())
		owner, _ = holder()
		Expect(owner).To(Equal("board-a"), "a refused acquire changes nothing")
	})

	It("renews the holder's lease", func() {
		Expect(acquire("board-a")).To(BeTrue())
		Expect(acquire("board-a")).To(BeTrue(), "even within the same instant")
		b.clock.Advance(10 * time.Second)
		Expect(acquire("board-a")).To(BeTrue())
		_, expires := holder()
		Expect(expires).To(Equal(b.clock.Now().Add(ttl).UnixNano()))

		b.clock.Advance(10 * time.Second)
		Expect(acquire("board-b")).To(BeFalse(), "the renewal moved the expiry on")
	})

	It("passes an expired lease to the next board, and the old holder loses it", func() {
		Expect(acquire("board-a")).To(BeTrue())
		b.clock.Advance(ttl)
		Expect(acquire("board-b")).To(BeTrue())
		Expect(acquire("board-a")).To(BeFalse())
		owner, _ := holder()
		Expect(owner).To(Equal("board-b"))
	})

	It("keeps leases of other names apart", func() {
		Expect(acquire("board-a")).To(BeTrue())
		ok, err := b.store.AcquireLease(b.ctx, "other", "board-b", ttl)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
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
		for round := range rounds {
			b.clock.Advance(ttl)
			winners := make(chan string, boards)
			var wg sync.WaitGroup
			for i := range boards {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					owner := fmt.Sprintf("board-%d", i)
					ok, err := b.store.AcquireLease(b.ctx, "convergence", owner, ttl)
					Expect(err).NotTo(HaveOccurred())
					if ok {
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
			owner, _ := holder()
			Expect(owner).To(Equal(won[0]))
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
