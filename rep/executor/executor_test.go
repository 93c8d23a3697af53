package executor_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

var _ = Describe("Executor.Run", func() {
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

	getJSON := func(port uint32, path string) map[string]any {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		var body map[string]any
		Expect(json.NewDecoder(resp.Body).Decode(&body)).To(Succeed())
		return body
	}

	DescribeTable("reports Healthy with the net info it returned, and the app answers on its host port",
		func(check *models.HealthCheck) {
			s := executor.InstanceSpec{ProcessGuid: "hello", Index: 2, InstanceGuid: "instance-a", Definition: reptest.HelloDefinition(check, "VERSION", "v7")}
			netInfo, err := exe.Run(s)
			Expect(err).NotTo(HaveOccurred())
			Expect(netInfo.GetAddress()).To(Equal("127.0.0.1"))
			Expect(netInfo.GetInstanceAddress()).To(Equal("127.0.0.1"))
			Expect(netInfo.GetPorts()).To(HaveLen(1))
			Expect(netInfo.GetPorts()[0].GetContainerPort()).To(Equal(uint32(8080)))
			port := netInfo.GetPorts()[0].GetHostPort()
			Expect(port).To(BeNumerically(">=", cfg.PortMin))
			Expect(port).To(BeNumerically("<=", cfg.PortMax))

			ev := reptest.NextEvent(exe)
			Expect(ev.Kind).To(Equal(executor.Healthy), "reason: %s", ev.Reason)
			Expect(ev.InstanceGuid).To(Equal("instance-a"))
			Expect(ev.ProcessGuid).To(Equal("hello"))
			Expect(ev.Index).To(Equal(int32(2)))
			Expect(proto.Equal(ev.NetInfo, netInfo)).To(BeTrue(), "event net info %v, Run's %v", ev.NetInfo, netInfo)

			// A PROCESS check is healthy before the app listens.
			Eventually(func() error {
				resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
				if err == nil {
					resp.Body.Close()
				}
				return err
			}).Should(Succeed())
			Expect(getJSON(port, "/")).To(Equal(map[string]any{
				"process_guid":  "hello",
				"index":         float64(2),
				"instance_guid": "instance-a",
				"definition_id": "v1",
				"version":       "v7",
				"cell_id":       "cell-a",
			}))

			st := reptest.Status(exe, "instance-a")
			Expect(st.Healthy).To(BeTrue())
			Expect(st.Stopping).To(BeFalse())
			Expect(st.ProcessGuid).To(Equal("hello"))
			Expect(st.Index).To(Equal(int32(2)))
			Expect(st.DefinitionId).To(Equal("v1"))
			Expect(st.Pid).To(BeNumerically(">", 0))
			Expect(st.StartedAt).NotTo(BeZero())
			Expect(proto.Equal(st.NetInfo, netInfo)).To(BeTrue())
		},
		Entry("HTTP check", reptest.HTTPCheck()),
		Entry("TCP check", reptest.TCPCheck()),
		Entry("PROCESS check", &models.HealthCheck{Type: models.HealthCheck_PROCESS}),
		Entry("no check (PROCESS)", nil),
	)

	It("does not report Healthy before the HTTP check passes", func() {
		_, err := exe.Run(reptest.Spec("slow", reptest.HelloDefinition(reptest.HTTPCheck(), "UNHEALTHY", "1")))
		Expect(err).NotTo(HaveOccurred())
		Consistently(exe.Events(), time.Second).ShouldNot(Receive())
		Expect(reptest.Status(exe, "slow").Healthy).To(BeFalse())
	})

	Describe("the environment", func() {
		BeforeEach(func() {
			cfg.InstanceURL = func(instanceGuid string) string { return "http://127.0.0.1:1/v1/instances/" + instanceGuid }
		})

		It("holds the rep's variables (which win over the definition's), the definition's, and a default PATH and HOME that the definition may override", func() {
			def := &models.LRPDefinition{
				DefinitionId: "def-9",
				Action: &models.RunAction{Path: "env", Env: reptest.EnvVars(
					"VERSION", "v9",
					"INSTANCE_INDEX", "99",
					"PORT", "1",
					"CELL_ID", "not-this-cell",
					"PATH", "/custom/bin:/usr/bin:/bin",
					"VERSION", "v10",
				)},
				// Not in ascending order: the mappings keep the definition's.
				Ports: []uint32{9090, 8080},
			}
			s := executor.InstanceSpec{ProcessGuid: "env-app", Index: 3, InstanceGuid: "env-instance", Definition: def}
			netInfo, err := exe.Run(s)
			Expect(err).NotTo(HaveOccurred())
			Expect(netInfo.GetPorts()).To(HaveLen(2))
			// In the definition's order: the board's Prometheus targets
			// (models.PrometheusTargets) take the first as the definition's first port.
			Expect(netInfo.GetPorts()[0].GetContainerPort()).To(Equal(uint32(9090)))
			Expect(netInfo.GetPorts()[1].GetContainerPort()).To(Equal(uint32(8080)))
			port9090 := netInfo.GetPorts()[0].GetHostPort()
			port8080 := netInfo.GetPorts()[1].GetHostPort()
			Expect(port8080).NotTo(Equal(port9090))

			var ev executor.Event
			Eventually(exe.Events()).Should(Receive(&ev, HaveField("Kind", executor.Crashed)))
			Expect(ev.Reason).To(Equal("exited with code 0"))

			log, err := exe.LogTail("env-instance", 100)
			Expect(err).NotTo(HaveOccurred())
			var env []string
			for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
				if !strings.HasPrefix(line, "[rep ") {
					env = append(env, line)
				}
			}
			Expect(env).To(ConsistOf(
				"PATH=/custom/bin:/usr/bin:/bin",
				"HOME="+filepath.Join(cfg.DataDir, "instances", "env-instance"),
				"VERSION=v10",
				fmt.Sprintf("PORT=%d", port9090),
				fmt.Sprintf("PORT_8080=%d", port8080),
				fmt.Sprintf("PORT_9090=%d", port9090),
				"INSTANCE_INDEX=3",
				"INSTANCE_GUID=env-instance",
				"PROCESS_GUID=env-app",
				"DEFINITION_ID=def-9",
				"CELL_ID=cell-a",
				"CORK_INSTANCE_URL=http://127.0.0.1:1/v1/instances/env-instance",
			))
		})
	})

	Describe("the working directory", func() {
		It("is the instance's own directory under the data dir", func() {
			_, err := exe.Run(reptest.Spec("pwd-instance", reptest.ShellDefinition("pwd; touch made-here")))
			Expect(err).NotTo(HaveOccurred())
			Eventually(exe.Events()).Should(Receive(HaveField("Kind", executor.Crashed)))
			dir := filepath.Join(cfg.DataDir, "instances", "pwd-instance")
			Expect(filepath.Join(dir, "made-here")).To(BeAnExistingFile())
			Expect(exe.LogTail("pwd-instance", 100)).To(ContainSubstring(dir + "\n"))
		})

		It("is the action's dir when it names one, relative to the apps dir", func() {
			cfg.AppsDir = GinkgoT().TempDir()
			// Open to an isolated instance's uid, as an operator's is.
			Expect(os.Chmod(cfg.AppsDir, 0o755)).To(Succeed())
			Expect(os.Mkdir(filepath.Join(cfg.AppsDir, "site"), 0o755)).To(Succeed())
			exe = reptest.StartExecutor(cfg)
			def := reptest.ShellDefinition("pwd")
			def.Action.Dir = "site"
			_, err := exe.Run(reptest.Spec("dir-instance", def))
			Expect(err).NotTo(HaveOccurred())
			Eventually(exe.Events()).Should(Receive(HaveField("Kind", executor.Crashed)))
			Expect(exe.LogTail("dir-instance", 100)).To(ContainSubstring(filepath.Join(cfg.AppsDir, "site") + "\n"))
		})
	})

	Describe("occupancy", func() {
		var (
			mu       sync.Mutex
			received []string
		)

		BeforeEach(func() {
			received = nil
			rep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				received = append(received, r.Method+" "+r.URL.Path+" "+string(body))
				mu.Unlock()
				w.WriteHeader(http.StatusAccepted)
				_, _ = io.WriteString(w, "noted")
			}))
			DeferCleanup(rep.Close)
			cfg.InstanceURL = func(instanceGuid string) string { return rep.URL + "/v1/instances/" + instanceGuid }
		})

		It("reaches the rep's local instance endpoint when the app reports itself occupied or ready", func() {
			port := reptest.HostPort(reptest.RunHealthy(exe, reptest.Spec("busy", reptest.HelloDefinition(reptest.HTTPCheck()))))
			post := func(path string) (int, string) {
				resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d%s", port, path), "text/plain", nil)
				Expect(err).NotTo(HaveOccurred())
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				Expect(err).NotTo(HaveOccurred())
				return resp.StatusCode, string(body)
			}
			code, body := post("/occupied")
			Expect(code).To(Equal(http.StatusAccepted))
			Expect(body).To(Equal("noted"))
			code, _ = post("/ready")
			Expect(code).To(Equal(http.StatusAccepted))

			mu.Lock()
			defer mu.Unlock()
			Expect(received).To(Equal([]string{
				`POST /v1/instances/busy/occupancy {"occupied":true}`,
				`POST /v1/instances/busy/occupancy {"occupied":false}`,
			}))
		})
	})

	Describe("refusals", func() {
		It("refuses to run an instance guid twice", func() {
			reptest.RunHealthy(exe, reptest.Spec("twice", reptest.HelloDefinition(nil)))
			_, err := exe.Run(reptest.Spec("twice", reptest.HelloDefinition(nil)))
			Expect(err).To(MatchError("instance twice already runs on this cell"))
			Expect(exe.Instances()).To(HaveLen(1))
		})

		It("refuses an action path that does not exist, holding nothing", func() {
			cfg.PortMin, cfg.PortMax = reptest.FreePortRange(1)
			exe = reptest.StartExecutor(cfg)
			_, err := exe.Run(reptest.Spec("missing", &models.LRPDefinition{Action: &models.RunAction{Path: "./nope"}, Ports: []uint32{8080}}))
			Expect(err).To(MatchError(fmt.Sprintf(`InstanceSpec.Definition.action.path "./nope": %s does not exist`, filepath.Join(appsDir, "nope"))))
			Expect(exe.Instances()).To(BeEmpty())
			Expect(filepath.Join(cfg.DataDir, "instances", "missing")).NotTo(BeADirectory())
			// Its one port is still there to take.
			reptest.RunHealthy(exe, reptest.Spec("after", reptest.HelloDefinition(reptest.HTTPCheck())))
		})

		It("refuses a bare action name found neither in the apps dir nor on PATH", func() {
			_, err := exe.Run(reptest.Spec("missing", &models.LRPDefinition{Action: &models.RunAction{Path: "no-such-command-anywhere"}}))
			Expect(err).To(MatchError(ContainSubstring(`InstanceSpec.Definition.action.path "no-such-command-anywhere": not found in the apps dir`)))
		})

		It("refuses an action path that is not executable", func() {
			cfg.AppsDir = GinkgoT().TempDir()
			Expect(os.WriteFile(filepath.Join(cfg.AppsDir, "script"), []byte("#!/bin/sh\n"), 0o644)).To(Succeed())
			exe = reptest.StartExecutor(cfg)
			_, err := exe.Run(reptest.Spec("plain-file", &models.LRPDefinition{Action: &models.RunAction{Path: "./script"}}))
			Expect(err).To(MatchError(ContainSubstring("script is not executable")))
		})

		It("refuses when the port range is exhausted, naming the range", func() {
			cfg.PortMin, cfg.PortMax = reptest.FreePortRange(1)
			exe = reptest.StartExecutor(cfg)
			reptest.RunHealthy(exe, reptest.Spec("first", reptest.HelloDefinition(reptest.HTTPCheck())))
			_, err := exe.Run(reptest.Spec("second", reptest.HelloDefinition(reptest.HTTPCheck())))
			Expect(err).To(MatchError(fmt.Sprintf("instance second: port range %d-%d exhausted: need 1 free port, found 0 (1 held by instances, 0 in use by other processes)", cfg.PortMin, cfg.PortMax)))
			Expect(exe.Instances()).To(HaveLen(1))
		})

		It("skips ports another process listens on", func() {
			cfg.PortMin, cfg.PortMax = reptest.FreePortRange(2)
			exe = reptest.StartExecutor(cfg)
			squatter, err := net.Listen("tcp", fmt.Sprintf(":%d", cfg.PortMin))
			Expect(err).NotTo(HaveOccurred())
			defer squatter.Close()
			st := reptest.RunHealthy(exe, reptest.Spec("first", reptest.HelloDefinition(reptest.HTTPCheck())))
			Expect(reptest.HostPort(st)).To(Equal(cfg.PortMax))
			_, err = exe.Run(reptest.Spec("second", reptest.HelloDefinition(reptest.HTTPCheck())))
			Expect(err).To(MatchError(ContainSubstring("need 1 free port, found 0 (1 held by instances, 1 in use by other processes)")))
		})

		It("refuses a health check on a port the definition does not have", func() {
			def := reptest.HelloDefinition(&models.HealthCheck{Type: models.HealthCheck_TCP, Port: 9999})
			_, err := exe.Run(reptest.Spec("bad-check", def))
			Expect(err).To(MatchError("InstanceSpec.Definition: InvalidRequest: health_check.port: must be one of the definition's ports [8080], got 9999"))
			Expect(exe.Instances()).To(BeEmpty())
		})

		DescribeTable("refuses a bad spec, naming the field",
			func(modify func(*executor.InstanceSpec), message string) {
				s := reptest.Spec("good-guid", reptest.HelloDefinition(nil))
				modify(&s)
				_, err := exe.Run(s)
				Expect(err).To(MatchError(ContainSubstring(message)))
				Expect(exe.Instances()).To(BeEmpty())
			},
			Entry("no instance guid", func(s *executor.InstanceSpec) { s.InstanceGuid = "" }, "InstanceSpec.InstanceGuid must match"),
			Entry("a path as instance guid", func(s *executor.InstanceSpec) { s.InstanceGuid = "../escape" }, "InstanceSpec.InstanceGuid must match"),
			Entry("no process guid", func(s *executor.InstanceSpec) { s.ProcessGuid = "" }, "InstanceSpec.ProcessGuid is required"),
			Entry("negative index", func(s *executor.InstanceSpec) { s.Index = -1 }, "InstanceSpec.Index must not be negative, got -1"),
			Entry("no definition", func(s *executor.InstanceSpec) { s.Definition = nil }, "InstanceSpec.Definition is required"),
			Entry("no action", func(s *executor.InstanceSpec) { s.Definition.Action = nil }, "InstanceSpec.Definition: "),
		)
	})
})

