//go:build linux

// The memory guard works on Linux only (cgroups, /proc); so do its specs.

package executor_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/rep/executor"
)

// memhogPath is the built rep/internal/memhog, built by the first spec
// that needs it.
var memhogPath string

// testMemoryInterval keeps the specs short; nothing in them depends on
// how soon a pass comes.
const testMemoryInterval = 50 * time.Millisecond

func buildMemhog() {
	if memhogPath != "" {
		return
	}
	path, err := gexec.Build("github.com/corkboard/corkboard/rep/internal/memhog")
	Expect(err).NotTo(HaveOccurred())
	// In the apps dir, which isolated instances see (gexec's own
	// directory they do not).
	memhogPath = filepath.Join(appsDir, "memhog")
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(memhogPath, data, 0o755)).To(Succeed())
}

// hog is a running memhog, in a process group of its own as an instance
// is, killed with its group when the spec ends.
type hog struct {
	session *gexec.Session
	pgid    int
	stdin   io.WriteCloser
}

func startHog(path string, args ...string) *hog {
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	Expect(err).NotTo(HaveOccurred())
	session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	h := &hog{session: session, pgid: cmd.Process.Pid, stdin: stdin}
	DeferCleanup(func() {
		_ = syscall.Kill(-h.pgid, syscall.SIGKILL)
		stdin.Close()
		Eventually(session).Should(gexec.Exit())
	})
	return h
}

// inUse waits for the hog (or one of its children) to say it holds mb MB.
func (h *hog) inUse(mb int) {
	Eventually(h.session).Should(gbytes.Say(fmt.Sprintf(`: %d MB in use\n`, mb)))
}

// grow has the hog take mb MB more.
func (h *hog) grow(mb int) {
	_, err := fmt.Fprintf(h.stdin, "grow %d\n", mb)
	Expect(err).NotTo(HaveOccurred())
}

func (h *hog) alive() bool {
	return !processGone(h.pgid)
}

// killedBy waits for the hog's leader to end and returns the signal that
// killed it (0 if it exited).
func (h *hog) killedBy() syscall.Signal {
	Eventually(h.session).Should(gexec.Exit())
	status := h.session.Command.ProcessState.Sys().(syscall.WaitStatus)
	if !status.Signaled() {
		return 0
	}
	return status.Signal()
}

// newWatchdogGuard is a guard that never uses cgroups, closed when the
// spec ends.
func newWatchdogGuard() *executor.MemoryGuard {
	guard := executor.NewMemoryGuard(executor.MemoryGuardConfig{
		Interval:   testMemoryInterval,
		CgroupRoot: "-",
		Logger:     lagertest.NewTestLogger("rep"),
	})
	DeferCleanup(guard.Close)
	return guard
}

// waitForPasses waits until the watchdog has read /proc n more times.
func waitForPasses(guard *executor.MemoryGuard, n int64) {
	start := guard.Passes()
	Eventually(guard.Passes).Should(BeNumerically(">=", start+n))
}

func watch(guard *executor.MemoryGuard, instanceGuid string, pgid int, limitMB int32) *executor.MemoryWatch {
	w, err := guard.Watch(instanceGuid, pgid, limitMB)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	return w
}

func notExceeded(w *executor.MemoryWatch) {
	reason, ok := w.Exceeded()
	Expect(ok).To(BeFalse(), reason)
	Expect(reason).To(BeEmpty())
}

// residentMB parses the resident size out of a watchdog's reason.
var residentPattern = regexp.MustCompile(`\(resident (\d+\.\d) MB in (\d+) process(es)?\)$`)

func residentMB(reason string) (float64, int) {
	m := residentPattern.FindStringSubmatch(reason)
	Expect(m).NotTo(BeNil(), reason)
	mb, err := strconv.ParseFloat(m[1], 64)
	Expect(err).NotTo(HaveOccurred())
	processes, err := strconv.Atoi(m[2])
	Expect(err).NotTo(HaveOccurred())
	return mb, processes
}

// groupMembers lists the live processes of a process group.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	Expect(err).NotTo(HaveOccurred())
	var pids []int
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		state, group, ok := procStat(pid)
		if ok && group == pgid && state != "Z" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// residentKiB is a process's VmRSS.
