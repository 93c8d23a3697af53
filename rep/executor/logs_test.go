package executor_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

var _ = Describe("Executor.LogTail", func() {
	var (
		cfg executor.ExecutorConfig
		exe *executor.Executor
	)

	BeforeEach(func() {
		cfg = newConfig()
		exe = reptest.StartExecutor(cfg)
	})

	It("shows the app's stdout and stderr in order, with the rep's own lines", func() {
		_, err := exe.Run(reptest.Spec("talker", reptest.ShellDefinition("echo one; echo two >&2; echo three; sleep 100")))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() ([]byte, error) { return exe.LogTail("talker", 100) }).Should(ContainSubstring("three\n"))

		log, err := exe.LogTail("talker", 100)
		Expect(err).NotTo(HaveOccurred())
		lines := strings.Split(strings.TrimSuffix(string(log), "\n"), "\n")
		Expect(lines).To(HaveLen(4))
		Expect(lines[0]).To(MatchRegexp(`^\[rep \S+\] starting /\S+/sh$`))
		Expect(lines[1:]).To(Equal([]string{"one", "two", "three"}))

		Expect(exe.LogTail("talker", 2)).To(Equal([]byte("two\nthree\n")))
		Expect(exe.LogTail("talker", 1)).To(Equal([]byte("three\n")))
	})

	It("keeps the log of a finished instance", func() {
		_, err := exe.Run(reptest.Spec("finished", reptest.ShellDefinition("echo last words; exit 2")))
		Expect(err).NotTo(HaveOccurred())
		Eventually(exe.Events()).Should(Receive(HaveField("Kind", executor.Crashed)))
		log, err := exe.LogTail("finished", 2)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).To(MatchRegexp(`^last words\n\[rep \S+\] crashed: exited with code 2\n$`))
	})

	It("shows a last line that has no newline yet", func() {
		_, err := exe.Run(reptest.Spec("prompt", reptest.ShellDefinition("printf 'first\\nno newline'; sleep 100")))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() ([]byte, error) { return exe.LogTail("prompt", 2) }).Should(Equal([]byte("first\nno newline")))
		Expect(exe.Stop("prompt")).To(Succeed())
		Expect(exe.LogTail("prompt", 4)).To(MatchRegexp(`^first\nno newline\n\[rep \S+\] stopping: SIGTERM`))
	})

	It("reads at most the last MiB of a big log, starting at a whole line", func() {
		dir := filepath.Join(cfg.DataDir, "instances", "big")
		Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
		line := strings.Repeat("x", 99) + "\n"
		Expect(os.WriteFile(instanceLogFile(cfg.DataDir, "big"), []byte("cut"+strings.Repeat(line, 20000)), 0o644)).To(Succeed())

		log, err := exe.LogTail("big", 1_000_000)
		Expect(err).NotTo(HaveOccurred())
		Expect(len(log)).To(BeNumerically("<=", 1<<20))
		Expect(len(log) % 100).To(Equal(0))
		Expect(string(log)).To(HavePrefix(line))
	})

	It("refuses an instance it knows nothing of", func() {
		_, err := exe.LogTail("nobody", 10)
		Expect(errors.Is(err, executor.ErrInstanceNotFound)).To(BeTrue(), "%v", err)
		_, err = exe.LogTail("../../etc", 10)
		Expect(errors.Is(err, executor.ErrInstanceNotFound)).To(BeTrue(), "%v", err)
	})

	It("refuses a line count below one", func() {
		_, err := exe.LogTail("nobody", 0)
		Expect(err).To(MatchError("lines must be at least 1, got 0"))
	})
})
