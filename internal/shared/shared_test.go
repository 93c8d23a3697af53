package shared_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/shared"
)

func TestShared(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Shared Suite")
}

type result struct {
	v   int
	err error
}

var _ = Describe("Call (the package comment's worked example)", func() {
	It("shares a run among the callers that ask while it runs, and lets a caller whose context ends go alone", func() {
		var c shared.Call[int]
		var runs atomic.Int32
		release := make(chan struct{})
		fn := func() (int, error) {
			n := runs.Add(1)
			<-release
			return int(n), nil
		}
		do := func(ctx context.Context) <-chan result {
			out := make(chan result, 1)
			go func() {
				v, err := c.Do(ctx, fn)
				out <- result{v, err}
			}()
			return out
		}

		a := do(context.Background()) // 1. A starts the run
		Eventually(runs.Load).Should(BeEquivalentTo(1))
		b := do(context.Background()) // 2. B waits for it
		ctx, cancel := context.WithCancel(context.Background())
		cc := do(ctx)
		cancel() // 4. C goes away
		var got result
		Eventually(cc).Should(Receive(&got))
		Expect(errors.Is(got.err, context.Canceled)).To(BeTrue())

		Consistently(b, "100ms").ShouldNot(Receive())

		close(release) // 3. A and B get the one run's result
		Eventually(a).Should(Receive(Equal(result{1, nil})))
		// B joined the run under way, unless its goroutine had not yet
		// asked when the run ended (then it ran alone): nothing here can
		// see which, so the shared count is the handlers' specs' to hold.
		Eventually(b).Should(Receive(&got))
		Expect(got.err).NotTo(HaveOccurred())
		Expect(got.v).To(BeEquivalentTo(runs.Load()))

		// The next to ask starts a new run.
		next := runs.Load() + 1
		Expect(c.Do(context.Background(), fn)).To(BeEquivalentTo(next))
	})
})
