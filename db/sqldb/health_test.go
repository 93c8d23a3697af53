package sqldb_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("LogHealth", func(b *board) {
	var sink *recordingSink

	entry := func(guid, definitionID string, checks int32) *models.DefinitionHealth {
		latencies := make([]int64, len(models.HealthLatencyBucketsMs)+1)
		latencies[2] = int64(checks)
		memory := make([]int64, len(models.MemoryBucketsMB)+1)
		memory[0] = 1
		return &models.DefinitionHealth{ProcessGuid: guid, DefinitionId: definitionID, Checks: checks,
			LatencyBucketCounts: latencies, MemoryBucketCounts: memory}
	}

	// part is an instance's part of an entry.
	part := func(instanceGuid string, checks int32) *models.InstanceHealth {
		latencies := make([]int64, len(models.HealthLatencyBucketsMs)+1)
		latencies[2] = int64(checks)
		return &models.InstanceHealth{InstanceGuid: instanceGuid, Checks: checks, LatencyBucketCounts: latencies}
	}

	BeforeEach(func() {
		sink = recordEvents(b)
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 2))
		Expect(err).NotTo(HaveOccurred())
		// web/0 (ig-web-0) runs on cell-1, web/1 (ig-web-1) on cell-2.
		b.setState("web", 0, models.ActualLRP_RUNNING, "cell-1")
		b.setState("web", 1, models.ActualLRP_RUNNING, "cell-2")
		sink.take()
	})

	It("logs a definition_health event per entry, in order, and writes no other table", func() {
		lrps, actuals, operations := b.count("SELECT COUNT(*) FROM desired_lrps"), b.count("SELECT COUNT(*) FROM actual_lrps"),
			b.count("SELECT COUNT(*) FROM operations")
		withPart := entry("web", "v1", 4)
		withPart.Instances = []*models.InstanceHealth{part("ig-web-0", 4)}
		health := []*models.DefinitionHealth{entry("web", "v1", 10), withPart}
		Expect(b.store.LogHealth(b.ctx, "cell-1", health)).To(Succeed())

		events := sink.take()
		Expect(eventTypes(events)).To(Equal([]string{models.EventDefinitionHealth, models.EventDefinitionHealth}))
		for i, h := range health {
			expectEvent(events[i], models.EventDefinitionHealth, h.GetProcessGuid(), &models.DefinitionHealthEvent{CellId: "cell-1", Health: h})
		}
		Expect(b.count("SELECT COUNT(*) FROM desired_lrps")).To(Equal(lrps))
		Expect(b.count("SELECT COUNT(*) FROM actual_lrps")).To(Equal(actuals))
		Expect(b.count("SELECT COUNT(*) FROM operations")).To(Equal(operations))
	})

	It("keeps only what is about the cell's own instances: another cell's instance, definition or LRP logs nothing", func() {
		mixed := entry("web", "v1", 6)
		mixed.Instances = []*models.InstanceHealth{part("ig-web-0", 3), part("ig-web-1", 3)}
		health := []*models.DefinitionHealth{entry("gone", "v1", 5), mixed, entry("web", "v2", 3)}
		Expect(b.store.LogHealth(b.ctx, "cell-1", health)).To(Succeed())

		events := sink.take()
		Expect(eventTypes(events)).To(Equal([]string{models.EventDefinitionHealth}))
		kept := entry("web", "v1", 6)
		kept.Instances = []*models.InstanceHealth{part("ig-web-0", 3)}
		expectEvent(events[0], models.EventDefinitionHealth, "web", &models.DefinitionHealthEvent{CellId: "cell-1", Health: kept})
		Expect(mixed.GetInstances()).To(HaveLen(2), "the report itself is left as it was")

		// A cell that holds nothing of web, reporting web/1 as failing.
		forged := entry("web", "v1", 500)
		forged.CheckFailures = 500
		forged.Instances = []*models.InstanceHealth{part("ig-web-1", 500)}
		Expect(b.store.LogHealth(b.ctx, "cell-3", []*models.DefinitionHealth{forged})).To(Succeed())
		Expect(sink.take()).To(BeEmpty())
	})

	It("logs nothing for an empty report, and refuses a missing cell or entry with the field named", func() {
		Expect(b.store.LogHealth(b.ctx, "cell-1", nil)).To(Succeed())
		err := b.store.LogHealth(b.ctx, "", []*models.DefinitionHealth{entry("web", "v1", 1)})
		Expect(models.ConvertError(err).GetMessage()).To(Equal("cell_id: required"))
		err = b.store.LogHealth(b.ctx, "cell-1", []*models.DefinitionHealth{entry("web", "v1", 1), nil})
		Expect(models.ConvertError(err).GetMessage()).To(Equal("health[1]: required"))
		Expect(sink.take()).To(BeEmpty())
	})
})
