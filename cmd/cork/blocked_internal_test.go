package main

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("a blocked rollout", func() {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	blocked := &models.BlockedBy{
		Reason: models.BlockedNoCapacity, Since: now.Add(-12*time.Minute - 3*time.Second).UnixNano(),
		Detail: "index 0 fits no cell: zone z1 is short of memory (256 MB free at most, 512 MB needed)",
	}

	It("says what blocks it, for how long and since when", func() {
		Expect(blockedLine(blocked, now)).To(Equal("no_capacity for 12m3s (since 2026-11-25T11:47:57Z) — index 0 fits no cell: zone z1 is short of memory (256 MB free at most, 512 MB needed)"))
	})

	It("says when it is expected to move, when the board can tell", func() {
		frozen := &models.BlockedBy{Reason: models.BlockedFrozen, Since: now.UnixNano(), Estimate: now.Add(time.Hour).UnixNano(),
			Detail: "freeze window xmas holds it until 2026-11-25T13:00:00Z"}
		Expect(blockedLine(frozen, now)).To(Equal("frozen for 0s (since 2026-11-25T12:00:00Z) — freeze window xmas holds it until 2026-11-25T13:00:00Z; expected to move at 2026-11-25T13:00:00Z"))
	})

	It("shows it as cork describe's Blocked field", func() {
		d := &lrpDescription{lrp: &models.DesiredLRP{ProcessGuid: "hello"}, rollout: &models.RolloutStatus{
			ProcessGuid: "hello", State: models.RolloutStatus_PROGRESSING, BlockedBy: blocked,
		}}
		Expect(describeFields(d, now)).To(ContainElement([]string{"Blocked:", blockedLine(blocked, now)}))
	})
})
