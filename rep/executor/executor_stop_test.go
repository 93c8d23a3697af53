package executor_test

import (
	"errors"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

var _ = Describe("Executor.Stop", func() {
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

	It("sends SIGTERM, reports Exited once the process is gone, and frees its port", func() {
		st := reptest.RunHealthy(exe, reptest.Spec("stoppable", reptest.HelloDefinition(reptest.HTTPCheck())))
		Expect(exe.Stop("stoppable")).To(Succeed())

		// Stop returns once the process is reaped.
		Expect(processGone(st.Pid)).To(BeTrue())
		Expect(reptest.PortFree(reptest.HostPort(st))).To(BeTrue())
		Expect(exe.Instances()).To(BeEmpty())
		ev := reptest.NextEvent(exe)
		Expect(ev.Kind).To(Equal(executor.Exited))
		Expect(ev.InstanceGuid).To(Equal("stoppable"))
		Expect(ev.Reason).To(BeEmpty())

		log, err := exe.LogTail("stoppable", 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(log).To(ContainSubstring("stopping: SIGTERM to process group"))
		Expect(log).To(ContainSubstring("hello: "))
		Expect(log).To(ContainSubstring("got SIGTERM: exiting"))
		Expect(log).To(ContainSubstring("stopped: exited with code 0"))
		Expect(log).NotTo(ContainSubstring("SIGKILL"))
	})

	Context("with a one-port range", func() {
		BeforeEach(func() {
			cfg.PortMin, cfg.PortMax = reptest.FreePortRange(1)
		})

		It("hands the port of a stopped instance to the next one", func() {
			first := reptest.RunHealthy(exe, reptest.Spec("first", reptest.HelloDefinition(reptest.HTTPCheck())))
			Expect(exe.Stop("first")).To(Succeed())
			Expect(reptest.NextEvent(exe).Kind).To(Equal(executor.Exited))
			second := reptest.RunHealthy(exe, reptest.Spec("second", reptest.HelloDefinition(reptest.HTTPCheck())))
			Expect(reptest.HostPort(second)).To(Equal(reptest.HostPort(first)))
		})
	})

	Context("when the process ignores SIGTERM", func() {
		BeforeEach(func() {
			cfg.StopTimeout = time.Second
		})

		It("sends SIGKILL to the whole group after the stop timeout", func() {
			_, err := exe.Run(reptest.Spec("stubborn", reptest.ShellDefinition(`trap "" TERM; echo trapped; sleep 100`)))
			Expect(err).NotTo(HaveOccurred())
			Expect(reptest.NextEvent(exe).Kind).To(Equal(executor.Healthy))
			pid := reptest.Status(exe, "stubborn").Pid
			// Stopping before the trap is set would not test the trap.
			Eventually(func() ([]byte, error) { return exe.LogTail("stubborn", 100) }).Should(ContainSubstring("trapped"))

			Expect(exe.Stop("stubborn")).To(Succeed())
			Expect(groupGone(pid)).To(BeTrue())
			ev := reptest.NextEvent(exe)
			Expect(ev.Kind).To(Equal(executor.Exited))
			Expect(exe.LogTail("stubborn", 100)).To(ContainSubstring("still running 1s after SIGTERM: SIGKILL to process group"))
		})
	})

	It("stops an instance that is not healthy yet, without reporting it healthy or crashed", func() {
		_, err := exe.Run(reptest.Spec("starting", reptest.HelloDefinition(reptest.HTTPCheck(), "UNHEALTHY", "1")))
		Expect(err).NotTo(HaveOccurred())
		Expect(exe.Stop("starting")).To(Succeed())
		ev := reptest.NextEvent(exe)
		Expect(ev.Kind).To(Equal(executor.Exited))
		Consistently(exe.Events(), time.Second).ShouldNot(Receive())
	})

	It("lets two Stops of one instance both wait for it, with one Exited event", func() {
		reptest.RunHealthy(exe, reptest.Spec("double", reptest.HelloDefinition(reptest.HTTPCheck())))
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Go(func() { errs[i] = exe.Stop("double") })
		}
		wg.Wait()
		for _, err := range errs {
			Expect(err).To(Or(Succeed(), MatchError(executor.ErrInstanceNotFound)))
		}
		Expect(reptest.NextEvent(exe).Kind).To(Equal(executor.Exited))
		Consistently(exe.Events(), time.Second).ShouldNot(Receive())
	})

	It("refuses an instance it does not run", func() {
		err := exe.Stop("unknown")
		Expect(errors.Is(err, executor.ErrInstanceNotFound)).To(BeTrue(), "%v", err)
	})

	It("refuses an instance that already crashed", func() {
		_, err := exe.Run(reptest.Spec("gone", reptest.ShellDefinition("exit 1")))
		Expect(err).NotTo(HaveOccurred())
		Eventually(exe.Events()).Should(Receive(HaveField("Kind", executor.Crashed)))
		err = exe.Stop("gone")
		Expect(errors.Is(err, executor.ErrInstanceNotFound)).To(BeTrue(), "%v", err)
	})
})

var _ = Describe("Executor.Shutdown", func() {
	It("stops every instance, and refuses to run more", func() {
		exe := reptest.StartExecutor(newConfig())
		a := reptest.RunHealthy(exe, reptest.Spec("a", reptest.HelloDefinition(reptest.HTTPCheck())))
		b := reptest.RunHealthy(exe, reptest.Spec("b", reptest.HelloDefinition(reptest.TCPCheck())))

		exe.Shutdown()
		Expect(processGone(a.Pid)).To(BeTrue())
		Expect(processGone(b.Pid)).To(BeTrue())
		Expect(exe.Instances()).To(BeEmpty())
		kinds := []executor.EventKind{reptest.NextEvent(exe).Kind, reptest.NextEvent(exe).Kind}
		Expect(kinds).To(Equal([]executor.EventKind{executor.Exited, executor.Exited}))

		_, err := exe.Run(reptest.Spec("c", reptest.HelloDefinition(nil)))
		Expect(err).To(MatchError("instance c: the executor is shut down"))
	})
})
