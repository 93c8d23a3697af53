package e2e_test

import (
	"context"
	"fmt"
	"regexp"
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
		b := oneSlotBoard("blocked")

		By("updating with max_surge 1, max_unavailable 0: the replacement needs a second slot")
		_, err := b.client().UpdateDesiredLRP(ctx, "blocked", &models.DesiredLRPUpdate{
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
		addRoomyRep(b)
		Eventually(func(g Gomega) {
			s, err := b.client().RolloutStatus(ctx, "blocked")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.GetState()).To(Equal(models.RolloutStatus_COMPLETE))
			g.Expect(s.GetBlockedBy()).To(BeNil())
		}).WithTimeout(2 * time.Minute).Should(Succeed())
		Expect(b.cork("rollout", "status", "blocked", "-o", "table")).NotTo(ContainSubstring("blocked:"))
	})
})

// A rollout whose new instance starts but never passes its health check
// names the check's output in blocked_by while the instance still starts,
// before its start timeout makes it a crash: the rep reports the failing
// startup check, the board keeps it and the planner quotes it.
var _ = Describe("a rollout blocked by a failing health check", func() {
	ctx := context.Background()

	It("shows the check's output in cork rollout status before any crash", func() {
		b := startBoard(nil)
		b.cork("set-domain", "cork")
		startRep(b, "cell-z1", "z1")
		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.ProcessGuid = "checkfail"
		lrp.Instances = 1
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		steady(b, "checkfail", 1, "cell-z1")

		By("updating to a definition whose /health answers 503, with a start timeout far beyond the spec")
		unhealthy := definitionFixture("hello-unhealthy-definition.json")
		unhealthy.StartTimeoutMs = 120000
		_, err = b.client().UpdateDesiredLRP(ctx, "checkfail", &models.DesiredLRPUpdate{
			Definition:     unhealthy,
			UpdateStrategy: &models.UpdateStrategy{MaxSurge: "1", MaxUnavailable: "0"},
		})
		Expect(err).NotTo(HaveOccurred())
		detail := regexp.MustCompile(`^index 0: health check failing: GET http://\S+:\d+/health: 503 Service Unavailable$`)
		var status *models.RolloutStatus
		Eventually(func(g Gomega) {
			status, err = b.client().RolloutStatus(ctx, "checkfail")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(status.GetBlockedBy().GetReason()).To(Equal(models.BlockedHealthCheck))
			g.Expect(status.GetBlockedBy().GetDetail()).To(MatchRegexp(detail.String()))
		}).WithTimeout(20 * time.Second).Should(Succeed())

		By("while the new instance still starts and has never crashed")
		checked := 0
		for _, row := range b.lrps("checkfail") {
			if row.GetDefinitionId() == status.GetActiveDefinitionId() {
				Expect(row.GetState()).To(Equal(models.ActualLRP_CLAIMED), "it starts")
				Expect(row.GetCrashCount()).To(BeZero())
				Expect(row.GetCrashReason()).To(BeEmpty())
				checked++
			}
		}
		Expect(checked).To(Equal(1), "one row runs the new definition")
		table := b.cork("rollout", "status", "checkfail", "-o", "table")
		Expect(table).To(ContainSubstring("blocked: health_check_failing for "))
		Expect(table).To(MatchRegexp(`index 0: health check failing: GET http://\S+:\d+/health: 503 Service Unavailable`))
	})
})

// A validation (an update with validate) whose instance fits no cell says
// so in its operation's blocked_by, naming the validation instance; once a
// cell with room registers, the instance is placed, validates, and the
// update rolls out, the operation ending FINISHED with no blocked_by.
var _ = Describe("a validation blocked by no capacity", func() {
	ctx := context.Background()

	It("shows blocked_by in cork operation and clears it when capacity comes", func() {
		b := oneSlotBoard("validating")

		By("updating with validate: the validation instance needs a second slot")
		_, id, err := b.client().UpdateDesiredLRPWithOperation(ctx, "validating", &models.DesiredLRPUpdate{
			Definition: definitionFixture("hello-local-v2-definition.json"),
			Validate:   true,
		})
		Expect(err).NotTo(HaveOccurred())
		var since int64
		Eventually(func(g Gomega) {
			op, err := b.client().Operation(ctx, id)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(op.GetStatus()).To(Equal(models.Operation_IN_PROGRESS))
			g.Expect(op.GetBlockedBy().GetReason()).To(Equal(models.BlockedNoCapacity))
			g.Expect(op.GetBlockedBy().GetDetail()).To(Equal("the validation instance fits no cell: zone z1 is short of memory (0 MB free at most, 64 MB needed)"))
			since = op.GetBlockedBy().GetSince()
		}).Should(Succeed())
		Expect(b.cork("operation", id)).To(ContainSubstring(`"reason":"no_capacity"`))
		Eventually(func() float64 {
			return b.metric(`corkboard_blocked{kind="operation",reason="no_capacity"}`)
		}).Should(Equal(1.0))
		Consistently(func(g Gomega) {
			op, err := b.client().Operation(ctx, id)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(op.GetBlockedBy().GetSince()).To(Equal(since), "since stays while the reason does")
		}, "2s", "500ms").Should(Succeed())

		By("registering a second cell with room: validated, rolled out, FINISHED without blocked_by")
		addRoomyRep(b)
		Eventually(func(g Gomega) {
			op, err := b.client().Operation(ctx, id)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(op.GetStatus()).To(Equal(models.Operation_FINISHED))
			g.Expect(op.GetBlockedBy()).To(BeNil())
		}).WithTimeout(2 * time.Minute).Should(Succeed())
	})
})

// oneSlotBoard runs a board and one rep, cell-z1, with room for exactly
// one hello-local instance (64 MB, 64 MB disk), and guid's one instance
// running there.
func oneSlotBoard(guid string) *board {
	GinkgoHelper()
	b := startBoard(nil)
	b.cork("set-domain", "cork")
	first := freePortRange(4)
	startRep(b, "cell-z1", "z1", map[string]any{
		"capacity":   map[string]int{"memory_mb": 64, "disk_mb": 64, "instances": 1},
		"port_range": fmt.Sprintf("%d-%d", first, first+3),
	})
	lrp := &models.DesiredLRP{}
	readFixture("hello-local.json", lrp)
	lrp.ProcessGuid = guid
	lrp.Instances = 1
	_, err := b.client().DesireLRP(context.Background(), lrp)
	Expect(err).NotTo(HaveOccurred())
	steady(b, guid, 1, "cell-z1")
	return b
}

// addRoomyRep registers a second cell, cell-z2, with room for four
// hello-local instances.
func addRoomyRep(b *board) {
	GinkgoHelper()
	second := freePortRange(4)
	startRep(b, "cell-z2", "z2", map[string]any{
		"capacity":   map[string]int{"memory_mb": 256, "disk_mb": 256, "instances": 4},
		"port_range": fmt.Sprintf("%d-%d", second, second+3),
	})
}
