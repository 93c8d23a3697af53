package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

var _ = Describe("Executor setup", func() {
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

	instanceDir := func(guid string) string {
		return filepath.Join(cfg.DataDir, "instances", guid)
	}

	logOf := func(guid string) string {
		GinkgoHelper()
		log, err := exe.LogTail(guid, 200)
		Expect(err).NotTo(HaveOccurred())
		return string(log)
	}

	// withSetup is a shell action that shows it ran, after a shell setup.
	withSetup := func(script string) *models.LRPDefinition {
		def := reptest.ShellDefinition("touch started; sleep 60")
		def.Setup = &models.RunAction{Path: "sh", Args: []string{"-c", script}}
		return def
	}

	It("runs before the action, in the instance's directory, its output in the instance's log", func() {
		_, err := exe.Run(reptest.Spec("setup-ok", withSetup("echo preparing; pwd; touch prepared")))
		Expect(err).NotTo(HaveOccurred())
		Eventually(filepath.Join(instanceDir("setup-ok"), "started")).Should(BeAnExistingFile())
		Expect(filepath.Join(instanceDir("setup-ok"), "prepared")).To(BeAnExistingFile())
		log := logOf("setup-ok")
		Expect(log).To(MatchRegexp(`running setup \S*/sh -c echo preparing`))
		Expect(log).To(ContainSubstring("preparing\n" + instanceDir("setup-ok") + "\n"))
		Expect(log).To(MatchRegexp(`setup finished in [0-9.]+(µs|ms|s)\n`))
		Expect(strings.Index(log, "setup finished")).To(BeNumerically("<", strings.Index(log, "starting ")))
	})

	It("fails the start when setup exits non-zero, quoting its last lines, and starts nothing", func() {
		script := "for i in 1 2 3 4 5 6 7; do echo line $i; done; echo; echo 'bad thing happened' >&2; exit 2"
		_, err := exe.Run(reptest.Spec("setup-fails", withSetup(script)))
		Expect(err).To(MatchError("setup exited with code 2: line 4 | line 5 | line 6 | line 7 | bad thing happened"))
		Expect(exe.Instances()).To(BeEmpty())
		Expect(filepath.Join(instanceDir("setup-fails"), "started")).NotTo(BeAnExistingFile())
		ended, ok := exe.Ended("setup-fails")
		Expect(ok).To(BeTrue())
		Expect(ended.Ending).To(Equal("crashed: " + err.Error()))
		log := logOf("setup-fails")
		Expect(log).To(ContainSubstring("line 1\n"))
		Expect(log).To(ContainSubstring("could not start: setup exited with code 2"))
	})

	It("quotes at most a KiB of what setup wrote", func() {
		_, err := exe.Run(reptest.Spec("setup-loud", withSetup("head -c 5000 /dev/zero | tr '\\0' x; exit 1")))
		Expect(err).To(MatchError(HavePrefix("setup exited with code 1: xxx")))
		Expect(len(err.Error())).To(BeNumerically("<=", len("setup exited with code 1: ")+1024))
	})

	It("reports a setup killed by a signal", func() {
		_, err := exe.Run(reptest.Spec("setup-killed", withSetup("echo dying; kill -9 $$")))
		Expect(err).To(MatchError("setup killed by signal 9: dying"))
	})

	It("kills setup's process group when it runs past setup_timeout_ms", func() {
		// Found by their command lines: the pids an isolated setup sees
		// ($$, $!) are those of its own namespace, not the host's.
		marker := "60." + strconv.Itoa(os.Getpid())
		def := withSetup("echo waiting for ever; sleep " + marker + " & sleep " + marker + "1 & touch children-started; wait")
		def.SetupTimeoutMs = 500
		_, err := exe.Run(reptest.Spec("setup-slow", def))
		Expect(err).To(MatchError("setup did not finish within 500ms: waiting for ever"))
		Expect(err).To(MatchError(context.DeadlineExceeded))
		Expect(filepath.Join(instanceDir("setup-slow"), "children-started")).To(BeAnExistingFile())
		Eventually(func() []string { return hostCommands("sleep " + marker) }).Should(BeEmpty())
		Expect(exe.Instances()).To(BeEmpty())
	})

	It("is bounded by the start timeout too", func() {
		def := withSetup("sleep 60")
		def.StartTimeoutMs = 500
		_, err := exe.Run(reptest.Spec("setup-start-timeout", def))
		Expect(err).To(MatchError("setup did not finish within the start timeout of 500ms"))
	})

	It("is killed when the start is cancelled or the executor shuts down", func() {
		// Each setup's sleep has a length of its own, by which the host's
		// /proc finds it: an isolated setup's $$ is a pid of its own PID
		// namespace, which names another process (or none) on the host.
		cancelledSleep := "sleep 61." + strconv.Itoa(os.Getpid())
		shutDownSleep := "sleep 62." + strconv.Itoa(os.Getpid())
		errs := make(chan error, 2)
		go func() {
			_, err := exe.Run(reptest.Spec("setup-cancelled", withSetup(cancelledSleep)))
			errs <- err
		}()
		go func() {
			_, err := exe.Run(reptest.Spec("setup-shut-down", withSetup(shutDownSleep)))
			errs <- err
		}()
		running := func(command string) func() []string {
			return func() []string { return hostCommands(command) }
		}
		Eventually(running(cancelledSleep)).ShouldNot(BeEmpty())
		Eventually(running(shutDownSleep)).ShouldNot(BeEmpty())

		exe.CancelStart("setup-cancelled")
		var err error
		Eventually(errs).Should(Receive(&err))
		Expect(err).To(MatchError("setup stopped: the start was cancelled"))
		Expect(err).To(MatchError(context.Canceled))
		Eventually(running(cancelledSleep)).Should(BeEmpty())
		Expect(running(shutDownSleep)()).NotTo(BeEmpty())

		exe.Shutdown()
		Eventually(errs).Should(Receive(&err))
		Expect(err).To(MatchError("setup stopped: the executor is shutting down"))
		Eventually(running(shutDownSleep)).Should(BeEmpty())
	})

	It("takes its share of the start timeout, which counts from the start of Run", func() {
		// Setup takes most of the start timeout; the app never passes its
		// check. Counted from Run, the timeout leaves it about 1s to pass;
		// counted from the process start, it would leave it 5s.
		def := reptest.HelloDefinition(reptest.HTTPCheck(), "UNHEALTHY", "1")
		def.StartTimeoutMs = 5000
		def.Setup = &models.RunAction{Path: "sleep", Args: []string{"4"}}
		_, err := exe.Run(reptest.Spec("late", def))
		Expect(err).NotTo(HaveOccurred())
		startedAt := reptest.Status(exe, "late").StartedAt
		ev := reptest.NextEvent(exe)
		crashedAfter := time.Since(startedAt)
		Expect(ev.Kind).To(Equal(executor.Crashed))
		Expect(ev.Reason).To(MatchRegexp(`^did not become healthy within 5s \(downloads and setup took 4(\.\d)?s of it\): GET /health on port 8080: 503$`))
		Expect(crashedAfter).To(BeNumerically("<", 3*time.Second), "killed about 1s after its process started, not 5s")
	})

	It("refuses a setup path that is not there", func() {
		def := withSetup("true")
		def.Setup.Path = "./prepare"
		_, err := exe.Run(reptest.Spec("setup-missing", def))
		Expect(err).To(MatchError(fmt.Sprintf(`InstanceSpec.Definition.setup.path "./prepare": %s does not exist`, filepath.Join(appsDir, "prepare"))))
	})

	It("prepares what the run action uses, with the instance's environment and its own env", func() {
		server := reptest.NewAssetServer()
		asset := server.Add("/hello", helloBinary(), "bin/hello")
		def := &models.LRPDefinition{
			DefinitionId: "v1",
			Assets:       []*models.Asset{asset},
			Setup: &models.RunAction{
				Path: "sh",
				Args: []string{"-c", `echo "$PORT $INSTANCE_GUID $GREETING" > setup.env; printf '#!/bin/sh\nexec ./bin/hello\n' > start.sh; chmod +x start.sh`},
				Env:  reptest.EnvVars("GREETING", "from-setup"),
			},
			Action:         &models.RunAction{Path: "./start.sh", Env: reptest.EnvVars("VERSION", "from-action")},
			Ports:          []uint32{8080},
			HealthCheck:    reptest.HTTPCheck(),
			StartTimeoutMs: 30000,
		}
		st := reptest.RunHealthy(exe, reptest.Spec("setup-writes", def))
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", reptest.HostPort(st)))
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		var body map[string]any
		Expect(json.NewDecoder(resp.Body).Decode(&body)).To(Succeed())
		Expect(body).To(HaveKeyWithValue("version", "from-action"))
		Expect(os.ReadFile(filepath.Join(instanceDir("setup-writes"), "setup.env"))).To(Equal(
			[]byte(fmt.Sprintf("%d setup-writes from-setup\n", reptest.HostPort(st)))))
	})
})
