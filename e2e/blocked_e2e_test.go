package e2e_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

// Why a rollout is stuck (issue 31, item 5) with real reps: a rollout
// whose replacement fits no cell shows blocked_by no_capacity, naming the
// zone and what it is short of, in cork rollout status; once a cell with
// room registers, the rollout completes and blocked_by is gone.
var _ = Describe("a rollout blocked by no capacity", func() {
	ctx := context.Background()

	It("shows blocked_by in cork rollout status and clears it when capacity comes", func() {
		b := startBoard(nil)
		b.cork("set-domain", "cork")
		// Room for exactly one hello-local instance (64 MB, 64 MB disk).
		first := freePortRange(4)
		startRep(b, "cell-z1", "z1", map[string]any{
			"capacity":   map[string]int{"memory_mb": 64, "disk_mb": 64, "instances": 1},
			"port_range": fmt.Sprintf("%d-%d", first, first+3),
		})
		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.ProcessGuid = "blocked"
		lrp.Instances = 1
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		steady(b, "blocked", 1, "cell-z1")

		By("updating with max_surge 1, max_unavailable 0: the replacement needs a second slot")
		_, err = b.client().UpdateDesiredLRP(ctx, "blocked", &models.DesiredLRPUpdate{
			Definition:     definitionFixture("hello-local-v2-definition.json"),
			UpdateStrategy: &models.UpdateStrategy{MaxSurge: "1", MaxUnavailable: "0"},
		})
		Expect(err).NotTo(HaveOccurred())
		var since int64
		Eventually(func(g Gomega) {
			s, err := b.client().RolloutStatus(ctx, "blocked")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.GetBlockedBy().GetReason()).To(Equal(models.BlockedNoCapacity))
			since = s.GetBlockedBy().GetSince()
		}).Should(Succeed())
		table := b.cork("rollout", "status", "blocked", "-o", "table")
		Expect(table).To(ContainSubstring("blocked: no_capacity for "))
		Expect(table).To(ContainSubstring("index 0 fits no cell: zone z1 is short of memory (0 MB free at most, 64 MB needed)"))
		Expect(b.cork("describe", "blocked")).To(ContainSubstring("no_capacity"))

		By("keeping since from the first pass that saw it, pass after pass")
		Consistently(func(g Gomega) {
			s, err := b.client().RolloutStatus(ctx, "blocked")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.GetBlockedBy().GetReason()).To(Equal(models.BlockedNoCapacity))
			g.Expect(s.GetBlockedBy().GetSince()).To(Equal(since))
		}, "3s", "500ms").Should(Succeed())

		By("registering a second cell with room: the rollout completes and blocked_by clears")
		second := freePortRange(4)
		startRep(b, "cell-z2", "z2", map[string]any{
			"capacity":   map[string]int{"memory_mb": 256, "disk_mb": 256, "instances": 4},
			"port_range": fmt.Sprintf("%d-%d", second, second+3),
		})
		Eventually(func(g Gomega) {
			s, err := b.client().RolloutStatus(ctx, "blocked")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.GetState()).To(Equal(models.RolloutStatus_COMPLETE))
			g.Expect(s.GetBlockedBy()).To(BeNil())
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Expect(b.cork("rollout", "status", "blocked", "-o", "table")).NotTo(ContainSubstring("blocked:"))
	})
})
