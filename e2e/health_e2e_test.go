package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/corkboard/corkboard/models"
)

// helloLRP is one instance of hello with an HTTP health check of the
// given timing and env (name, value, ...).
func helloLRP(guid string, check *models.HealthCheck, env ...string) *models.DesiredLRP {
	check.Type, check.Port, check.Path = models.HealthCheck_HTTP, 8080, "/health"
	def := &models.LRPDefinition{
		Action:         &models.RunAction{Path: "./hello"},
		Ports:          []uint32{8080},
		HealthCheck:    check,
		StartTimeoutMs: 30000,
		MemoryMb:       64,
		DiskMb:         64,
	}
	for i := 0; i+1 < len(env); i += 2 {
		def.Action.Env = append(def.Action.Env, &models.EnvironmentVariable{Name: env[i], Value: env[i+1]})
	}
	return &models.DesiredLRP{ProcessGuid: guid, Domain: "cork", Instances: 1, Definition: def}
}

// instanceLog is the tail of an instance's log, from its rep, running or
// ended.
func (r *runningRep) instanceLog(instanceGuid string) string {
	GinkgoHelper()
	query := url.Values{"instance_guid": {instanceGuid}, "lines": {"1000"}}
	resp, err := httpClient.Get(r.url + "/v1/logs?" + query.Encode())
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
	return string(body)
}

var sigtermLine = regexp.MustCompile(`got SIGTERM: exiting \(at (\S+)\)`)

// sigtermAt waits until hello's log says it got SIGTERM and returns when.
func (r *runningRep) sigtermAt(instanceGuid string) time.Time {
	GinkgoHelper()
	var match []string
	Eventually(func() []string {
		match = sigtermLine.FindStringSubmatch(r.instanceLog(instanceGuid))
		return match
	}).ShouldNot(BeNil(), "hello logs the SIGTERM it gets")
	at, err := time.Parse(time.RFC3339Nano, match[1])
	Expect(err).NotTo(HaveOccurred())
	return at
}

// onlyRow waits until guid has one row, ORDINARY and RUNNING, and returns it.
func onlyRow(b *board, guid string) *models.ActualLRP {
	GinkgoHelper()
	var row *models.ActualLRP
	Eventually(func() error {
		rows := b.lrps(guid)
		if err := checkSteady(rows, 1, []string{"cell-z1", "cell-z2"}); err != nil {
			return err
		}
		row = rows[0]
		return nil
	}).Should(Succeed())
	return row
}

// messages counts the rep's log lines with the given lager message.
func messages(r *runningRep, message string) int {
	return strings.Count(string(r.session.Out.Contents()), `"message":"`+message+`"`)
}

