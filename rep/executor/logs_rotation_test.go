package executor_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"

	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
	"github.com/corkboard/corkboard/rep/isolation"
)

var _ = Describe("instance logs with a limit", func() {
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

	logFile := func(instanceGuid string) string {
		return instanceLogFile(cfg.DataDir, instanceGuid)
	}

	// numbered is a script printing "line <from>" to "line <to-1>", one
	// line each, all of them the same length when from and to have the
	// same number of digits.
	numbered := func(from, to int) string {
		return fmt.Sprintf(`i=%d; while [ $i -lt %d ]; do echo "line $i"; i=$((i+1)); done`, from, to)
	}

	Context("with a limit of 64 KiB", func() {
		BeforeEach(func() {
			cfg.LogLimit = 64 << 10
		})

		It("keeps an app that writes far more within twice the limit, in its log and the one rotated before it", func() {
			// About 2.4 MB on stdout and stderr, interleaved.
			script := `i=0; while [ $i -lt 20000 ]; do ` +
				`echo "to stdout: line $i, with some padding"; ` +
				`echo "to stderr: line $i, with some padding" >&2; ` +
				`i=$((i+1)); done; echo done; sleep 100`
			_, err := exe.Run(reptest.Spec("chatty", reptest.ShellDefinition(script)))
			Expect(err).NotTo(HaveOccurred())

			// Look at the files as often as possible while the app writes.
			var largestFile, largestTotal int64
			var names []string
			Eventually(func() ([]byte, error) {
				sizes := logSizes(logFile("chatty"))
				var total int64
				for name, size := range sizes {
					largestFile = max(largestFile, size)
					total += size
					names = append(names, name)
				}
				largestTotal = max(largestTotal, total)
				return exe.LogTail("chatty", 1)
			}).WithPolling(time.Millisecond).Should(Equal([]byte("done\n")))

			Expect(largestFile).To(BeNumerically("<=", cfg.LogLimit))
			Expect(largestTotal).To(BeNumerically("<=", 2*cfg.LogLimit))
			Expect(names).To(HaveEach(BeElementOf(logFile("chatty"), logFile("chatty")+".1")))
			Expect(logFile("chatty") + ".1").To(BeAnExistingFile())

			// The order of stdout and stderr survives the pipe.
			Expect(exe.LogTail("chatty", 5)).To(Equal([]byte(
				"to stdout: line 19998, with some padding\n" +
					"to stderr: line 19998, with some padding\n" +
					"to stdout: line 19999, with some padding\n" +
					"to stderr: line 19999, with some padding\n" +
					"done\n")))

			// The rep's own lines count against the limit too.
			Expect(exe.Stop("chatty")).To(Succeed())
			Expect(exe.LogTail("chatty", 3)).To(MatchRegexp(`^done\n\[rep \S+\] stopping: SIGTERM .*\n\[rep \S+\] stopped: .+\n$`))
			for _, size := range logSizes(logFile("chatty")) {
				Expect(size).To(BeNumerically("<=", cfg.LogLimit))
			}
		})

		It("leaves no goroutine behind once chatty instances are gone", func() {
			before := gleak.Goroutines()

			_, err := exe.Run(reptest.Spec("endless", reptest.ShellDefinition(`while :; do echo "more and more"; done`)))
			Expect(err).NotTo(HaveOccurred())
			Eventually(logFile("endless") + ".1").Should(BeAnExistingFile())
			Expect(exe.Stop("endless")).To(Succeed())
			Expect(endEvent(exe).Kind).To(Equal(executor.Exited))

			_, err = exe.Run(reptest.Spec("burst", reptest.ShellDefinition(`yes "a burst" | head -c 1000000; exit 3`)))
			Expect(err).NotTo(HaveOccurred())
			ev := endEvent(exe)
			Expect(ev.Kind).To(Equal(executor.Crashed))
			Expect(ev.Reason).To(Equal("exited with code 3"))
			Expect(exe.LogTail("burst", 2)).To(MatchRegexp(`^a burst\n\[rep \S+\] crashed: exited with code 3\n$`))

			Eventually(gleak.Goroutines).ShouldNot(gleak.HaveLeaked(before))
		})
	})

	Context("with a limit of 4 KiB", func() {
		BeforeEach(func() {
			cfg.LogLimit = 4096
		})

		It("tails across the rotated log and the current one, in order, right after a rotation", func() {
			// 10,000 bytes of ten-byte lines: two rotations at least.
			_, err := exe.Run(reptest.Spec("rotated", reptest.ShellDefinition(numbered(1000, 2000)+"; sleep 100")))
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() ([]byte, error) { return exe.LogTail("rotated", 1) }).Should(Equal([]byte("line 1999\n")))

			Expect(logFile("rotated") + ".1").To(BeAnExistingFile())
			current, err := os.ReadFile(logFile("rotated"))
			Expect(err).NotTo(HaveOccurred())
			inCurrent := bytes.Count(current, []byte("\n"))

			// More lines than the current log holds: the rest come from
			// the rotated one, which holds about 400.
			for _, n := range []int{inCurrent + 1, inCurrent + 20, inCurrent + 300} {
				var want strings.Builder
				for i := 2000 - n; i < 2000; i++ {
					fmt.Fprintf(&want, "line %d\n", i)
				}
				Expect(exe.LogTail("rotated", n)).To(Equal([]byte(want.String())), "%d lines", n)
			}
		})

		It("keeps whole lines in each file when they fit", func() {
			_, err := exe.Run(reptest.Spec("whole", reptest.ShellDefinition(numbered(1000, 2000)+"; exit 0")))
			Expect(err).NotTo(HaveOccurred())
			Expect(endEvent(exe).Kind).To(Equal(executor.Crashed))

			rotated, err := os.ReadFile(logFile("whole") + ".1")
			Expect(err).NotTo(HaveOccurred())
			Expect(string(rotated)).To(MatchRegexp(`^(line \d{4}\n)+$`))
			Expect(len(rotated)).To(BeNumerically(">", 4096-10))
		})

		It("cuts a line longer than the limit, keeping the cap", func() {
			long := strings.Repeat("0123456789", 1000)
			_, err := exe.Run(reptest.Spec("long", reptest.ShellDefinition(`printf 'short\n`+long+`\nend\n'; sleep 100`)))
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() ([]byte, error) { return exe.LogTail("long", 1) }).Should(Equal([]byte("end\n")))
			for _, size := range logSizes(logFile("long")) {
				Expect(size).To(BeNumerically("<=", 4096))
			}
			// 10,000 bytes cannot fit in 2 × 4 KiB: what is left of the
			// long line is its end, shown as it is.
			tail, err := exe.LogTail("long", 3)
			Expect(err).NotTo(HaveOccurred())
			lines := strings.Split(string(tail), "\n")
			Expect(lines).To(HaveLen(3))
			Expect(lines[0]).NotTo(BeEmpty())
			Expect(long).To(HaveSuffix(lines[0]))
			Expect(lines[1:]).To(Equal([]string{"end", ""}))
		})
	})

	Context("with an app that leaves its process group and keeps the output pipe", func() {
		// Only without isolation can a process outlive its instance:
		// isolated, it dies with the instance's namespace (see
		// executor_isolation_test.go).
		BeforeEach(func() { cfg.Isolation.Mode = isolation.None })

		It("still ends the instance, closes the pipe, and says so in the log", func() {
			before := gleak.Goroutines()
			// The inner sh leaves the group, so the group kill after the
			// outer sh exits misses it; it writes on, to the pipe.
			script := `setsid sh -c 'echo $$ > escaped.pid; while :; do echo escaped; sleep 0.1; done' & ` +
				`while [ ! -s escaped.pid ]; do sleep 0.01; done; exit 4`
			_, err := exe.Run(reptest.Spec("leaver", reptest.ShellDefinition(script)))
			Expect(err).NotTo(HaveOccurred())

			var escaped int
			Eventually(func() error {
				data, err := os.ReadFile(filepath.Join(cfg.DataDir, "instances", "leaver", "escaped.pid"))
				if err != nil {
					return err
				}
				escaped, err = strconv.Atoi(strings.TrimSpace(string(data)))
				return err
			}).Should(Succeed())
			DeferCleanup(func() {
				if !processGone(escaped) {
					_ = syscall.Kill(escaped, syscall.SIGKILL)
				}
			})

			ev := endEvent(exe)
			Expect(ev.Kind).To(Equal(executor.Crashed))
			Expect(ev.Reason).To(Equal("exited with code 4"))
			Expect(exe.LogTail("leaver", 2)).To(MatchRegexp(
				`^\[rep \S+\] output still held open 2s after the process group died, by a process that left it: closed the rep's end\n` +
					`\[rep \S+\] crashed: exited with code 4\n$`))
			// Its next write hits a pipe nobody reads: SIGPIPE.
			Eventually(func() bool { return processGone(escaped) }).Should(BeTrue(), "escaped pid %d", escaped)
			Eventually(gleak.Goroutines).ShouldNot(gleak.HaveLeaked(before))
		})
	})

	Describe("LogTail on files left by a rotation", func() {
		// write writes an instance's log (suffix "") or the one
		// rotated before it (suffix ".1").
		write := func(instanceGuid, suffix, content string) {
			dir := filepath.Join(cfg.DataDir, "instances", instanceGuid)
			Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
			Expect(os.WriteFile(logFile(instanceGuid)+suffix, []byte(content), 0o644)).To(Succeed())
		}

		It("reads the rotated log before the current one, joining a line cut in two", func() {
			write("cut", ".1", "one\ntwo\nthr")
			write("cut", "", "ee\nfour\n")
			Expect(exe.LogTail("cut", 1)).To(Equal([]byte("four\n")))
			Expect(exe.LogTail("cut", 2)).To(Equal([]byte("three\nfour\n")))
			Expect(exe.LogTail("cut", 3)).To(Equal([]byte("two\nthree\nfour\n")))
			Expect(exe.LogTail("cut", 100)).To(Equal([]byte("one\ntwo\nthree\nfour\n")))
		})

		It("reads the rotated log alone between a rotation's rename and its fresh log", func() {
			write("between", ".1", "one\ntwo\n")
			Expect(exe.LogTail("between", 1)).To(Equal([]byte("two\n")))
		})

		It("reads at most the last MiB of both, starting at a whole line", func() {
			line := strings.Repeat("y", 99) + "\n"
			write("big-rotated", ".1", "cut"+strings.Repeat(line, 6000))
			write("big-rotated", "", strings.Repeat(line, 6000))

			log, err := exe.LogTail("big-rotated", 1_000_000)
			Expect(err).NotTo(HaveOccurred())
			Expect(len(log)).To(BeNumerically("<=", 1<<20))
			Expect(len(log)).To(BeNumerically(">", 600_000))
			Expect(len(log) % 100).To(Equal(0))
			Expect(string(log)).To(HavePrefix(line))
		})
	})
})

// logSizes is the size of an instance's log (path) and of the one rotated
// before it, those that exist. A file may go (rotate) between the looks.
func logSizes(path string) map[string]int64 {
	sizes := map[string]int64{}
	for _, name := range []string{path, path + ".1"} {
		if info, err := os.Stat(name); err == nil {
			sizes[name] = info.Size()
		}
	}
	return sizes
}

// instanceLogFile is where the rep keeps the log of an instance: beside
// its directory, DataDir/instances/.<guid>.log.
func instanceLogFile(dataDir, instanceGuid string) string {
	return filepath.Join(dataDir, "instances", "."+instanceGuid+".log")
}

// endEvent waits for the executor's next Crashed or Exited event,
// skipping Healthy ones.
func endEvent(exe *executor.Executor) executor.Event {
	for {
		ev := reptest.NextEvent(exe)
		if ev.Kind != executor.Healthy {
			return ev
		}
	}
}
