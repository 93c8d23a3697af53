package isolation_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/rep/isolation"
)

var _ = Describe("instance uids", func() {
	DescribeTable("UIDRange.Validate",
		func(r isolation.UIDRange, wantErr string) {
			err := r.Validate()
			if wantErr == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(wantErr))
		},
		Entry("the default", isolation.UIDRange{First: isolation.DefaultUIDFirst, Count: isolation.DefaultUIDCount}, ""),
		Entry("one id", isolation.UIDRange{First: 1000, Count: 1}, ""),
		Entry("up to the last usable id", isolation.UIDRange{First: 4294967290, Count: 5}, ""),
		Entry("empty", isolation.UIDRange{First: 200000}, "count must be at least 1"),
		Entry("root", isolation.UIDRange{First: 0, Count: 10}, "first must be at least 1000 (ids below are root and system users), got 0"),
		Entry("system users", isolation.UIDRange{First: 999, Count: 10}, "first must be at least 1000 (ids below are root and system users), got 999"),
		Entry("past (uid_t)-1", isolation.UIDRange{First: 4294967290, Count: 6},
			"first 4294967290 + count 6 runs past the largest uid 4294967294"),
		Entry("past 32 bits", isolation.UIDRange{First: 4294967290, Count: 4294967295},
			"first 4294967290 + count 4294967295 runs past the largest uid 4294967294"),
	)

	It("refuses an invalid range", func() {
		_, err := isolation.NewUIDPool(isolation.UIDRange{First: 5, Count: 1}, "")
		Expect(err).To(HaveOccurred())
	})

	It("hands out each id once, goes round the range, and says when all are in use", func() {
		pool, err := isolation.NewUIDPool(isolation.UIDRange{First: 5000, Count: 3}, "")
		Expect(err).NotTo(HaveOccurred())
		a, _ := pool.Allocate()
		b, _ := pool.Allocate()
		c, _ := pool.Allocate()
		Expect([]uint32{a, b, c}).To(Equal([]uint32{5000, 5001, 5002}))
		_, err = pool.Allocate()
		Expect(err).To(MatchError("all 3 instance uids (5000-5002) are in use, by this rep or another on the host"))
		Expect(pool.InUse()).To(Equal(3))

		pool.Release(b)
		pool.Release(a)
		// The search goes on from where it was: 5000 before 5001.
		Expect(pool.Allocate()).To(Equal(uint32(5000)))
		Expect(pool.Allocate()).To(Equal(uint32(5001)))
		pool.Release(9999) // not the pool's: ignored
		Expect(pool.InUse()).To(Equal(3))
	})

	// UIDPool's worked example: two reps on one host, one claim dir.
	It("never hands out a uid another pool on the host holds, and takes it once released", func() {
		claims := GinkgoT().TempDir()
		a, err := isolation.NewUIDPool(isolation.UIDRange{First: 5000, Count: 3}, claims)
		Expect(err).NotTo(HaveOccurred())
		b, err := isolation.NewUIDPool(isolation.UIDRange{First: 5000, Count: 3}, claims)
		Expect(err).NotTo(HaveOccurred())

		Expect(a.Allocate()).To(Equal(uint32(5000)))
		Expect(a.Allocate()).To(Equal(uint32(5001)))
		Expect(b.Allocate()).To(Equal(uint32(5002)))
		_, err = b.Allocate()
		Expect(err).To(MatchError("all 3 instance uids (5000-5002) are in use, by this rep or another on the host"))

		a.Release(5000)
		Expect(b.Allocate()).To(Equal(uint32(5000)))
		_, err = a.Allocate()
		Expect(err).To(HaveOccurred())
		Expect(a.InUse()).To(Equal(1))
		Expect(b.InUse()).To(Equal(2))
	})

	It("lets go of its claims when the process holding them ends", func() {
		claims := GinkgoT().TempDir()
		// A separate process holds 5000's lock file, as another rep would.
		// flock(1) and the sleep it runs both hold the lock: a process
		// group of their own, killed whole.
		holder := exec.Command("flock", "--exclusive", filepath.Join(claims, "5000"), "sleep", "30")
		holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		Expect(holder.Start()).To(Succeed())
		kill := func() { syscall.Kill(-holder.Process.Pid, syscall.SIGKILL); holder.Wait() }
		DeferCleanup(kill)
		Eventually(func() error { _, err := os.Stat(filepath.Join(claims, "5000")); return err }).Should(Succeed())

		pool, err := isolation.NewUIDPool(isolation.UIDRange{First: 5000, Count: 2}, claims)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() uint32 {
			id, _ := pool.Allocate()
			pool.Release(id)
			return id
		}).Should(Equal(uint32(5001)))

		kill()
		// The sleep may outlive flock(1) by a moment.
		Eventually(func() uint32 {
			id, _ := pool.Allocate()
			pool.Release(id)
			return id
		}).Should(Equal(uint32(5000)))
	})

	It("reuses a freed id as late as it can", func() {
		pool, err := isolation.NewUIDPool(isolation.UIDRange{First: 5000, Count: 4}, "")
		Expect(err).NotTo(HaveOccurred())
		a, _ := pool.Allocate()
		pool.Release(a)
		Expect(pool.Allocate()).To(Equal(uint32(5001)))
	})

	It("never hands one id to two holders at once", func() {
		pool, err := isolation.NewUIDPool(isolation.UIDRange{First: 5000, Count: 100}, "")
		Expect(err).NotTo(HaveOccurred())
		var mu sync.Mutex
		seen := map[uint32]bool{}
		var wg sync.WaitGroup
		for range 100 {
			wg.Go(func() {
				id, err := pool.Allocate()
				Expect(err).NotTo(HaveOccurred())
				mu.Lock()
				defer mu.Unlock()
				Expect(seen[id]).To(BeFalse())
				seen[id] = true
			})
		}
		wg.Wait()
		Expect(seen).To(HaveLen(100))
	})
})
