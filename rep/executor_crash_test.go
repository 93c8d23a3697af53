package rep_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
	"github.com/corkboard/corkboard/rep/isolation"
)

var _ = Describe("Executor crashes", func() {
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

	// expectCrash waits for the instance's Crashed event and checks that
	// the process is gone, its ports are free and it is no longer listed.
	expectCrash := func(st rep.InstanceStatus, reason string) {
		ev := nextEvent(executor)
		Expect(ev.Kind).To(Equal(rep.Crashed))
		Expect(ev.InstanceGuid).To(Equal(st.InstanceGuid))
		Expect(ev.ProcessGuid).To(Equal(st.ProcessGuid))
		Expect(ev.Reason).To(Equal(reason))
		Expect(processGone(st.Pid)).To(BeTrue())
		for _, m := range st.NetInfo.GetPorts() {
			Expect(portFree(m.GetHostPort())).To(BeTrue(), "port %d", m.GetHostPort())
		}
		Expect(executor.Instances()).To(BeEmpty())
	}

	It("reports an app that exits on its own with its exit code", func() {
		st := runHealthy(executor, spec("crasher", helloDefinition(httpCheck(), "CRASH_AFTER", "1s")))
		expectCrash(st, "exited with code 3")
		Expect(executor.LogTail("crasher", 100)).To(ContainSubstring("CRASH_AFTER=1s passed: exiting with code 3"))
	})

	It("reports an app killed by a signal with the signal", func() {
		st := runHealthy(executor, spec("victim", helloDefinition(httpCheck())))
		Expect(syscall.Kill(st.Pid, syscall.SIGKILL)).To(Succeed())
		expectCrash(st, "killed by signal 9")
	})

	It("reports an exit before the app became healthy as the exit, not as a timeout", func() {
		_, err := executor.Run(spec("early", helloDefinition(httpCheck(), "UNHEALTHY", "1", "CRASH_AFTER", "0.5")))
		Expect(err).NotTo(HaveOccurred())
		ev := nextEvent(executor)
		Expect(ev.Kind).To(Equal(rep.Crashed))
		Expect(ev.Reason).To(Equal("exited with code 3"))
	})

	It("kills and reports an app that never becomes healthy once its start timeout passes", func() {
		def := helloDefinition(httpCheck(), "UNHEALTHY", "1")
		def.StartTimeoutMs = 5000
		_, err := executor.Run(spec("never", def))
		Expect(err).NotTo(HaveOccurred())
		st := status(executor, "never")
		// No Healthy first: the crash is the instance's only event.
		expectCrash(st, "did not become healthy within 5s: GET /health on port 8080: 503")
	})

	It("says why a TCP check failed when the app never listens", func() {
		def := &models.LRPDefinition{
			Action:         &models.RunAction{Path: "sleep", Args: []string{"100"}},
			Ports:          []uint32{8080},
			HealthCheck:    tcpCheck(),
			StartTimeoutMs: 1000,
		}
		_, err := executor.Run(spec("deaf", def))
		Expect(err).NotTo(HaveOccurred())
		expectCrash(status(executor, "deaf"), "did not become healthy within 1s: TCP connect to port 8080: connection refused")
	})

	Context("without isolation", func() {
		// Isolated, the child's pid in $! is its pid in the instance's
		// namespace, and the namespace ends with the instance anyway
		// (see executor_isolation_test.go); this is the fallback's
		// process group kill.
		BeforeEach(func() { cfg.Isolation.Mode = isolation.None })

		It("kills whatever the app left in its process group when it exits", func() {
			_, err := executor.Run(spec("parent", shellDefinition("sleep 1000 & echo $! > child.pid; exit 4")))
			Expect(err).NotTo(HaveOccurred())
			// A PROCESS check may or may not see it healthy before it exits.
			Eventually(executor.Events()).Should(Receive(And(
				HaveField("Kind", rep.Crashed),
				HaveField("Reason", "exited with code 4"),
			)))

			data, err := os.ReadFile(filepath.Join(cfg.DataDir, "instances", "parent", "child.pid"))
			Expect(err).NotTo(HaveOccurred())
			child, err := strconv.Atoi(strings.TrimSpace(string(data)))
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() bool { return processGone(child) }).Should(BeTrue())
		})
	})
})
