package rep_test

import (
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
)

// newConfig is an executor config for one test: its own data dir, the
// built hello app, ten free ports, quick health checks.
func newConfig() rep.ExecutorConfig {
	portMin, portMax := freePortRange(10)
	return rep.ExecutorConfig{
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

// startExecutor makes an executor that is shut down after the test.
func startExecutor(cfg rep.ExecutorConfig) *rep.Executor {
	executor, err := rep.NewExecutor(cfg)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(executor.Shutdown)
	return executor
}

func httpCheck() *models.HealthCheck {
	return &models.HealthCheck{Type: models.HealthCheck_HTTP, Port: 8080, Path: "/health"}
}

func tcpCheck() *models.HealthCheck {
	return &models.HealthCheck{Type: models.HealthCheck_TCP, Port: 8080}
}

// helloDefinition runs the hello app on container port 8080 with the
// given check and env (name, value, name, value, ...).
func helloDefinition(check *models.HealthCheck, env ...string) *models.LRPDefinition {
	return &models.LRPDefinition{
		DefinitionId:   "v1",
		Action:         &models.RunAction{Path: "./hello", Env: envVars(env...)},
		Ports:          []uint32{8080},
		HealthCheck:    check,
		StartTimeoutMs: 30000,
	}
}

// shellDefinition runs sh -c script, checked as a process, without ports.
func shellDefinition(script string) *models.LRPDefinition {
	return &models.LRPDefinition{
		DefinitionId: "v1",
		Action:       &models.RunAction{Path: "sh", Args: []string{"-c", script}},
	}
}

func envVars(pairs ...string) []*models.EnvironmentVariable {
	var vars []*models.EnvironmentVariable
	for i := 0; i+1 < len(pairs); i += 2 {
		vars = append(vars, &models.EnvironmentVariable{Name: pairs[i], Value: pairs[i+1]})
	}
	return vars
}

func spec(instanceGuid string, def *models.LRPDefinition) rep.InstanceSpec {
	return rep.InstanceSpec{ProcessGuid: "hello", Index: 0, InstanceGuid: instanceGuid, Definition: def}
}

// nextEvent waits for the executor's next event.
func nextEvent(executor *rep.Executor) rep.Event {
	var ev rep.Event
	Eventually(executor.Events()).Should(Receive(&ev))
	return ev
}

// runHealthy runs the spec and waits for its Healthy event.
func runHealthy(executor *rep.Executor, s rep.InstanceSpec) rep.InstanceStatus {
	_, err := executor.Run(s)
	Expect(err).NotTo(HaveOccurred())
	ev := nextEvent(executor)
	Expect(ev.Kind).To(Equal(rep.Healthy), "reason: %s", ev.Reason)
	Expect(ev.InstanceGuid).To(Equal(s.InstanceGuid))
	return status(executor, s.InstanceGuid)
}

// status is the executor's status of one instance.
func status(executor *rep.Executor, instanceGuid string) rep.InstanceStatus {
	for _, st := range executor.Instances() {
		if st.InstanceGuid == instanceGuid {
			return st
		}
	}
	Fail("no instance " + instanceGuid)
	return rep.InstanceStatus{}
}

func hostPort(st rep.InstanceStatus) uint32 {
	Expect(st.NetInfo.GetPorts()).NotTo(BeEmpty())
	return st.NetInfo.GetPorts()[0].GetHostPort()
}
