package executor_test

import (
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

// Health checks of an instance that was healthy, against the real hello
// app: its UNHEALTHY_AFTER, UNHEALTHY_CHECKS and SLOW_HEALTH knobs make
// /health fail (with a 503, or with no answer in time) when a spec needs
// it to. Intervals and timeouts are a second or more, so that a loaded
// machine answers a passing check in time.
var _ = Describe("Executor health checks after healthy", func() {
	var (
		cfg executor.ExecutorConfig
		exe *executor.Executor
	)

	BeforeEach(func() {
		cfg = newConfig()
	})

	JustBeforeEach(func() {
		exe = reptest.StartExecutor(cfg)
	})

	// checked is an HTTP check with the given timing.
	checked := func(intervalMs, timeoutMs int64, threshold int32) *models.HealthCheck {
		check := reptest.HTTPCheck()
		check.IntervalMs, check.TimeoutMs, check.FailureThreshold = intervalMs, timeoutMs, threshold
		return check
	}

	logOf := func(guid string) func() string {
		return func() string {
			log, err := exe.LogTail(guid, 200)
			Expect(err).NotTo(HaveOccurred())
			return string(log)
		}
	}

	It("keeps an instance whose checks fail fewer times in a row than the threshold, slow answers included", func() {
		// Two checks get no answer within the 1s timeout, then /health
		// answers again: two failures of the default three.
		def := reptest.HelloDefinition(checked(1000, 1000, 0), "UNHEALTHY_AFTER", "1s", "UNHEALTHY_CHECKS", "2", "SLOW_HEALTH", "3s")
		st := reptest.RunHealthy(exe, reptest.Spec("wobbly", def))

		Eventually(logOf("wobbly")).Should(ContainSubstring("health check passed again after 2 failed"))
		log := logOf("wobbly")()
		Expect(log).To(ContainSubstring("health check failed (1 of 3 in a row before it is unhealthy): GET /health on port 8080: no answer within 1s"))
		Expect(log).To(ContainSubstring("health check failed (2 of 3 in a row before it is unhealthy): GET /health on port 8080: no answer within 1s"))
		Consistently(exe.Events(), 3*time.Second).ShouldNot(Receive())
		Expect(processGone(st.Pid)).To(BeFalse())
		Expect(reptest.Status(exe, "wobbly").Pid).To(Equal(st.Pid))
	})

	It("sends Unhealthy after failure_threshold failures in a row and leaves the process running until it is stopped", func() {
		def := reptest.HelloDefinition(checked(1000, 1000, 0), "UNHEALTHY_AFTER", "1s")
		st := reptest.RunHealthy(exe, reptest.Spec("sickly", def))

		ev := reptest.NextEvent(exe)
		Expect(ev.Kind).To(Equal(executor.Unhealthy))
		Expect(ev.InstanceGuid).To(Equal("sickly"))
		Expect(ev.ProcessGuid).To(Equal("hello"))
		Expect(ev.Reason).To(Equal("health check failed 3 times in a row: GET /health on port 8080: 503"))
		// The event comes before anything stops the process: it still
		// runs, has not been signalled, and is still listed.
		Expect(processGone(st.Pid)).To(BeFalse())
		Expect(reptest.Status(exe, "sickly").Stopping).To(BeFalse())
		log := logOf("sickly")()
		Expect(log).To(ContainSubstring("health check failed (1 of 3 in a row before it is unhealthy): GET /health on port 8080: 503"))
		Expect(log).To(ContainSubstring("health check failed (2 of 3 in a row before it is unhealthy): GET /health on port 8080: 503"))
		Expect(log).To(ContainSubstring("unhealthy: health check failed 3 times in a row: GET /health on port 8080: 503"))
		Expect(log).NotTo(ContainSubstring("SIGTERM"))
		Expect(log).NotTo(ContainSubstring("SIGKILL"))
		Consistently(exe.Events(), time.Second).ShouldNot(Receive())
		Expect(processGone(st.Pid)).To(BeFalse())

		Expect(exe.Stop("sickly")).To(Succeed())
		Expect(reptest.NextEvent(exe).Kind).To(Equal(executor.Exited))
		Expect(logOf("sickly")()).To(ContainSubstring("got SIGTERM: exiting"))
		ended, ok := exe.Ended("sickly")
		Expect(ok).To(BeTrue())
		Expect(ended.Ending).To(Equal("unhealthy, then stopped: health check failed 3 times in a row: GET /health on port 8080: 503"))
	})

	It("honours the definition's failure_threshold", func() {
		def := reptest.HelloDefinition(checked(1000, 1000, 1), "UNHEALTHY_AFTER", "1s")
		reptest.RunHealthy(exe, reptest.Spec("touchy", def))
		ev := reptest.NextEvent(exe)
		Expect(ev.Kind).To(Equal(executor.Unhealthy))
		Expect(ev.Reason).To(Equal("health check failed: GET /health on port 8080: 503"))
		Expect(logOf("touchy")()).NotTo(ContainSubstring("in a row before it is unhealthy"))
	})

	It("honours the definition's timeout_ms", func() {
		// The 503 comes after 3s; the default 2s timeout would see no
		// answer either, so the timeout here is shorter and named.
		def := reptest.HelloDefinition(checked(1500, 1500, 1), "UNHEALTHY_AFTER", "1s", "SLOW_HEALTH", "3s")
		reptest.RunHealthy(exe, reptest.Spec("slow", def))
		ev := reptest.NextEvent(exe)
		Expect(ev.Kind).To(Equal(executor.Unhealthy))
		Expect(ev.Reason).To(Equal("health check failed: GET /health on port 8080: no answer within 1.5s"))
	})

	It("honours the definition's interval_ms once healthy", func() {
		// /health fails from 1s on, but the next check is ten minutes
		// away; with the default interval it would be unhealthy within
		// about 3s.
		def := reptest.HelloDefinition(checked(600000, 1000, 1), "UNHEALTHY_AFTER", "1s")
		st := reptest.RunHealthy(exe, reptest.Spec("patient", def))
		Eventually(logOf("patient")).Should(ContainSubstring("UNHEALTHY_AFTER=1s passed"))
		Consistently(exe.Events(), 4*time.Second).ShouldNot(Receive())
		Expect(processGone(st.Pid)).To(BeFalse())
	})

	It("checks a starting instance more often than a long interval, so its start is not held up", func() {
		// The first two checks get a 503; a start checked only every ten
		// minutes would not be healthy within this spec.
		def := reptest.HelloDefinition(checked(600000, 1000, 0), "UNHEALTHY", "1", "UNHEALTHY_CHECKS", "2")
		reptest.RunHealthy(exe, reptest.Spec("eager", def))
		Expect(logOf("eager")()).To(ContainSubstring("/health fails (0 more to fail after this one)"))
	})
})

var _ = Describe("Executor.TakeHealth", func() {
	var exe *executor.Executor

	BeforeEach(func() {
		exe = reptest.StartExecutor(newConfig())
	})

	sum := func(counts []int64) int64 {
		var n int64
		for _, c := range counts {
			n += c
		}
		return n
	}

	It("counts a healthy instance's checks and failures by latency, samples its memory, and starts again from zero", func() {
		check := reptest.HTTPCheck()
		check.IntervalMs, check.TimeoutMs, check.FailureThreshold = 500, 500, 10
		// /health answers 503 twice, a second after the start, then 200
		// again: 2 failures, fewer than the threshold.
		def := reptest.HelloDefinition(check, "UNHEALTHY_AFTER", "1s", "UNHEALTHY_CHECKS", "2")
		reptest.RunHealthy(exe, reptest.Spec("counted", def))
		Expect(exe.TakeHealth()).To(HaveLen(1), "the memory of the running instance, checks or not")

		var taken *models.DefinitionHealth
		Eventually(func() int32 {
			health := exe.TakeHealth()
			Expect(health).To(HaveLen(1))
			if taken == nil {
				taken = health[0]
			} else {
				taken.Checks += health[0].Checks
				taken.CheckFailures += health[0].CheckFailures
				taken.LatencyBucketCounts = models.AddBucketCounts(taken.LatencyBucketCounts, health[0].LatencyBucketCounts)
				Expect(sum(health[0].MemoryBucketCounts)).To(BeEquivalentTo(1), "one memory sample per take")
			}
			return taken.CheckFailures
		}).WithTimeout(10 * time.Second).WithPolling(700 * time.Millisecond).Should(BeEquivalentTo(2))
		Expect(taken.ProcessGuid).To(Equal("hello"))
		Expect(taken.DefinitionId).To(Equal("v1"))
		Expect(taken.Checks).To(BeNumerically(">", 2))
		Expect(sum(taken.LatencyBucketCounts)).To(BeEquivalentTo(taken.Checks), "each check in one latency bucket")
		Expect(taken.LatencyBucketCounts).To(HaveLen(len(models.HealthLatencyBucketsMs) + 1))
		Expect(taken.MemoryBucketCounts).To(HaveLen(len(models.MemoryBucketsMB) + 1))
		Expect(sum(taken.MemoryBucketCounts)).To(BeEquivalentTo(1))
		mb, ok := models.HistogramQuantile(models.MemoryBucketsMB, taken.MemoryBucketCounts, 0.99)
		Expect(ok).To(BeTrue())
		Expect(mb).To(BeNumerically(">", 0))

		By("reporting the same of the instance itself")
		last := exe.TakeHealth()[0]
		Expect(last.GetInstances()).To(HaveLen(1))
		instance := last.GetInstances()[0]
		Expect(instance.GetIndex()).To(BeEquivalentTo(0))
		Expect(instance.GetInstanceGuid()).NotTo(BeEmpty())
		Expect(instance.GetChecks()).To(Equal(last.GetChecks()), "the only instance ran every check")
		Expect(instance.GetCheckFailures()).To(Equal(last.GetCheckFailures()))
		Expect(instance.GetLatencyBucketCounts()).To(Equal(last.GetLatencyBucketCounts()))
		Expect(instance.MemoryMb).NotTo(BeNil())
		Expect(models.BucketOf(models.MemoryBucketsMB, instance.GetMemoryMb())).To(Equal(slices.Index(last.GetMemoryBucketCounts(), 1)),
			"its sample is the one the definition's buckets count")
		Expect((&models.ReportHealthRequest{CellId: "cell-1", Health: exe.TakeHealth()}).Validate()).To(Succeed(), "a valid report")

		By("keeping the checks of an instance that ended for the next take, without a memory sample")
		Eventually(func() int32 {
			return exe.TakeHealth()[0].Checks
		}).WithTimeout(5 * time.Second).WithPolling(100 * time.Millisecond).ShouldNot(BeZero())
		time.Sleep(1200 * time.Millisecond)
		Expect(exe.Stop("counted")).To(Succeed())
		health := exe.TakeHealth()
		Expect(health).To(HaveLen(1))
		Expect(health[0].Checks).To(BeNumerically(">", 0))
		Expect(sum(health[0].MemoryBucketCounts)).To(BeZero())
		Expect(health[0].GetInstances()).To(HaveLen(1))
		Expect(health[0].GetInstances()[0].GetChecks()).To(Equal(health[0].GetChecks()))
		Expect(health[0].GetInstances()[0].MemoryMb).To(BeNil(), "it ended: no sample")
		Expect(exe.TakeHealth()).To(BeEmpty(), "nothing runs and nothing is left to count")
	})
})

// What a health report says of an instance whose latest check failed:
// the check's output with the address the cell checked, when, and since
// when its checks fail in a row; once a check passes, nothing.
var _ = Describe("Executor.TakeHealth of failing checks", func() {
	var exe *executor.Executor

	BeforeEach(func() {
		exe = reptest.StartExecutor(newConfig())
	})

	// instanceOf is the one instance of the only definition of a take.
	instanceOf := func(health []*models.DefinitionHealth) *models.InstanceHealth {
		GinkgoHelper()
		Expect(health).To(HaveLen(1))
		Expect(health[0].GetInstances()).To(HaveLen(1))
		return health[0].GetInstances()[0]
	}

	It("reports a starting instance whose startup checks fail, before its start timeout ends it", func() {
		// /health never answers 200; the start timeout is far away.
		def := reptest.HelloDefinition(reptest.HTTPCheck(), "UNHEALTHY", "1")
		netInfo, err := exe.Run(reptest.Spec("never", def))
		Expect(err).NotTo(HaveOccurred())
		url := fmt.Sprintf("GET http://%s:%d/health: 503 Service Unavailable", netInfo.GetAddress(), netInfo.GetPorts()[0].GetHostPort())

		var first *models.InstanceHealth
		Eventually(func(g Gomega) {
			first = instanceOf(exe.TakeHealth())
			g.Expect(first.GetLastCheckFailure()).To(Equal(url))
		}).WithTimeout(10 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		Expect(first.GetInstanceGuid()).To(Equal("never"))
		Expect(first.GetChecks()).To(BeZero(), "startup checks are not counted")
		Expect(first.GetCheckFailingSince()).To(BeNumerically(">", 0))
		Expect(first.GetCheckFailingSince()).To(BeNumerically("<=", first.GetLastCheckFailureAt()))

		By("keeping since and moving the time on as later checks fail")
		time.Sleep(1500 * time.Millisecond)
		health := exe.TakeHealth()
		later := instanceOf(health)
		Expect(later.GetLastCheckFailure()).To(Equal(url))
		Expect(later.GetCheckFailingSince()).To(Equal(first.GetCheckFailingSince()))
		Expect(later.GetLastCheckFailureAt()).To(BeNumerically(">", first.GetLastCheckFailureAt()))
		Expect((&models.ReportHealthRequest{CellId: "cell-1", Health: health}).Validate()).To(Succeed(), "a valid report")
		Consistently(exe.Events(), 500*time.Millisecond).ShouldNot(Receive(), "no crash yet, nor Healthy")
	})

	It("reports a healthy instance's failing checks and nothing once they pass again", func() {
		check := reptest.HTTPCheck()
		check.IntervalMs, check.TimeoutMs, check.FailureThreshold = 500, 500, 100
		// A second after the start, /health answers 503 four times, then
		// 200 again; the threshold keeps it healthy.
		def := reptest.HelloDefinition(check, "UNHEALTHY_AFTER", "1s", "UNHEALTHY_CHECKS", "4")
		reptest.RunHealthy(exe, reptest.Spec("wobbly", def))
		Expect(instanceOf(exe.TakeHealth()).GetLastCheckFailure()).To(BeEmpty(), "healthy: its latest check passed")

		Eventually(func() string {
			return instanceOf(exe.TakeHealth()).GetLastCheckFailure()
		}).WithTimeout(10 * time.Second).WithPolling(200 * time.Millisecond).Should(MatchRegexp(`^GET http://\S+:\d+/health: 503 Service Unavailable$`))
		Eventually(func() string {
			return instanceOf(exe.TakeHealth()).GetLastCheckFailure()
		}).WithTimeout(10 * time.Second).WithPolling(200 * time.Millisecond).Should(BeEmpty())
		in := instanceOf(exe.TakeHealth())
		Expect(in.GetLastCheckFailureAt()).To(BeZero())
		Expect(in.GetCheckFailingSince()).To(BeZero())
	})
})