func residentKiB(pid int) int {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	Expect(err).NotTo(HaveOccurred())
	for line := range strings.SplitSeq(string(status), "\n") {
		if value, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(value), " kB"))
			Expect(err).NotTo(HaveOccurred())
			return kib
		}
	}
	Fail(fmt.Sprintf("no VmRSS for %d", pid))
	return 0
}

var _ = Describe("memory guard", func() {
	BeforeEach(buildMemhog)

	Describe("watchdog", func() {
		var guard *executor.MemoryGuard

		BeforeEach(func() {
			guard = newWatchdogGuard()
		})

		It("kills a group that grows past its limit with SIGKILL, and says why", func() {
			h := startHog(memhogPath, "-mb", "16")
			h.inUse(16)
			w := watch(guard, "grower", h.pgid, 64)
			Expect(w.Mechanism()).To(Equal("watchdog: RSS of the process group every 50ms"))
			waitForPasses(guard, 2)
			Expect(h.alive()).To(BeTrue())
			notExceeded(w)

			h.grow(100)
			Expect(h.killedBy()).To(Equal(syscall.SIGKILL))
			reason, ok := w.Exceeded()
			Expect(ok).To(BeTrue())
			Expect(reason).To(HavePrefix("exceeded its memory limit of 64 MB (resident "))
			mb, processes := residentMB(reason)
			Expect(mb).To(BeNumerically(">", 64))
			Expect(processes).To(Equal(1))

			// The reason outlives the watch.
			w.Stop()
			again, ok := w.Exceeded()
			Expect(ok).To(BeTrue())
			Expect(again).To(Equal(reason))
		})

		It("leaves a group under its limit running", func() {
			h := startHog(memhogPath, "-mb", "16")
			h.inUse(16)
			w := watch(guard, "modest", h.pgid, 64)
			waitForPasses(guard, 5)

			Expect(h.alive()).To(BeTrue())
			notExceeded(w)
			// It was measured, not overlooked.
			resident, processes := w.LastSeen()
			Expect(resident).To(BeNumerically(">=", 16<<20))
			Expect(resident).To(BeNumerically("<", 64<<20))
			Expect(processes).To(Equal(1))
		})

		It("sums the resident memory of all the processes of the group", func() {
			// A leader that holds little and two children of 40 MB each.
			h := startHog(memhogPath, "-mb", "40", "-children", "2")
			h.inUse(40)
			h.inUse(40)
			members := groupMembers(h.pgid)
			Expect(members).To(HaveLen(3))
			for _, pid := range members {
				Expect(residentKiB(pid)).To(BeNumerically("<", 64<<10), "each process on its own is under the limit")
			}

			w := watch(guard, "family", h.pgid, 64)
			Expect(h.killedBy()).To(Equal(syscall.SIGKILL))
			Eventually(func() bool { return groupGone(h.pgid) }).Should(BeTrue())
			reason, ok := w.Exceeded()
			Expect(ok).To(BeTrue())
			mb, processes := residentMB(reason)
			Expect(mb).To(BeNumerically(">", 80))
			Expect(processes).To(Equal(3))
		})

		It("stops watching a group after Stop", func() {
			stopped := startHog(memhogPath, "-mb", "16")
			other := startHog(memhogPath, "-mb", "8")
			stopped.inUse(16)
			other.inUse(8)
			w := watch(guard, "stopped", stopped.pgid, 64)
			// The other group keeps the watchdog reading /proc.
			otherWatch := watch(guard, "other", other.pgid, 64)
			waitForPasses(guard, 2)

			w.Stop()
			w.Stop()
			stopped.grow(100)
			stopped.inUse(116)
			waitForPasses(guard, 5)

			Expect(stopped.alive()).To(BeTrue())
			notExceeded(w)
			Expect(other.alive()).To(BeTrue())
			notExceeded(otherWatch)

			// Its group is free to be watched again.
			again := watch(guard, "stopped-again", stopped.pgid, 256)
			waitForPasses(guard, 2)
			Expect(stopped.alive()).To(BeTrue())
			notExceeded(again)
		})

		It("watches several groups at once and kills only the one over its limit", func() {
			small := startHog(memhogPath, "-mb", "16")
			big := startHog(memhogPath, "-mb", "100")
			offender := startHog(memhogPath, "-mb", "100")
			small.inUse(16)
			big.inUse(100)
			offender.inUse(100)

			smallWatch := watch(guard, "small", small.pgid, 64)
			bigWatch := watch(guard, "big", big.pgid, 256)
			offenderWatch := watch(guard, "offender", offender.pgid, 64)

			Expect(offender.killedBy()).To(Equal(syscall.SIGKILL))
			reason, ok := offenderWatch.Exceeded()
			Expect(ok).To(BeTrue())
			Expect(reason).To(HavePrefix("exceeded its memory limit of 64 MB "))

			waitForPasses(guard, 5)
			Expect(small.alive()).To(BeTrue())
			Expect(big.alive()).To(BeTrue())
			notExceeded(smallWatch)
			notExceeded(bigWatch)
			// Big is over the offender's limit, and under its own.
			resident, _ := bigWatch.LastSeen()
			Expect(resident).To(BeNumerically(">", 64<<20))
		})

		It("enforces nothing for a limit of 0 or less", func() {
			h := startHog(memhogPath, "-mb", "100")
			h.inUse(100)
			unlimited := watch(guard, "unlimited", h.pgid, 0)
			negative := watch(guard, "negative", h.pgid, -1)
			Expect(unlimited.Mechanism()).To(Equal("none: no memory limit"))
			Expect(negative.Mechanism()).To(Equal("none: no memory limit"))

			driver := startHog(memhogPath, "-mb", "0")
			watch(guard, "driver", driver.pgid, 64)
			waitForPasses(guard, 5)
			Expect(h.alive()).To(BeTrue())
			notExceeded(unlimited)
			notExceeded(negative)
		})

		It("refuses a bad process group, a group watched twice and a closed guard", func() {
			h := startHog(memhogPath, "-mb", "0")
			_, err := guard.Watch("bad", 0, 64)
			Expect(err).To(MatchError(ContainSubstring("bad process group 0")))

			watch(guard, "first", h.pgid, 64)
			_, err = guard.Watch("second", h.pgid, 64)
			Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf("process group %d is already watched for instance first", h.pgid))))

			guard.Close()
			guard.Close()
			_, err = guard.Watch("late", h.pgid+1, 64)
			Expect(err).To(MatchError(ContainSubstring("the memory guard is closed")))
		})

		It("says how often it samples, 250ms by default", func() {
			guard := executor.NewMemoryGuard(executor.MemoryGuardConfig{CgroupRoot: "-"})
			DeferCleanup(guard.Close)
			h := startHog(memhogPath, "-mb", "0")
			w := watch(guard, "default", h.pgid, 64)
			Expect(w.Mechanism()).To(Equal("watchdog: RSS of the process group every 250ms"))
		})

		It("reads a process whose name holds spaces and parentheses", func() {
			// The kernel shows the name in /proc/<pid>/stat in parentheses,
			// as it is.
			data, err := os.ReadFile(memhogPath)
			Expect(err).NotTo(HaveOccurred())
			oddPath := filepath.Join(GinkgoT().TempDir(), "hog) (x y")
			Expect(os.WriteFile(oddPath, data, 0o755)).To(Succeed())
			h := startHog(oddPath, "-mb", "16")
			h.inUse(16)
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", h.pgid))
			Expect(err).NotTo(HaveOccurred())
			Expect(string(stat)).To(ContainSubstring("(hog) (x y)"))

			scan := executor.NewProcScan(h.pgid)
			Expect(scan.Pass()).To(Succeed())
			pages, processes := scan.Seen(h.pgid)
			Expect(processes).To(Equal(1))
			Expect(pages * int64(os.Getpagesize())).To(BeNumerically(">=", 16<<20))
		})
	})

	It("counts a child that left the group (setsid) with the group it came from", func() {
		h := startHog(memhogPath, "-children", "2", "-setsid", "-mb", "8")
		// Their own groups: the hog's cleanup does not reach them.
		pids := regexp.MustCompile(`memhog (\d+): 8 MB in use`)
		var children []int
		Eventually(func() int {
			children = nil
			for _, m := range pids.FindAllStringSubmatch(string(h.session.Out.Contents()), -1) {
				pid, _ := strconv.Atoi(m[1])
				children = append(children, pid)
			}
			return len(children)
		}).Should(Equal(2))
		DeferCleanup(func() {
			for _, pid := range children {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		})
		for _, pid := range children {
			pgid, err := syscall.Getpgid(pid)
			Expect(err).NotTo(HaveOccurred())
			Expect(pgid).To(Equal(pid), "the child leads a group of its own")
		}

		scan := executor.NewProcScan(h.pgid)
		Expect(scan.Pass()).To(Succeed())
		pages, processes := scan.Seen(h.pgid)
		Expect(processes).To(Equal(3))
		Expect(pages * int64(os.Getpagesize())).To(BeNumerically(">=", 16<<20))
	})

	Describe("parsing /proc/<pid>/stat", func() {
		It("takes the parent (field 4), the process group (field 5) and the resident pages (field 24)", func() {
			line := "1234 (my app) S 1 777 1234 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 8812 10743808 9000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
			ppid, pgrp, pages, ok := executor.ParseProcStat(line)
			Expect(ok).To(BeTrue())
			Expect(ppid).To(Equal(1))
			Expect(pgrp).To(Equal(777))
			Expect(pages).To(Equal(int64(9000)))

			ppid, pgrp, pages, ok = executor.ParseProcStat("1 (a) b) (c) S 5 42 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 1 8000 0")
			Expect(ok).To(BeTrue())
			Expect(ppid).To(Equal(5))
			Expect(pgrp).To(Equal(42))
			Expect(pages).To(Equal(int64(8000)))
		})

		It("refuses what it cannot read", func() {
			for _, line := range []string{
				"",
				"1234 no parentheses S 1 777",
				"1234 (cut short) S 1 777 1234 0",
				"1234 (bad) S 1 x 1234 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 1 8000 0",
				"1234 (bad) S 1 7 1234 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 1 -5 0",
			} {
				_, _, _, ok := executor.ParseProcStat(line)
				Expect(ok).To(BeFalse(), line)
			}
		})
	})

	Describe("cgroup v2 detection, against a fake cgroup tree", func() {
		var root, own, selfCgroup string
		var logger *lagertest.TestLogger

		// The rep lives in /rep.slice/rep.service, whose children may
		// have the controllers in subtreeControl.
		fakeTree := func(subtreeControl string) {
			root = GinkgoT().TempDir()
			Expect(os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644)).To(Succeed())
			own = filepath.Join(root, "rep.slice", "rep.service")
			Expect(os.MkdirAll(own, 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(own, "cgroup.subtree_control"), []byte(subtreeControl+"\n"), 0o644)).To(Succeed())
			selfCgroup = filepath.Join(GinkgoT().TempDir(), "cgroup")
			Expect(os.WriteFile(selfCgroup, []byte("0::/rep.slice/rep.service\n"), 0o644)).To(Succeed())
		}

		newGuard := func(cgroupRoot string) *executor.MemoryGuard {
			logger = lagertest.NewTestLogger("rep")
			guard := executor.NewMemoryGuardWithSelfCgroup(executor.MemoryGuardConfig{
				Interval:   testMemoryInterval,
				CgroupRoot: cgroupRoot,
				Logger:     logger,
			}, selfCgroup)
			DeferCleanup(guard.Close)
			return guard
		}

		// expectWatchdog checks that the guard does not use cgroups, for
		// the reason given, said once in its log, and that a watch falls
		// back to the watchdog.
		expectWatchdog := func(guard *executor.MemoryGuard, why string) {
			dir, whyNot := guard.CgroupParent()
			Expect(dir).To(BeEmpty())
			Expect(whyNot).To(ContainSubstring(why))
			Expect(logger.LogMessages()).To(ContainElement("rep.memory-guard.using-watchdog"))

			h := startHog(memhogPath, "-mb", "0")
			w := watch(guard, "guid-1", h.pgid, 64)
			Expect(w.Mechanism()).To(HavePrefix("watchdog: "))
			Expect(w.CgroupDir()).To(BeEmpty())
		}

		It("uses a cgroup under the rep's own when it can make one with the memory controller", func() {
			fakeTree("cpu memory pids")
			guard := newGuard(root)
			dir, whyNot := guard.CgroupParent()
			Expect(whyNot).To(BeEmpty())
			Expect(dir).To(Equal(own))
			Expect(logger.LogMessages()).To(ContainElement("rep.memory-guard.using-cgroups"))
			// The probe it made to find out is gone.
			entries, err := os.ReadDir(own)
			Expect(err).NotTo(HaveOccurred())
			Expect(entries).To(HaveLen(1))

			h := startHog(memhogPath, "-mb", "0")
			w, err := guard.Watch("guid-1", h.pgid, 64)
			Expect(err).NotTo(HaveOccurred())
			Expect(w.Mechanism()).To(Equal("cgroup v2 memory.max"))
			cgroup := filepath.Join(own, "corkboard-guid-1")
			Expect(w.CgroupDir()).To(Equal(cgroup))
			Expect(os.ReadFile(filepath.Join(cgroup, "memory.max"))).To(BeEquivalentTo("67108864"))
			Expect(os.ReadFile(filepath.Join(cgroup, "cgroup.procs"))).To(BeEquivalentTo(strconv.Itoa(h.pgid)))
			notExceeded(w)

			// The kernel counts what its OOM killer did in memory.events.
			Expect(os.WriteFile(filepath.Join(cgroup, "memory.events"), []byte("low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 1\n"), 0o644)).To(Succeed())
			reason, ok := w.Exceeded()
			Expect(ok).To(BeTrue())
			Expect(reason).To(Equal("exceeded its memory limit of 64 MB (the kernel's OOM killer killed 1 process in its cgroup)"))

			// rmdir takes a real cgroup's files with it; in the fake tree
			// the test takes them away first.
			for _, name := range []string{"memory.max", "cgroup.procs", "memory.events"} {
				Expect(os.Remove(filepath.Join(cgroup, name))).To(Succeed())
			}
			w.Stop()
			Expect(cgroup).NotTo(BeADirectory())
			again, ok := w.Exceeded()
			Expect(ok).To(BeTrue())
			Expect(again).To(Equal(reason))
			// The watchdog never watched it.
			Expect(guard.Passes()).To(BeZero())
		})

		It("limits an instance's processes in its cgroup (pids.max) when asked and the pids controller is enabled, and only then", func() {
			for _, c := range []struct {
				subtree      string
				maxProcesses uint64
				pidsMax      string // "" for none written
			}{
				{"cpu memory pids", 1024, "1024"},
				{"cpu memory", 1024, ""},   // no pids controller for the children
				{"cpu memory pids", 0, ""}, // no limit asked (instances not isolated)
			} {
				fakeTree(c.subtree)
				logger = lagertest.NewTestLogger("rep")
				guard := executor.NewMemoryGuardWithSelfCgroup(executor.MemoryGuardConfig{
					Interval: testMemoryInterval, CgroupRoot: root, Logger: logger, MaxProcesses: c.maxProcesses,
				}, selfCgroup)
				h := startHog(memhogPath, "-mb", "0")
				w, err := guard.Watch("guid-1", h.pgid, 64)
				Expect(err).NotTo(HaveOccurred())
				cgroup := filepath.Join(own, "corkboard-guid-1")
				Expect(w.CgroupDir()).To(Equal(cgroup))
				pidsMax, err := os.ReadFile(filepath.Join(cgroup, "pids.max"))
				if c.pidsMax == "" {
					Expect(err).To(MatchError(os.ErrNotExist), "%+v", c)
				} else {
					Expect(err).NotTo(HaveOccurred(), "%+v", c)
					Expect(string(pidsMax)).To(Equal(c.pidsMax), "%+v", c)
				}
				// rmdir takes a real cgroup's files with it; here the test does.
				entries, err := os.ReadDir(cgroup)
				Expect(err).NotTo(HaveOccurred())
				for _, e := range entries {
					Expect(os.Remove(filepath.Join(cgroup, e.Name()))).To(Succeed())
				}
				w.Stop()
				guard.Close()
			}
		})

		It("falls back to the watchdog when the root is not a cgroup v2 mount", func() {
			fakeTree("cpu memory pids")
			Expect(os.Remove(filepath.Join(root, "cgroup.controllers"))).To(Succeed())
			expectWatchdog(newGuard(root), "is not a cgroup v2 mount")
		})

		It("falls back to the watchdog when cgroups are turned off", func() {
			fakeTree("cpu memory pids")
			expectWatchdog(newGuard("-"), `cgroups are turned off (CgroupRoot "-")`)
		})

		It("falls back to the watchdog when the memory controller is not enabled for the rep's children", func() {
			fakeTree("cpu pids")
			expectWatchdog(newGuard(root), `the memory controller is not enabled for the children of the rep's cgroup `+own+` (its cgroup.subtree_control: "cpu pids")`)
		})

		It("falls back to the watchdog when the rep cannot create cgroups", func() {
			fakeTree("cpu memory pids")
			if os.Geteuid() != 0 {
				Expect(os.Chmod(own, 0o555)).To(Succeed())
				DeferCleanup(os.Chmod, own, os.FileMode(0o755))
			} else {
				// Root may write anywhere, except on a read-only mount.
				if err := syscall.Mount(own, own, "", syscall.MS_BIND, ""); err != nil {
					Skip("cannot bind-mount the fake cgroup: " + err.Error())
				}
				DeferCleanup(syscall.Unmount, own, 0)
				Expect(syscall.Mount("", own, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, "")).To(Succeed())
			}
			expectWatchdog(newGuard(root), "cannot create a cgroup under the rep's cgroup "+own)
		})

		It("falls back to the watchdog when the rep's cgroup file has no cgroup v2 line", func() {
			fakeTree("cpu memory pids")
			Expect(os.WriteFile(selfCgroup, []byte("4:memory:/rep.slice\n1:cpu:/\n"), 0o644)).To(Succeed())
			expectWatchdog(newGuard(root), "has no cgroup v2 line")
		})

		It("falls back to the watchdog for an instance whose cgroup cannot be made, and enforces the limit with it", func() {
			fakeTree("cpu memory pids")
			guard := newGuard(root)
			Expect(guard.CgroupParent()).To(Equal(own))
			// Something that is no cgroup, and not the guard's to remove.
			blocker := filepath.Join(own, "corkboard-guid-2")
			Expect(os.WriteFile(blocker, []byte("not a cgroup"), 0o644)).To(Succeed())

			h := startHog(memhogPath, "-mb", "0")
			w := watch(guard, "guid-2", h.pgid, 64)
			Expect(w.Mechanism()).To(Equal("watchdog: RSS of the process group every 50ms"))
			Expect(blocker).To(BeARegularFile())
			Expect(logger.LogMessages()).To(ContainElement("rep.memory-guard.cgroup-failed-using-watchdog"))

			h.grow(100)
			Expect(h.killedBy()).To(Equal(syscall.SIGKILL))
			reason, ok := w.Exceeded()
			Expect(ok).To(BeTrue())
			Expect(reason).To(HavePrefix("exceeded its memory limit of 64 MB (resident "))
		})
	})
})

