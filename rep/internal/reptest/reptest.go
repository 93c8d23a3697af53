// Package reptest holds what the specs of the agent (package rep) and of
// the executor (rep/executor) both need: free ports, the definitions they
// run, an executor for one spec, and an HTTP server of assets. It is for
// tests only: it fails the running Ginkgo spec on any error.
package reptest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep/executor"
)

// BuildHello builds the hello app and returns the directory that holds
// it, as "hello": the apps dir of the specs' executors. Isolated
// instances run as uids of their own, so the directory lets them in, as
// an operator's must.
func BuildHello() string {
	GinkgoHelper()
	hello, err := gexec.Build("github.com/corkboard/corkboard/fixtures/apps/hello")
	Expect(err).NotTo(HaveOccurred())
	appsDir := filepath.Dir(hello)
	Expect(filepath.Base(hello)).To(Equal("hello"))
	Expect(os.Chmod(appsDir, 0o755)).To(Succeed())
	return appsDir
}

// FreePortRange finds n consecutive ports nobody listens on right now,
// below Linux's usual ephemeral range (32768-60999) so that no outgoing
// connection takes one of them in the meantime.
func FreePortRange(n int) (uint32, uint32) {
	for range 1000 {
		first := 20000 + rand.IntN(12000-n)
		ok := true
		for port := first; port < first+n; port++ {
			if !PortFree(uint32(port)) {
				ok = false
				break
			}
		}
		if ok {
			return uint32(first), uint32(first + n - 1)
		}
	}
	Fail(fmt.Sprintf("no %d consecutive free ports", n))
	return 0, 0
}

// PortFree reports whether nobody listens on port.
func PortFree(port uint32) bool {
	l, err := net.Listen("tcp", ":"+strconv.FormatUint(uint64(port), 10))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// ExecutorConfig is an executor config for one spec: its own data dir,
// the apps in appsDir, ten free ports, quick health checks.
func ExecutorConfig(appsDir string) executor.ExecutorConfig {
	portMin, portMax := FreePortRange(10)
	return executor.ExecutorConfig{
		CellID:             "cell-a",
		DataDir:            GinkgoT().TempDir(),
		AppsDir:            appsDir,
		PortMin:            portMin,
		PortMax:            portMax,
		StopTimeout:        10 * time.Second,
		StartCheckInterval: 100 * time.Millisecond,
		Logger:             lagertest.NewTestLogger("rep"),
	}
}

// StartExecutor makes an executor that is shut down after the spec.
func StartExecutor(cfg executor.ExecutorConfig) *executor.Executor {
	exe, err := executor.NewExecutor(cfg)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(exe.Shutdown)
	return exe
}

func HTTPCheck() *models.HealthCheck {
	return &models.HealthCheck{Type: models.HealthCheck_HTTP, Port: 8080, Path: "/health"}
}

func TCPCheck() *models.HealthCheck {
	return &models.HealthCheck{Type: models.HealthCheck_TCP, Port: 8080}
}

// HelloDefinition runs the hello app on container port 8080 with the
// given check and env (name, value, name, value, ...).
func HelloDefinition(check *models.HealthCheck, env ...string) *models.LRPDefinition {
	return &models.LRPDefinition{
		DefinitionId:   "v1",
		Action:         &models.RunAction{Path: "./hello", Env: EnvVars(env...)},
		Ports:          []uint32{8080},
		HealthCheck:    check,
		StartTimeoutMs: 30000,
	}
}

// ShellDefinition runs sh -c script, checked as a process, without ports.
func ShellDefinition(script string) *models.LRPDefinition {
	return &models.LRPDefinition{
		DefinitionId: "v1",
		Action:       &models.RunAction{Path: "sh", Args: []string{"-c", script}},
	}
}

// AssetDefinition runs action (path and args) after the assets, checked
// as a process, with port 8080.
func AssetDefinition(path string, args []string, assets ...*models.Asset) *models.LRPDefinition {
	return &models.LRPDefinition{
		DefinitionId:   "v1",
		Action:         &models.RunAction{Path: path, Args: args},
		Ports:          []uint32{8080},
		StartTimeoutMs: 30000,
		Assets:         assets,
	}
}

// EnvVars makes environment variables of name, value, name, value, ...
func EnvVars(pairs ...string) []*models.EnvironmentVariable {
	var vars []*models.EnvironmentVariable
	for i := 0; i+1 < len(pairs); i += 2 {
		vars = append(vars, &models.EnvironmentVariable{Name: pairs[i], Value: pairs[i+1]})
	}
	return vars
}

// Spec is index 0 of process guid "hello" under instanceGuid.
func Spec(instanceGuid string, def *models.LRPDefinition) executor.InstanceSpec {
	return executor.InstanceSpec{ProcessGuid: "hello", Index: 0, InstanceGuid: instanceGuid, Definition: def}
}

// NextEvent waits for the executor's next event.
func NextEvent(exe *executor.Executor) executor.Event {
	GinkgoHelper()
	var ev executor.Event
	Eventually(exe.Events()).Should(Receive(&ev))
	return ev
}

// RunHealthy runs the spec and waits for its Healthy event.
func RunHealthy(exe *executor.Executor, s executor.InstanceSpec) executor.InstanceStatus {
	GinkgoHelper()
	_, err := exe.Run(s)
	Expect(err).NotTo(HaveOccurred())
	ev := NextEvent(exe)
	Expect(ev.Kind).To(Equal(executor.Healthy), "reason: %s", ev.Reason)
	Expect(ev.InstanceGuid).To(Equal(s.InstanceGuid))
	return Status(exe, s.InstanceGuid)
}

// Status is the executor's status of one instance.
func Status(exe *executor.Executor, instanceGuid string) executor.InstanceStatus {
	GinkgoHelper()
	for _, st := range exe.Instances() {
		if st.InstanceGuid == instanceGuid {
			return st
		}
	}
	Fail("no instance " + instanceGuid)
	return executor.InstanceStatus{}
}

// HostPort is the host port of the instance's first port.
func HostPort(st executor.InstanceStatus) uint32 {
	GinkgoHelper()
	Expect(st.NetInfo.GetPorts()).NotTo(BeEmpty())
	return st.NetInfo.GetPorts()[0].GetHostPort()
}
