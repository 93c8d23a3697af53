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

	BeforeEach(func() {
		sink = recordEvents(b)
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 2))
		Expect(err).NotTo(HaveOccurred())
		sink.take()
	})

	It("logs a definition_health event per entry, in order, and writes no other table", func() {
		lrps, actuals, operations := b.count("SELECT COUNT(*) FROM desired_lrps"), b.count("SELECT COUNT(*) FROM actual_lrps"),
			b.count("SELECT COUNT(*) FROM operations")
		health := []*models.DefinitionHealth{entry("web", "v1", 10), entry("web", "v2", 3), entry("gone", "v9", 0)}
		Expect(b.store.LogHealth(b.ctx, "cell-1", health)).To(Succeed())

		events := sink.take()
		Expect(eventTypes(events)).To(Equal([]string{models.EventDefinitionHealth, models.EventDefinitionHealth, models.EventDefinitionHealth}))
		for i, h := range health {
			expectEvent(events[i], models.EventDefinitionHealth, h.GetProcessGuid(), &models.DefinitionHealthEvent{CellId: "cell-1", Health: h})
		}
		Expect(b.count("SELECT COUNT(*) FROM desired_lrps")).To(Equal(lrps))
		Expect(b.count("SELECT COUNT(*) FROM actual_lrps")).To(Equal(actuals))
		Expect(b.count("SELECT COUNT(*) FROM operations")).To(Equal(operations))
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