// BenchmarkMemoryWatchdogPass times one watchdog pass over /proc with at
// least 200 processes on the machine (sleepers are added to get there),
// 50 groups of them watched:
//
//	go test ./rep -run '^$' -bench MemoryWatchdogPass
func BenchmarkMemoryWatchdogPass(b *testing.B) {
	const wantProcesses, watchedGroups = 200, 50
	var pgids []int
	for len(pgids) < watchedGroups || countProcesses(b) < wantProcesses {
		cmd := exec.Command("sleep", "3600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		pgid := cmd.Process.Pid
		pgids = append(pgids, pgid)
		b.Cleanup(func() {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
	scan := executor.NewProcScan(pgids[:watchedGroups]...)
	if err := scan.Pass(); err != nil {
		b.Fatal(err)
	}
	if _, processes := scan.Seen(pgids[0]); processes != 1 {
		b.Fatalf("the pass saw %d processes in group %d, want 1", processes, pgids[0])
	}
	for b.Loop() {
		if err := scan.Pass(); err != nil {
			b.Fatal(err)
		}
	}
	// After the loop: b.Loop drops metrics reported before it starts.
	b.ReportMetric(float64(countProcesses(b)), "processes")
}

func countProcesses(b *testing.B) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, entry := range entries {
		if _, err := strconv.Atoi(entry.Name()); err == nil {
			n++
		}
	}
	return n
}
