package executor_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

var _ = Describe("Executor.Events", func() {
	It("never makes Run, an exit or Stop wait for a reader, and loses nothing", func() {
		exe := reptest.StartExecutor(newConfig())
		// More endings than the channel holds, with nobody reading.
		const quick = 100
		for i := range quick {
			_, err := exe.Run(reptest.Spec(fmt.Sprintf("quick-%d", i), reptest.ShellDefinition("exit 0")))
			Expect(err).NotTo(HaveOccurred())
		}
		Eventually(exe.Instances).Should(BeEmpty())
		_, err := exe.Run(reptest.Spec("last", reptest.HelloDefinition(nil)))
		Expect(err).NotTo(HaveOccurred())
		Expect(exe.Stop("last")).To(Succeed())

		ends := map[string]executor.EventKind{}
		for len(ends) < quick+1 {
			ev := reptest.NextEvent(exe)
			if ev.Kind == executor.Healthy {
				Expect(ends).NotTo(HaveKey(ev.InstanceGuid), "Healthy after the end of %s", ev.InstanceGuid)
				continue
			}
			Expect(ends).NotTo(HaveKey(ev.InstanceGuid), "two ends of %s", ev.InstanceGuid)
			ends[ev.InstanceGuid] = ev.Kind
		}
		Expect(ends).To(HaveKeyWithValue("last", executor.Exited))
		for i := range quick {
			Expect(ends).To(HaveKeyWithValue(fmt.Sprintf("quick-%d", i), executor.Crashed))
		}
	})
})