var _ = Describe("NewExecutor", func() {
	DescribeTable("refuses a bad config, naming the field",
		func(modify func(*executor.ExecutorConfig), message string) {
			cfg := newConfig()
			modify(&cfg)
			_, err := executor.NewExecutor(cfg)
			Expect(err).To(MatchError(message))
		},
		Entry("no cell id", func(c *executor.ExecutorConfig) { c.CellID = "" }, "ExecutorConfig.CellID is required"),
		Entry("no data dir", func(c *executor.ExecutorConfig) { c.DataDir = "" }, "ExecutorConfig.DataDir is required"),
		Entry("no port range", func(c *executor.ExecutorConfig) { c.PortMin, c.PortMax = 0, 0 }, "ExecutorConfig.PortMin must be 1-65535, got 0"),
		Entry("an upside-down port range", func(c *executor.ExecutorConfig) { c.PortMin, c.PortMax = 5000, 4999 }, "ExecutorConfig.PortMax must be 5000-65535 (at least PortMin), got 4999"),
		Entry("a port range past 65535", func(c *executor.ExecutorConfig) { c.PortMin, c.PortMax = 65000, 70000 }, "ExecutorConfig.PortMax must be 65000-65535 (at least PortMin), got 70000"),
		Entry("a negative stop timeout", func(c *executor.ExecutorConfig) { c.StopTimeout = -time.Second }, "ExecutorConfig.StopTimeout must not be negative, got -1s"),
		Entry("a negative log limit", func(c *executor.ExecutorConfig) { c.LogLimit = -1 }, "ExecutorConfig.LogLimit must not be negative, got -1"),
	)
})
