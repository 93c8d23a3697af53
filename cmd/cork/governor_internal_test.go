package main

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("a rollout queued by the governor", func() {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	queued := &models.RolloutStatus{
		ProcessGuid: "hello", State: models.RolloutStatus_PROGRESSING, ActiveDefinitionId: "v2", HealthyDefinitionId: "v1",
		Instances: 1, QueuePosition: 3,
		Reason: "queued: position 3 of 7 (max_rollouts_in_flight 10); rolling from v1 to v2",
	}

	It("shows its place in the queue in the REASON column of cork rollout status", func() {
		var out strings.Builder
		Expect(printTable(&out, rolloutStatusHeaders, [][]string{rolloutStatusRow(queued, nil, now)})).To(Succeed())
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		Expect(lines[1][strings.Index(lines[0], "REASON"):]).To(Equal("queued: position 3 of 7 (max_rollouts_in_flight 10); rolling from v1 to v2"))
		Expect(strings.Fields(lines[1])[7]).To(Equal("-"), "no deadline while queued")
	})

	It("shows it in cork describe's rollout line", func() {
		Expect(rolloutLine(queued, now)).To(Equal("PROGRESSING 0/1 updated, 0 in flight — queued: position 3 of 7 (max_rollouts_in_flight 10); rolling from v1 to v2"))
	})
})
