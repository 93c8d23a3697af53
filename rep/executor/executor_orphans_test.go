package executor_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/rep/internal/reptest"
)

var _ = Describe("instances of a rep that dies", func() {
	var dataDir string

	BeforeEach(func() {
		dataDir = GinkgoT().TempDir()
	})

	// startParent runs rep/internal/testparent, a stand-in rep that runs
	// one instance, and returns it with the instance's pid.
	startParent := func(args ...string) (*gexec.Session, int) {
		portMin, portMax := reptest.FreePortRange(1)
		args = append([]string{
			"-data-dir", dataDir,
			"-apps-dir", appsDir,
			"-port-min", strconv.Itoa(int(portMin)),
			"-port-max", strconv.Itoa(int(portMax)),
		}, args...)
		parent, err := gexec.Start(exec.Command(testParentPath, args...), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { parent.Kill().Wait() })
		Eventually(parent).Should(gbytes.Say(`pid \d+\n`))
		match := regexp.MustCompile(`pid (\d+)`).FindSubmatch(parent.Out.Contents())
		pid, err := strconv.Atoi(string(match[1]))
		Expect(err).NotTo(HaveOccurred())
		Expect(processGone(pid)).To(BeFalse())
		return parent, pid
	}

	It("die with it, even when it is SIGKILLed", func() {
		parent, pid := startParent()
		parent.Kill()
		Eventually(parent).Should(gexec.Exit())
		Eventually(func() bool { return processGone(pid) }).Should(BeTrue(), "instance pid %d outlived its rep", pid)
	})

	It("are reaped by the next executor on the same data dir when the instance's own children outlive it", func() {
		// Without isolation: isolated, a child's $! is its pid in the
		// instance's namespace, and it dies with the instance's init
		// (see executor_isolation_test.go).
		parent, pid := startParent("-isolation", "none", "-path", "sh", "--", "-c", "sleep 1000 & echo $! > child.pid; wait")
		childPidFile := filepath.Join(dataDir, "instances", "orphan-test-0", "child.pid")
		Eventually(childPidFile).Should(BeAnExistingFile())
		var child int
		Eventually(func() error {
			data, err := os.ReadFile(childPidFile)
			if err != nil {
				return err
			}
			child, err = strconv.Atoi(strings.TrimSpace(string(data)))
			return err
		}).Should(Succeed())

		parent.Kill()
		Eventually(parent).Should(gexec.Exit())
		Eventually(func() bool { return processGone(pid) }).Should(BeTrue())
		// Pdeathsig reaches the direct child only: the grandchild is still
		// there, which is what the next executor must clean up.
		Expect(processGone(child)).To(BeFalse(), fmt.Sprintf("grandchild %d", child))

		cfg := newConfig()
		cfg.DataDir = dataDir
		reptest.StartExecutor(cfg)
		Eventually(func() bool { return processGone(child) }).Should(BeTrue(), "grandchild %d outlived the next executor's start", child)
	})

	It("leave no writer blocked on the output pipe: one still writing when the rep dies gets SIGPIPE", func() {
		// The background loop writes without pause; once the rep is gone
		// nobody reads the pipe, and it must die of that rather than block
		// on a full pipe until the next executor comes.
		// Without isolation, as above.
		parent, pid := startParent("-isolation", "none", "-path", "sh", "--", "-c", `while :; do echo spam; done & echo $! > writer.pid; wait`)
		writerPidFile := filepath.Join(dataDir, "instances", "orphan-test-0", "writer.pid")
		var writer int
		Eventually(func() error {
			data, err := os.ReadFile(writerPidFile)
			if err != nil {
				return err
			}
			writer, err = strconv.Atoi(strings.TrimSpace(string(data)))
			return err
		}).Should(Succeed())
		DeferCleanup(func() {
			if !processGone(writer) {
				_ = syscall.Kill(writer, syscall.SIGKILL)
			}
		})

		parent.Kill()
		Eventually(parent).Should(gexec.Exit())
		Eventually(func() bool { return processGone(pid) }).Should(BeTrue())
		Eventually(func() bool { return processGone(writer) }).Should(BeTrue(), "writer %d outlived its rep", writer)
	})

	It("leaves a process alone whose pid was reused by a stranger", func() {
		stranger := exec.Command("sleep", "1000")
		Expect(stranger.Start()).To(Succeed())
		DeferCleanup(func() { _ = stranger.Process.Kill(); _ = stranger.Wait() })
		dir := filepath.Join(dataDir, "instances", "old-instance")
		Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
		// The recorded start time is not the stranger's.
		pidFile := filepath.Join(dataDir, "instances", ".old-instance.pid")
		Expect(os.WriteFile(pidFile, fmt.Appendf(nil, "%d 1\n", stranger.Process.Pid), 0o644)).To(Succeed())
		Expect(os.WriteFile(instanceLogFile(dataDir, "old-instance"), []byte("old news\n"), 0o644)).To(Succeed())

		cfg := newConfig()
		cfg.DataDir = dataDir
		exe := reptest.StartExecutor(cfg)
		Expect(processGone(stranger.Process.Pid)).To(BeFalse())
		// The old instance's log stays readable.
		Expect(exe.LogTail("old-instance", 1)).To(Equal([]byte("old news\n")))
		Expect(pidFile).NotTo(BeAnExistingFile())
	})

	It("removes the logs an earlier rep left of instances whose directories are gone, and keeps the others", func() {
		instances := filepath.Join(dataDir, "instances")
		Expect(os.MkdirAll(filepath.Join(instances, "kept"), 0o755)).To(Succeed())
		for _, name := range []string{".gone.log", ".gone.log.1", ".kept.log", ".kept.log.1", "unrelated.log"} {
			Expect(os.WriteFile(filepath.Join(instances, name), []byte("old news\n"), 0o644)).To(Succeed())
		}

		cfg := newConfig()
		cfg.DataDir = dataDir
		exe := reptest.StartExecutor(cfg)
		Expect(filepath.Join(instances, ".gone.log")).NotTo(BeAnExistingFile())
		Expect(filepath.Join(instances, ".gone.log.1")).NotTo(BeAnExistingFile())
		Expect(filepath.Join(instances, "unrelated.log")).To(BeAnExistingFile())
		Expect(exe.LogTail("kept", 2)).To(Equal([]byte("old news\nold news\n")))
	})

	It("ignores a pid file in an instance's own directory, which an isolated instance may write", func() {
		// A group leader, as the group a forged file could name.
		stranger := exec.Command("sleep", "1000")
		stranger.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		Expect(stranger.Start()).To(Succeed())
		DeferCleanup(func() { _ = stranger.Process.Kill(); _ = stranger.Wait() })
		dir := filepath.Join(dataDir, "instances", "forger")
		Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
		// The stranger's true start time: were this file read, the
		// stranger's group would be killed.
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", stranger.Process.Pid))
		Expect(err).NotTo(HaveOccurred())
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		Expect(os.WriteFile(filepath.Join(dir, "pid"), fmt.Appendf(nil, "%d %s\n", stranger.Process.Pid, fields[19]), 0o644)).To(Succeed())

		cfg := newConfig()
		cfg.DataDir = dataDir
		reptest.StartExecutor(cfg)
		Consistently(func() bool { return processGone(stranger.Process.Pid) }, 500*time.Millisecond).Should(BeFalse())
	})
})
