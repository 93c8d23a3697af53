package executor_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
	"github.com/corkboard/corkboard/rep/isolation"
)

var _ = Describe("Executor crashes", func() {
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

	// expectCrash waits for the instance's Crashed event and checks that
	// the process is gone, its ports are free and it is no longer listed.
	expectCrash := func(st executor.InstanceStatus, reason string) {
		ev := reptest.NextEvent(exe)
		Expect(ev.Kind).To(Equal(executor.Crashed))
		Expect(ev.InstanceGuid).To(Equal(st.InstanceGuid))
		Expect(ev.ProcessGuid).To(Equal(st.ProcessGuid))
		Expect(ev.Reason).To(Equal(reason))
		Expect(processGone(st.Pid)).To(BeTrue())
		for _, m := range st.NetInfo.GetPorts() {
			Expect(reptest.PortFree(m.GetHostPort())).To(BeTrue(), "port %d", m.GetHostPort())
		}
		Expect(exe.Instances()).To(BeEmpty())
	}

	It("reports an app that exits on its own with its exit code", func() {
		st := reptest.RunHealthy(exe, reptest.Spec("crasher", reptest.HelloDefinition(reptest.HTTPCheck(), "CRASH_AFTER", "1s")))
		expectCrash(st, "exited with code 3")
		Expect(exe.LogTail("crasher", 100)).To(ContainSubstring("CRASH_AFTER=1s passed: exiting with code 3"))
	})

	It("reports an app killed by a signal with the signal", func() {
		st := reptest.RunHealthy(exe, reptest.Spec("victim", reptest.HelloDefinition(reptest.HTTPCheck())))
		Expect(syscall.Kill(st.Pid, syscall.SIGKILL)).To(Succeed())
		expectCrash(st, "killed by signal 9")
	})

	It("reports an exit before the app became healthy as the exit, not as a timeout", func() {
		_, err := exe.Run(reptest.Spec("early", reptest.HelloDefinition(reptest.HTTPCheck(), "UNHEALTHY", "1", "CRASH_AFTER", "0.5")))
		Expect(err).NotTo(HaveOccurred())
		ev := reptest.NextEvent(exe)
		Expect(ev.Kind).To(Equal(executor.Crashed))
		Expect(ev.Reason).To(Equal("exited with code 3"))
	})

	It("kills and reports an app that never becomes healthy once its start timeout passes", func() {
		def := reptest.HelloDefinition(reptest.HTTPCheck(), "UNHEALTHY", "1")
		def.StartTimeoutMs = 5000
		_, err := exe.Run(reptest.Spec("never", def))
		Expect(err).NotTo(HaveOccurred())
		st := reptest.Status(exe, "never")
		// No Healthy first: the crash is the instance's only event.
		expectCrash(st, "did not become healthy within 5s: GET /health on port 8080: 503")
	})

	It("says why a TCP check failed when the app never listens", func() {
		def := &models.LRPDefinition{
			Action:         &models.RunAction{Path: "sleep", Args: []string{"100"}},
			Ports:          []uint32{8080},
			HealthCheck:    reptest.TCPCheck(),
			StartTimeoutMs: 1000,
		}
		_, err := exe.Run(reptest.Spec("deaf", def))
		Expect(err).NotTo(HaveOccurred())
		expectCrash(reptest.Status(exe, "deaf"), "did not become healthy within 1s: TCP connect to port 8080: connection refused")
	})

	Context("without isolation", func() {
		// Isolated, the child's pid in $! is its pid in the instance's
		// namespace, and the namespace ends with the instance anyway
		// (see executor_isolation_test.go); this is the fallback's
		// process group kill.
		BeforeEach(func() { cfg.Isolation.Mode = isolation.None })

		It("kills whatever the app left in its process group when it exits", func() {
			_, err := exe.Run(reptest.Spec("parent", reptest.ShellDefinition("sleep 1000 & echo $! > child.pid; exit 4")))
			Expect(err).NotTo(HaveOccurred())
			// A PROCESS check may or may not see it healthy before it exits.
			Eventually(exe.Events()).Should(Receive(And(
				HaveField("Kind", executor.Crashed),
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
