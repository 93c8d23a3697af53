package executor_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

// memory_mb on a real instance, through the watchdog (CgroupRoot "-"), the
// mechanism that works everywhere: an instance that grows past its limit
// crashes saying so; one under it runs on.
var _ = Describe("Executor memory limits", func() {
	var exe *executor.Executor

	BeforeEach(func() {
		buildMemhog()
		cfg := newConfig()
		cfg.CgroupRoot = "-"
		cfg.MemoryCheckInterval = testMemoryInterval
		exe = reptest.StartExecutor(cfg)
	})

	hogDefinition := func(limitMB int32, args ...string) *models.LRPDefinition {
		return &models.LRPDefinition{
			DefinitionId: "v1",
			Action:       &models.RunAction{Path: memhogPath, Args: args},
			MemoryMb:     limitMB,
		}
	}

	It("crashes an instance that exceeds memory_mb, with the limit in its reason and its log", func() {
		_, err := exe.Run(reptest.Spec("hungry", hogDefinition(32, "-mb", "96")))
		Expect(err).NotTo(HaveOccurred())
		var ev executor.Event
		for ev.Kind != executor.Crashed {
			ev = reptest.NextEvent(exe)
			Expect(ev.Kind).To(BeElementOf(executor.Healthy, executor.Crashed))
		}
		Expect(ev.Reason).To(HavePrefix("exceeded its memory limit of 32 MB (resident "))
		log, err := exe.LogTail("hungry", 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).To(ContainSubstring("memory limit 32 MB, enforced by watchdog: RSS of the process group every 50ms"))
		Expect(string(log)).To(ContainSubstring("crashed: exceeded its memory limit of 32 MB"))
	})

	It("leaves an instance under its limit running", func() {
		st := reptest.RunHealthy(exe, reptest.Spec("modest", hogDefinition(128, "-mb", "16")))
		Eventually(func() (string, error) {
			log, err := exe.LogTail("modest", 100)
			return string(log), err
		}).Should(ContainSubstring("MB in use"))
		// Several watchdog passes later it still runs.
		Consistently(exe.Events(), 10*testMemoryInterval).ShouldNot(Receive())
		Expect(processGone(st.Pid)).To(BeFalse())
		Expect(exe.Stop("modest")).To(Succeed())
	})
})
