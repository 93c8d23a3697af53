package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("health signals from the reps", func() {
	It("show a hello LRP's health checks, none failed, and its memory in cork rollout status -o json within the window, and on /metrics", func() {
		b := startBoard(nil)
		b.cork("set-domain", "cork")
		startRep(b, "cell-z1", "z1")
		// Checks every 200ms: a few reports of the 1s interval carry
		// several each.
		lrp := helloLRP("checked", &models.HealthCheck{IntervalMs: 200, TimeoutMs: 200})
		lrp.Instances = 2
		_, err := b.client().DesireLRP(context.Background(), lrp)
		Expect(err).NotTo(HaveOccurred())
		began := time.Now()

		var signals *models.DefinitionSignals
		var definition string
		Eventually(func() error {
			out := strings.TrimSpace(b.cork("rollout", "status", "checked", "-o", "json"))
			var status models.RolloutStatus
			if err := protojson.Unmarshal([]byte(out), &status); err != nil {
				return err
			}
			if len(status.GetDefinitions()) != 1 {
				return fmt.Errorf("want one definition, have %s", out)
			}
			d := status.GetDefinitions()[0]
			definition, signals = d.GetDefinitionId(), d.GetSignals()
			if signals.GetHealthChecks() < 4 || signals.MemoryMbP99 == nil {
				return fmt.Errorf("want health checks and memory, have %s", out)
			}
			return nil
		}).WithTimeout(20 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		AddReportEntry("health checks and memory in the rollout status after", time.Since(began).Round(100*time.Millisecond).String())

		Expect(signals.GetHealthCheckFailures()).To(BeZero())
		Expect(signals.GetHealthFailureRate()).To(BeZero())
		Expect(signals.HealthLatencyP99Ms).NotTo(BeNil())
		Expect(signals.GetHealthLatencyP99Ms()).To(BeNumerically("<=", 200), "within the check's 200ms timeout")
		Expect(signals.GetMemoryMbP99()).To(BeNumerically(">", 0))
		Expect(signals.GetMemoryMbP99()).To(BeNumerically("<=", 64), "hello holds a few MB, within its 64 MB limit")
		value, ok := models.BoardSignal(signals, "health_failure_rate")
		Expect(ok).To(BeTrue())
		Expect(value).To(BeZero())

		By("exporting them on /metrics")
		labels := `{definition_id="` + definition + `",process_guid="checked"}`
		Expect(b.metric("corkboard_definition_health_checks" + labels)).To(BeNumerically(">=", 4))
		Expect(b.metric("corkboard_definition_health_check_failures" + labels)).To(BeZero())
		Expect(b.metric("corkboard_definition_memory_p99_bytes" + labels)).To(BeNumerically(">", 0))
		latency := b.metric("corkboard_definition_health_latency_p99_seconds" + labels)
		Expect(latency).To(BeNumerically(">", 0))
		Expect(latency).To(BeNumerically("<=", 0.2))

		By("showing them on the signals line")
		Expect(b.cork("rollout", "status", "checked", "-o", "table")).To(MatchRegexp(`(?m)^signals \S+ \(last \d+s\): 0 crashes .*; \d+ health checks \(0 failed: 0, latency p99 \S+\); memory p99 \d+ MB$`))
	})
})
