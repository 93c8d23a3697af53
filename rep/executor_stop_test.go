package rep_test

import (
	"errors"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/rep"
)

var _ = Describe("Executor.Stop", func() {
	var (
		cfg      rep.ExecutorConfig
		executor *rep.Executor
	)

	BeforeEach(func() {
		cfg = newConfig()
	})

	JustBeforeEach(func() {
		executor = startExecutor(cfg)
	})

	It("sends SIGTERM, reports Exited once the process is gone, and frees its port", func() {
		st := runHealthy(executor, spec("stoppable", helloDefinition(httpCheck())))
		Expect(executor.Stop("stoppable")).To(Succeed())

		// Stop returns once the process is reaped.
		Expect(processGone(st.Pid)).To(BeTrue())
		Expect(portFree(hostPort(st))).To(BeTrue())
		Expect(executor.Instances()).To(BeEmpty())
		ev := nextEvent(executor)
		Expect(ev.Kind).To(Equal(rep.Exited))
		Expect(ev.InstanceGuid).To(Equal("stoppable"))
		Expect(ev.Reason).To(BeEmpty())

		log, err := executor.LogTail("stoppable", 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(log).To(ContainSubstring("stopping: SIGTERM to process group"))
		Expect(log).To(ContainSubstring("hello: "))
		Expect(log).To(ContainSubstring("got SIGTERM: exiting"))
		Expect(log).To(ContainSubstring("stopped: exited with code 0"))
		Expect(log).NotTo(ContainSubstring("SIGKILL"))
	})

	Context("with a one-port range", func() {
		BeforeEach(func() {
			cfg.PortMin, cfg.PortMax = freePortRange(1)
		})

		It("hands the port of a stopped instance to the next one", func() {
			first := runHealthy(executor, spec("first", helloDefinition(httpCheck())))
			Expect(executor.Stop("first")).To(Succeed())
			Expect(nextEvent(executor).Kind).To(Equal(rep.Exited))
			second := runHealthy(executor, spec("second", helloDefinition(httpCheck())))
			Expect(hostPort(second)).To(Equal(hostPort(first)))
		})
	})

	Context("when the process ignores SIGTERM", func() {
		BeforeEach(func() {
			cfg.StopTimeout = time.Second
		})

		It("sends SIGKILL to the whole group after the stop timeout", func() {
			_, err := executor.Run(spec("stubborn", shellDefinition(`trap "" TERM; echo trapped; sleep 100`)))
			Expect(err).NotTo(HaveOccurred())
			Expect(nextEvent(executor).Kind).To(Equal(rep.Healthy))
			pid := status(executor, "stubborn").Pid
			// Stopping before the trap is set would not test the trap.
			Eventually(func() ([]byte, error) { return executor.LogTail("stubborn", 100) }).Should(ContainSubstring("trapped"))

			Expect(executor.Stop("stubborn")).To(Succeed())
			Expect(groupGone(pid)).To(BeTrue())
			ev := nextEvent(executor)
			Expect(ev.Kind).To(Equal(rep.Exited))
			Expect(executor.LogTail("stubborn", 100)).To(ContainSubstring("still running 1s after SIGTERM: SIGKILL to process group"))
		})
	})

	It("stops an instance that is not healthy yet, without reporting it healthy or crashed", func() {
		_, err := executor.Run(spec("starting", helloDefinition(httpCheck(), "UNHEALTHY", "1")))
		Expect(err).NotTo(HaveOccurred())
		Expect(executor.Stop("starting")).To(Succeed())
		ev := nextEvent(executor)
		Expect(ev.Kind).To(Equal(rep.Exited))
		Consistently(executor.Events(), time.Second).ShouldNot(Receive())
	})

	It("lets two Stops of one instance both wait for it, with one Exited event", func() {
		runHealthy(executor, spec("double", helloDefinition(httpCheck())))
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Go(func() { errs[i] = executor.Stop("double") })
		}
		wg.Wait()
		for _, err := range errs {
			Expect(err).To(Or(Succeed(), MatchError(rep.ErrInstanceNotFound)))
		}
		Expect(nextEvent(executor).Kind).To(Equal(rep.Exited))
		Consistently(executor.Events(), time.Second).ShouldNot(Receive())
	})

	It("refuses an instance it does not run", func() {
		err := executor.Stop("unknown")
		Expect(errors.Is(err, rep.ErrInstanceNotFound)).To(BeTrue(), "%v", err)
	})

	It("refuses an instance that already crashed", func() {
		_, err := executor.Run(spec("gone", shellDefinition("exit 1")))
		Expect(err).NotTo(HaveOccurred())
		Eventually(executor.Events()).Should(Receive(HaveField("Kind", rep.Crashed)))
		err = executor.Stop("gone")
		Expect(errors.Is(err, rep.ErrInstanceNotFound)).To(BeTrue(), "%v", err)
	})
})

var _ = Describe("Executor.Shutdown", func() {
	It("stops every instance, and refuses to run more", func() {
		executor := startExecutor(newConfig())
		a := runHealthy(executor, spec("a", helloDefinition(httpCheck())))
		b := runHealthy(executor, spec("b", helloDefinition(tcpCheck())))

		executor.Shutdown()
		Expect(processGone(a.Pid)).To(BeTrue())
		Expect(processGone(b.Pid)).To(BeTrue())
		Expect(executor.Instances()).To(BeEmpty())
		kinds := []rep.EventKind{nextEvent(executor).Kind, nextEvent(executor).Kind}
		Expect(kinds).To(Equal([]rep.EventKind{rep.Exited, rep.Exited}))

		_, err := executor.Run(spec("c", helloDefinition(nil)))
		Expect(err).To(MatchError("instance c: the executor is shut down"))
	})
})
