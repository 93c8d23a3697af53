package e2e_test

import (
	"context"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

// An edit in flight with real processes: 6 hello instances rolling one at
// a time (max_surge 1) with a min_ready of 3 s, so that the rollout is
// mid-way for a while; the built cork edits max_surge to 100%, the rest of
// the indices are replaced at once, and the instances already on the new
// definition keep running (the same instance guids).
var _ = Describe("a rollout edited in flight", Ordered, func() {
	const (
		guid      = "hello"
		instances = 6
		minReady  = 3 * time.Second
	)
	var b *board
	ctx := context.Background()
	cells := []string{"cell-z1", "cell-z2"}
	slots := map[string]any{"capacity": map[string]int{"memory_mb": 2048, "disk_mb": 2048, "instances": 2 * instances}}

	BeforeAll(func() {
		b = startBoard(nil)
		b.cork("set-domain", "cork")
		startRep(b, "cell-z1", "z1", slots)
		startRep(b, "cell-z2", "z2", slots)
		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.Instances = instances
		lrp.UpdateStrategy = &models.UpdateStrategy{MaxSurge: "1", MinReadyMs: minReady.Milliseconds()}
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		steady(b, guid, instances, cells...)
	})

	It("goes on at the new max_surge without restarting the instances already updated, and lists the EDIT operation", func() {
		_, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{
			Definition: definitionFixture("hello-local-v2-definition.json"), UpdateIdentifier: "v2",
		})
		Expect(err).NotTo(HaveOccurred())

		By("mid-way: one index updated, the rest on v1")
		waitForRollout(b, guid, 20*time.Second, rolloutCondition{"one index updated", func(s *models.RolloutStatus) bool {
			return s.GetState() == models.RolloutStatus_PROGRESSING && s.GetUpdatedInstances() >= 1
		}})
		updated := map[int32]string{}
		for _, row := range b.lrps(guid) {
			if row.GetPresence() == models.ActualLRP_ORDINARY && row.GetDefinitionId() == "v2" && row.GetState() == models.ActualLRP_RUNNING {
				updated[row.GetIndex()] = row.GetInstanceGuid()
			}
		}
		Expect(updated).NotTo(BeEmpty())
		Expect(len(updated)).To(BeNumerically("<", instances), "the rollout is mid-way")
		AddReportEntry("on v2 at the edit", len(updated))

		By("cork rollout edit --max-surge 100%")
		edited := time.Now()
		out := b.cork("rollout", "edit", guid, "--max-surge", "100%", "-o", "table")
		match := regexp.MustCompile(`(?m)^operation: ([0-9a-f]{24})$`).FindStringSubmatch(out)
		Expect(match).NotTo(BeNil(), "cork's output: %s", out)
		operationID := match[1]
		Expect(out).To(ContainSubstring("max_surge=100%(6)"), "the status shows the new strategy")

		By("the remaining indices are replaced at once, not one at a time")
		waitForRollout(b, guid, 10*time.Second, rolloutCondition{"several in flight", func(s *models.RolloutStatus) bool {
			return s.GetInFlight() >= 2 || s.GetState() == models.RolloutStatus_COMPLETE
		}})
		done := waitForRollout(b, guid, 20*time.Second, complete())
		took := time.Since(edited)
		AddReportEntry("edit → COMPLETE", took.Round(time.Millisecond).String())
		remaining := instances - len(updated)
		Expect(took).To(BeNumerically("<", time.Duration(remaining)*minReady),
			"%d indices one at a time would take at least %s", remaining, time.Duration(remaining)*minReady)
		Expect(done.GetActiveDefinitionId()).To(Equal("v2"))

		rows := steady(b, guid, instances, cells...)
		expectVersion(rows, "v2", "v2")
		for _, row := range rows {
			if was, ok := updated[row.GetIndex()]; ok {
				Expect(row.GetInstanceGuid()).To(Equal(was), "index %d was on v2 before the edit: not restarted", row.GetIndex())
			}
		}

		By("the edit is an operation: cork operations lists it")
		op, err := b.client().Operation(ctx, operationID)
		Expect(err).NotTo(HaveOccurred())
		Expect(op.GetKind()).To(Equal(models.Operation_EDIT))
		Expect(op.GetStatus()).To(Equal(models.Operation_FINISHED))
		Expect(op.GetHistory()[0].GetMessage()).To(Equal("max_surge 1 → 100%"))
		listed := b.cork("operations", guid, "-o", "table")
		var line string
		for _, l := range strings.Split(listed, "\n") {
			if strings.HasPrefix(l, operationID) {
				line = l
			}
		}
		Expect(strings.Fields(line)).To(ContainElements("EDIT", "FINISHED"), "cork operations: %s", listed)
	})
})
