package convergence_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
)

var _ = Describe("CrashPolicy", func() {
	const never = time.Duration(-1)

	DescribeTable("the default policy's delay after a crash count",
		func(crashes int32, want time.Duration) {
			delay, restarts := convergence.DefaultCrashPolicy().RestartDelay(crashes)
			if want == never {
				Expect(restarts).To(BeFalse(), "gave up")
				return
			}
			Expect(restarts).To(BeTrue())
			Expect(delay).To(Equal(want))
		},
		Entry("no crash yet", int32(0), time.Duration(0)),
		Entry("crash 1 restarts at once", int32(1), time.Duration(0)),
		Entry("crash 2 restarts at once", int32(2), time.Duration(0)),
		Entry("crash 3 restarts at once", int32(3), time.Duration(0)),
		Entry("crash 4 waits the base delay", int32(4), 30*time.Second),
		Entry("crash 5 doubles it", int32(5), time.Minute),
		Entry("crash 6", int32(6), 2*time.Minute),
		Entry("crash 7", int32(7), 4*time.Minute),
		Entry("crash 8", int32(8), 8*time.Minute),
		Entry("crash 9 reaches the cap", int32(9), 16*time.Minute),
		Entry("crash 10 stays at the cap", int32(10), 16*time.Minute),
		Entry("crash 199 still restarts", int32(199), 16*time.Minute),
		Entry("crash 200 gives up", int32(200), never),
		Entry("crash 5000 gives up", int32(5000), never),
	)

	DescribeTable("other policies",
		func(policy convergence.CrashPolicy, crashes int32, want time.Duration) {
			delay, restarts := policy.RestartDelay(crashes)
			if want == never {
				Expect(restarts).To(BeFalse())
				return
			}
			Expect(restarts).To(BeTrue())
			Expect(delay).To(Equal(want))
		},
		Entry("without immediate restarts the first crash waits",
			convergence.CrashPolicy{BaseDelay: time.Second, MaxDelay: time.Minute}, int32(1), time.Second),
		Entry("a cap below the base delay wins",
			convergence.CrashPolicy{BaseDelay: time.Minute, MaxDelay: 10 * time.Second}, int32(1), 10*time.Second),
		Entry("GiveUpAt 0 never gives up, and a huge count does not overflow",
			convergence.CrashPolicy{ImmediateRestarts: 3, BaseDelay: 30 * time.Second, MaxDelay: 16 * time.Minute},
			int32(2_000_000_000), 16*time.Minute),
		Entry("a huge cap does not overflow either",
			convergence.CrashPolicy{BaseDelay: time.Second, MaxDelay: time.Duration(1<<63 - 1)},
			int32(2_000_000_000), time.Duration(1<<63-1)),
		Entry("GiveUpAt 1 gives up at the first crash",
			convergence.CrashPolicy{GiveUpAt: 1}, int32(1), never),
	)

	It("has documented defaults", func() {
		c := convergence.DefaultConfig()
		Expect(c.StaleUnclaimed).To(Equal(60 * time.Second))
		Expect(c.CrashPolicy).To(Equal(convergence.CrashPolicy{
			ImmediateRestarts: 3, BaseDelay: 30 * time.Second, MaxDelay: 16 * time.Minute, GiveUpAt: 200,
		}))
	})
})