var _ = Describe("health checks of running instances", func() {
	var (
		b     *board
		proxy *boardProxy
		z1    *runningRep
	)
	ctx := context.Background()

	BeforeEach(func() {
		b = startBoard(nil)
		b.cork("set-domain", "cork")
		// The rep reaches the board through the proxy, which records
		// when the board answered each call marking an instance
		// unroutable.
		proxy = startBoardProxy(b)
		z1 = startRep(b, "cell-z1", "z1", map[string]any{"board_url": proxy.url})
	})

	It("keeps an instance whose checks fail or answer slowly fewer times in a row than its failure_threshold", func() {
		// From 3s on, two checks get no answer within their 1s timeout;
		// then /health answers again. The threshold is the default 3.
		_, err := b.client().DesireLRP(ctx, helloLRP("wobbly", &models.HealthCheck{IntervalMs: 1000, TimeoutMs: 1000},
			"UNHEALTHY_AFTER", "3s", "UNHEALTHY_CHECKS", "2", "SLOW_HEALTH", "3s"))
		Expect(err).NotTo(HaveOccurred())
		row := onlyRow(b, "wobbly")

		Eventually(func() string { return z1.instanceLog(row.GetInstanceGuid()) }).
			Should(ContainSubstring("health check passed again after 2 failed"))
		log := z1.instanceLog(row.GetInstanceGuid())
		Expect(log).To(ContainSubstring("health check failed (1 of 3 in a row before it is unhealthy): GET /health on port 8080: no answer within 1s"))
		Expect(log).To(ContainSubstring("health check failed (2 of 3 in a row before it is unhealthy): GET /health on port 8080: no answer within 1s"))
		Consistently(func() error {
			rows := b.lrps("wobbly")
			if len(rows) != 1 {
				return fmt.Errorf("want one row, have %s", describe(rows))
			}
			now := rows[0]
			if now.GetInstanceGuid() != row.GetInstanceGuid() || now.GetCrashCount() != 0 ||
				now.GetState() != models.ActualLRP_RUNNING || !now.GetRoutable() {
				return fmt.Errorf("want the same instance RUNNING, routable and never crashed, have %s (routable %t)", describe(rows), now.GetRoutable())
			}
			return nil
		}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
		Expect(proxy.callsFor(row.GetInstanceGuid())).To(BeEmpty(), "nothing marked it unroutable")
	})

	It("marks an instance that turns unhealthy for good unroutable, then stops it, then reports the crash with the reason, and the board restarts it", func() {
		crashes := recordCrashes(b)
		_, err := b.client().DesireLRP(ctx, helloLRP("sickly", &models.HealthCheck{IntervalMs: 1000, TimeoutMs: 1000},
			"UNHEALTHY_AFTER", "3s"))
		Expect(err).NotTo(HaveOccurred())
		first := onlyRow(b, "sickly")
		guid := first.GetInstanceGuid()

		Eventually(crashes.count).Should(BeNumerically(">=", 1))
		crash := crashes.first()
		Expect(crash.GetCrashReason()).To(Equal("health check failed 3 times in a row: GET /health on port 8080: 503"))
		Expect(crash.GetCrashCount()).To(BeEquivalentTo(1))

		calls := proxy.callsFor(guid)
		Expect(calls).To(HaveLen(1))
		Expect(calls[0].outcome).To(Equal("passed"))
		Expect(calls[0].unroutable).To(BeTrue(), "the board's answer shows the row unroutable")
		Expect(calls[0].presence).To(Equal(models.ActualLRP_ORDINARY))
		sigterm := z1.sigtermAt(guid)
		Expect(sigterm).To(BeTemporally(">", calls[0].answeredAt), "SIGTERM came after the board had marked the row unroutable")

		log := z1.instanceLog(guid)
		Expect(log).To(ContainSubstring("unhealthy: health check failed 3 times in a row: GET /health on port 8080: 503"))
		Expect(log).To(ContainSubstring("stopping: SIGTERM to process group"))
		Expect(log).NotTo(ContainSubstring("SIGKILL"))

		By("the board restarts it as a new instance")
		Eventually(func() error {
			rows := b.lrps("sickly")
			if len(rows) != 1 || rows[0].GetState() != models.ActualLRP_RUNNING || rows[0].GetCrashCount() < 1 ||
				rows[0].GetInstanceGuid() == guid {
				return fmt.Errorf("want a new instance RUNNING after the crash, have %s", describe(rows))
			}
			return nil
		}).Should(Succeed())
	})
})

var _ = Describe("a stop whose instance cannot be marked unroutable at once", func() {
	var (
		b     *board
		proxy *boardProxy
		z1    *runningRep
	)
	ctx := context.Background()

	BeforeEach(func() {
		b = startBoard(nil)
		b.cork("set-domain", "cork")
		proxy = startBoardProxy(b)
		z1 = startRep(b, "cell-z1", "z1", map[string]any{"board_url": proxy.url})
	})

	// replace desires one hello instance, rolls it to v2 (so the rep is
	// told to stop the v1 instance once v2 runs) and returns the v1
	// instance's row and pid as they were.
	replace := func() (*models.ActualLRP, int) {
		GinkgoHelper()
		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.Instances = 1
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		old := onlyRow(b, "hello")
		running := z1.instances()
		Expect(running).To(HaveLen(1))
		_, err = b.client().UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{
			Definition: definitionFixture("hello-local-v2-definition.json"),
		})
		Expect(err).NotTo(HaveOccurred())
		return old, running[0].Pid
	}

	// expectReplaced waits until the v1 instance is gone, process and row,
	// and only the v2 instance runs.
	expectReplaced := func(old *models.ActualLRP, pid int) {
		GinkgoHelper()
		Eventually(func() error {
			rows := b.lrps("hello")
			if len(rows) != 1 || rows[0].GetInstanceGuid() == old.GetInstanceGuid() ||
				rows[0].GetDefinitionId() == old.GetDefinitionId() || rows[0].GetState() != models.ActualLRP_RUNNING {
				return fmt.Errorf("want only the v2 instance, have %s", describe(rows))
			}
			return nil
		}).Should(Succeed())
		Eventually(func() bool { return alive(pid) }).Should(BeFalse(), "the v1 process is gone")
	}

	It("tries again until the board answers, and sends SIGTERM only after the row is unroutable", func() {
		proxy.setRefuse(3)
		old, pid := replace()
		guid := old.GetInstanceGuid()

		Eventually(func() []string { return proxy.outcomes(guid) }).Should(Equal([]string{"refused", "refused", "refused", "passed"}))
		expectReplaced(old, pid)
		calls := proxy.callsFor(guid)
		Expect(calls[3].presence).To(Equal(models.ActualLRP_RETIRING))
		Expect(calls[3].unroutable).To(BeTrue(), "the board's answer shows the row unroutable")
		Expect(z1.sigtermAt(guid)).To(BeTemporally(">", calls[3].answeredAt), "SIGTERM came after the board had marked the row unroutable")
		Expect(messages(z1, "rep.agent.instance.unroutable-call-failed")).To(Equal(3), "each failed attempt is logged")
		Expect(messages(z1, "rep.agent.instance.gave-up-marking-unroutable")).To(BeZero())
	})

	It("stops the instance anyway once the bounded retries are over when the board never answers", func() {
		proxy.setHold()
		old, pid := replace()
		guid := old.GetInstanceGuid()

		expectReplaced(old, pid)
		Expect(z1.session.Out).To(gbytes.Say(`"message":"rep\.agent\.instance\.gave-up-marking-unroutable"`))
		Expect(proxy.outcomes(guid)).To(HaveEach("held"))
		Expect(z1.instanceLog(guid)).To(ContainSubstring("got SIGTERM: exiting"))
	})
})

