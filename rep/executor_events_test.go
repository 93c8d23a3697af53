package rep_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/rep"
)

var _ = Describe("Executor.Events", func() {
	It("never makes Run, an exit or Stop wait for a reader, and loses nothing", func() {
		executor := startExecutor(newConfig())
		// More endings than the channel holds, with nobody reading.
		const quick = 100
		for i := range quick {
			_, err := executor.Run(spec(fmt.Sprintf("quick-%d", i), shellDefinition("exit 0")))
			Expect(err).NotTo(HaveOccurred())
		}
		Eventually(executor.Instances).Should(BeEmpty())
		_, err := executor.Run(spec("last", helloDefinition(nil)))
		Expect(err).NotTo(HaveOccurred())
		Expect(executor.Stop("last")).To(Succeed())

		ends := map[string]rep.EventKind{}
		for len(ends) < quick+1 {
			ev := nextEvent(executor)
			if ev.Kind == rep.Healthy {
				Expect(ends).NotTo(HaveKey(ev.InstanceGuid), "Healthy after the end of %s", ev.InstanceGuid)
				continue
			}
			Expect(ends).NotTo(HaveKey(ev.InstanceGuid), "two ends of %s", ev.InstanceGuid)
			ends[ev.InstanceGuid] = ev.Kind
		}
		Expect(ends).To(HaveKeyWithValue("last", rep.Exited))
		for i := range quick {
			Expect(ends).To(HaveKeyWithValue(fmt.Sprintf("quick-%d", i), rep.Crashed))
		}
	})
})
