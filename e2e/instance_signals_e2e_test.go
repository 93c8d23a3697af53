package e2e_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("per-instance signals from the reps", func() {
	It("show the crash and the restart of the one instance of three that crashes on its row alone, in cork rollout status --instances, its JSON and /metrics", func() {
		b := startBoard(nil)
		b.cork("set-domain", "cork")
		startRep(b, "cell-z1", "z1")
		startRep(b, "cell-z2", "z2")
		// Index 1 exits 3 s after each start; 0 and 2 never do.
		lrp := helloLRP("partly", &models.HealthCheck{IntervalMs: 200, TimeoutMs: 200}, "CRASH_AFTER", "3s", "CRASH_INDEX", "1")
		lrp.Instances = 3
		_, err := b.client().DesireLRP(context.Background(), lrp)
		Expect(err).NotTo(HaveOccurred())
		began := time.Now()

		// instances reads the status's only definition and its instances
		// by index.
		instances := func() (string, map[int32]*models.InstanceSignals, error) {
			out := strings.TrimSpace(b.cork("rollout", "status", "partly", "-o", "json"))
			var status models.RolloutStatus
			if err := protojson.Unmarshal([]byte(out), &status); err != nil {
				return "", nil, err
			}
			if len(status.GetDefinitions()) != 1 {
				return "", nil, fmt.Errorf("want one definition, have %s", out)
			}
			byIndex := map[int32]*models.InstanceSignals{}
			for _, in := range status.GetDefinitions()[0].GetInstanceSignals() {
				byIndex[in.GetIndex()] = in
			}
			return status.GetDefinitions()[0].GetDefinitionId(), byIndex, nil
		}

		var definition string
		var byIndex map[int32]*models.InstanceSignals
		Eventually(func() error {
			var err error
			definition, byIndex, err = instances()
			if err != nil {
				return err
			}
			crashed := byIndex[1]
			if len(byIndex) != 3 || crashed.GetCrashes() < 1 || crashed.GetRestarts() < 1 || crashed.TimeToReadyMs == nil {
				return fmt.Errorf("want 3 instances, index 1 crashed and restarted, have %v", byIndex)
			}
			for _, index := range []int32{0, 2} {
				if byIndex[index].GetHealthChecks() == 0 || byIndex[index].MemoryMbP99 == nil {
					return fmt.Errorf("want index %d's checks and memory, have %v", index, byIndex[index])
				}
			}
			return nil
		}).WithTimeout(45 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		AddReportEntry("index 1's crash and restart in the rollout status after", time.Since(began).Round(100*time.Millisecond).String())

		crashed := byIndex[1]
		Expect(crashed.GetLastCrashReason()).To(ContainSubstring("exited with code 3"))
		Expect(crashed.GetRestarts()).To(BeNumerically("<=", crashed.GetCrashes()), "a restart follows a crash")
		for _, index := range []int32{0, 2} {
			in := byIndex[index]
			Expect(in.GetCrashes()).To(BeZero(), "index %d never crashed", index)
			Expect(in.GetRestarts()).To(BeZero(), "index %d never restarted", index)
			Expect(in.GetLastCrashReason()).To(BeEmpty())
			Expect(in.GetInstanceGuid()).NotTo(BeEmpty())
			Expect(in.TimeToReadyMs).NotTo(BeNil(), "index %d became ready in the window", index)
			Expect(in.GetHealthCheckFailures()).To(BeZero())
			Expect(in.GetHealthLatencyP99Ms()).To(BeNumerically("<=", 200), "within the check's 200ms timeout")
			Expect(in.GetMemoryMbP99()).To(BeNumerically(">", 0))
			Expect(in.GetMemoryMbP99()).To(BeNumerically("<=", 64), "hello holds a few MB, within its 64 MB limit")
		}

		By("showing a row per instance with cork rollout status --instances, the crash on index 1's alone")
		table := b.cork("rollout", "status", "partly", "--instances", "-o", "table")
		rows := map[string][]string{}
		for _, line := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
			fields := strings.Fields(line)
			Expect(fields[0]).To(Equal(definition), table)
			rows[fields[1]] = fields
		}
		Expect(rows).To(HaveLen(3), table)
		// DEFINITION INDEX INSTANCE_GUID CRASHES RESTARTS TIME_TO_READY ...
		Expect(rows["1"][3]).NotTo(Equal("0"), table)
		Expect(rows["1"][4]).NotTo(Equal("0"), table)
		Expect(table).To(MatchRegexp(`(?m)^` + regexp.QuoteMeta(definition) + `\s+1\s.*exited with code 3`))
		for _, index := range []string{"0", "2"} {
			Expect(rows[index][3:5]).To(Equal([]string{"0", "0"}), table)
			Expect(rows[index][9]).To(MatchRegexp(`^\d+MB$`), table)
			Expect(rows[index][10]).To(Equal("-"), "no crash reason: "+table)
		}

		By("exporting them on /metrics, a series per instance")
		labels := func(index int) string {
			return fmt.Sprintf(`{definition_id="%s",index="%d",process_guid="partly"}`, definition, index)
		}
		Expect(b.metric("corkboard_instance_crashes" + labels(1))).To(BeNumerically(">=", 1))
		Expect(b.metric("corkboard_instance_restarts" + labels(1))).To(BeNumerically(">=", 1))
		for _, index := range []int{0, 2} {
			Expect(b.metric("corkboard_instance_crashes" + labels(index))).To(BeZero())
			Expect(b.metric("corkboard_instance_restarts" + labels(index))).To(BeZero())
			Expect(b.metric("corkboard_instance_memory_p99_bytes" + labels(index))).To(BeNumerically(">", 0))
		}

		By("forgetting an instance whose row goes: scaled to 2, index 2's series and row go")
		two := int32(2)
		_, err = b.client().UpdateDesiredLRP(context.Background(), "partly", &models.DesiredLRPUpdate{Instances: &two})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() (int, error) {
			_, byIndex, err := instances()
			return len(byIndex), err
		}).WithTimeout(20 * time.Second).WithPolling(250 * time.Millisecond).Should(Equal(2))
		_, byIndex, err = instances()
		Expect(err).NotTo(HaveOccurred())
		Expect(byIndex).To(HaveKey(int32(0)))
		Expect(byIndex).To(HaveKey(int32(1)))
		Expect(b.metric("corkboard_instance_crashes"+labels(2))).To(Equal(-1.0), "no series for index 2 any more")
	})
})
