package runner_test

import (
	"context"
	"errors"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence/runner"
)

var _ = Describe("pruning operations in a full pass", func() {
	// backlog is a store holding left operations past their retention.
	backlog := func(left int) (func(context.Context, int) (int, error), *int) {
		calls := 0
		return func(_ context.Context, limit int) (int, error) {
			calls++
			n := min(limit, left)
			left -= n
			return n, nil
		}, &calls
	}

	It("goes on past one batch until a call finds fewer, so it keeps up with a busy board", func() {
		prune, calls := backlog(2500)
		deleted, err := runner.PruneUntil(context.Background(), prune, 1000, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(deleted).To(Equal(2500))
		Expect(*calls).To(Equal(3))
	})

	It("stops when its budget is spent, after at least one call, and leaves the rest to the next pass", func() {
		prune, calls := backlog(5000)
		deleted, err := runner.PruneUntil(context.Background(), prune, 1000, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(deleted).To(Equal(1000))
		Expect(*calls).To(Equal(1))
	})

	It("stops at the first failure, with what it deleted before", func() {
		calls := 0
		failing := func(context.Context, int) (int, error) {
			calls++
			if calls == 2 {
				return 0, errors.New("lost the connection")
			}
			return 1000, nil
		}
		deleted, err := runner.PruneUntil(context.Background(), failing, 1000, time.Minute)
		Expect(err).To(MatchError("lost the connection"))
		Expect(deleted).To(Equal(1000))
	})
})