var _ = Describe("cork logs of a crashed instance", func() {
	It("shows the output of the instance's last run, from the rep that ran it, though the crashed row names no cell; the rollout status and /metrics count the crashes", func() {
		b := startBoard(nil)
		b.cork("set-domain", "cork")
		startRep(b, "cell-z1", "z1")
		startRep(b, "cell-z2", "z2")
		_, err := b.client().DesireLRP(context.Background(), helloLRP("crasher", &models.HealthCheck{}, "CRASH_AFTER", "1s"))
		Expect(err).NotTo(HaveOccurred())

		// The first three crashes restart at once; the fourth waits 30s,
		// long enough to look.
		Eventually(func() error {
			rows := b.lrps("crasher")
			if len(rows) != 1 || rows[0].GetState() != models.ActualLRP_CRASHED || rows[0].GetCrashCount() < 4 {
				return fmt.Errorf("want the row CRASHED 4 times, have %s", describe(rows))
			}
			return nil
		}).Should(Succeed())
		Expect(b.lrps("crasher")[0].GetCellId()).To(BeEmpty())

		out := b.cork("logs", "crasher/0", "-n", "30")
		lines := strings.Split(out, "\n")
		Expect(lines[0]).To(MatchRegexp(`^--- previous instance \S+ of crasher/0, ended \S+: crashed: exited with code 3 ---$`))
		Expect(out).To(ContainSubstring("CRASH_AFTER=1s passed: exiting with code 3"))
		Expect(out).To(ContainSubstring("crashed: exited with code 3"))

		By("counting the crashes in the definition's signals")
		definition := b.lrps("crasher")[0].GetDefinitionId()
		status := b.cork("rollout", "status", "crasher", "-o", "table")
		Expect(status).To(MatchRegexp(`(?m)^signals ` + regexp.QuoteMeta(definition) +
			` \(last \d+s\): ([4-9]|\d\d+) crashes \([0-9.e+-]+ per instance per minute, most often: exited with code 3\); ([4-9]|\d\d+) ready \(start to ready p50 \S+, p99 \S+\); \d+ health checks.*$`))
		Expect(b.metric(`corkboard_definition_crashes{definition_id="` + definition + `",process_guid="crasher"}`)).To(BeNumerically(">=", 4))
	})
})
