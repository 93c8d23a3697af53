package main

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("describeFields", func() {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	blocked := &models.BlockedBy{Reason: models.BlockedNoCapacity, Since: now.Add(-90 * time.Second).UnixNano(),
		Detail: "the validation instance fits no cell: zone z1 is short of memory (0 MB free at most, 64 MB needed)"}
	field := func(d *lrpDescription, name string) string {
		for _, f := range describeFields(d, now) {
			if f[0] == name {
				return f[1]
			}
		}
		return ""
	}

	It("says what holds a validation, which has no rollout yet, from its operation", func() {
		d := &lrpDescription{
			lrp:     &models.DesiredLRP{ProcessGuid: "hello"},
			rollout: &models.RolloutStatus{ProcessGuid: "hello", State: models.RolloutStatus_NONE},
			operations: []*models.Operation{
				{Kind: models.Operation_VALIDATE, Status: models.Operation_IN_PROGRESS, DefinitionId: "v2", BlockedBy: blocked},
				{Kind: models.Operation_DESIRE, Status: models.Operation_FINISHED},
			},
		}
		Expect(field(d, "Blocked:")).To(Equal("validation of v2: no_capacity for 1m30s (since 2026-12-03T11:58:30Z) — " +
			"the validation instance fits no cell: zone z1 is short of memory (0 MB free at most, 64 MB needed)"))

		d.operations[0].BlockedBy = nil
		Expect(field(d, "Blocked:")).To(BeEmpty(), "nothing holds it")
	})

	It("says the rollout's when there is one", func() {
		d := &lrpDescription{
			lrp: &models.DesiredLRP{ProcessGuid: "hello"},
			rollout: &models.RolloutStatus{ProcessGuid: "hello", State: models.RolloutStatus_PROGRESSING,
				BlockedBy: &models.BlockedBy{Reason: models.BlockedQueued, Detail: "queued: position 1 of 1 (max_rollouts_in_flight 2)"}},
		}
		Expect(field(d, "Blocked:")).To(Equal("queued — queued: position 1 of 1 (max_rollouts_in_flight 2)"))
	})
})
