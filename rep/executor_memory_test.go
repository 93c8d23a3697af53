package rep_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
)

// memory_mb on a real instance, through the watchdog (CgroupRoot "-"), the
// mechanism that works everywhere: an instance that grows past its limit
// crashes saying so; one under it runs on.
var _ = Describe("Executor memory limits", func() {
	var executor *rep.Executor

	BeforeEach(func() {
		buildMemhog()
		cfg := newConfig()
		cfg.CgroupRoot = "-"
		cfg.MemoryCheckInterval = testMemoryInterval
		executor = startExecutor(cfg)
	})

	hogDefinition := func(limitMB int32, args ...string) *models.LRPDefinition {
		return &models.LRPDefinition{
			DefinitionId: "v1",
			Action:       &models.RunAction{Path: memhogPath, Args: args},
			MemoryMb:     limitMB,
		}
	}

	It("crashes an instance that exceeds memory_mb, with the limit in its reason and its log", func() {
		_, err := executor.Run(spec("hungry", hogDefinition(32, "-mb", "96")))
		Expect(err).NotTo(HaveOccurred())
		var ev rep.Event
		for ev.Kind != rep.Crashed {
			ev = nextEvent(executor)
			Expect(ev.Kind).To(BeElementOf(rep.Healthy, rep.Crashed))
		}
		Expect(ev.Reason).To(HavePrefix("exceeded its memory limit of 32 MB (resident "))
		log, err := executor.LogTail("hungry", 100)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).To(ContainSubstring("memory limit 32 MB, enforced by watchdog: RSS of the process group every 50ms"))
		Expect(string(log)).To(ContainSubstring("crashed: exceeded its memory limit of 32 MB"))
	})

	It("leaves an instance under its limit running", func() {
		st := runHealthy(executor, spec("modest", hogDefinition(128, "-mb", "16")))
		Eventually(func() (string, error) {
			log, err := executor.LogTail("modest", 100)
			return string(log), err
		}).Should(ContainSubstring("MB in use"))
		// Several watchdog passes later it still runs.
		Consistently(executor.Events(), 10*testMemoryInterval).ShouldNot(Receive())
		Expect(processGone(st.Pid)).To(BeFalse())
		Expect(executor.Stop("modest")).To(Succeed())
	})
})
