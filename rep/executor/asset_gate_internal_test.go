package executor

import (
	"context"
	"errors"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the download gate (max_asset_downloads_per_cell)", func() {
	ctx := context.Background()
	var lines []string
	var mu sync.Mutex
	note := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, line)
	}
	BeforeEach(func() { lines = nil })

	It("lets limit downloads in at once and the rest in order as they leave", func() {
		g := &downloadGate{}
		g.setLimit(2)
		Expect(g.enter(ctx, note)).To(Succeed())
		Expect(g.enter(ctx, note)).To(Succeed())
		order := make(chan int, 2)
		for i := range 2 {
			go func() {
				defer GinkgoRecover()
				Expect(g.enter(ctx, note)).To(Succeed())
				order <- i
			}()
			Eventually(func() int32 { _, w := g.status(); return w }).Should(BeEquivalentTo(i + 1))
		}
		Consistently(order).ShouldNot(Receive())
		g.leave()
		Expect(<-order).To(Equal(0), "first in, first out")
		Consistently(order).ShouldNot(Receive())
		g.leave()
		Expect(<-order).To(Equal(1))
		Expect(g.status()).To(BeEquivalentTo(2))
		mu.Lock()
		defer mu.Unlock()
		Expect(lines).To(ConsistOf(
			"waiting to download: 2 downloads under way on this cell, 0 before this one (max_asset_downloads_per_cell 2)",
			"waiting to download: 2 downloads under way on this cell, 1 before this one (max_asset_downloads_per_cell 2)",
		))
	})

	It("lets everyone in without a limit, and the waiting ones once the limit is raised", func() {
		g := &downloadGate{}
		for range 5 {
			Expect(g.enter(ctx, note)).To(Succeed())
		}
		g.setLimit(5)
		entered := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			Expect(g.enter(ctx, note)).To(Succeed())
			close(entered)
		}()
		Eventually(func() int32 { _, w := g.status(); return w }).Should(BeEquivalentTo(1))
		g.setLimit(0)
		Eventually(entered).Should(BeClosed())
	})

	It("gives up a wait when its context ends, holding no slot", func() {
		g := &downloadGate{}
		g.setLimit(1)
		Expect(g.enter(ctx, note)).To(Succeed())
		waitCtx, cancel := context.WithCancelCause(ctx)
		failed := make(chan error)
		go func() { failed <- g.enter(waitCtx, note) }()
		Eventually(func() int32 { _, w := g.status(); return w }).Should(BeEquivalentTo(1))
		cancel(errors.New("the start was canceled"))
		Expect(<-failed).To(MatchError("the start was canceled"))
		active, waiting := g.status()
		Expect(active).To(BeEquivalentTo(1))
		Expect(waiting).To(BeZero())
		g.leave()
		Expect(g.enter(ctx, note)).To(Succeed())
	})
})
