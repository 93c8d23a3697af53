package e2e_test

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/corkboard/corkboard/models"
)

// Freeze windows with real reps (issue 31, item 4): a one-off freeze holds
// an update's rollout (nothing moves to the new definition, the status says
// why) until it ends, then the rollout completes; an update made with
// --override-freeze --reason rolls out during a freeze, and its operation
// keeps the reason.
var _ = Describe("a freeze window", func() {
	const (
		guid      = "hello"
		instances = 2
		// frozenFor is how long the first freeze lasts from its add.
		frozenFor = 6 * time.Second
	)
	ctx := context.Background()

	operationOf := func(out string) string {
		GinkgoHelper()
		for _, line := range strings.Split(out, "\n") {
			if id, ok := strings.CutPrefix(line, "operation: "); ok {
				return strings.TrimSpace(id)
			}
		}
		Fail("no operation line in:\n" + out)
		return ""
	}

	It("holds a rollout until it ends, and lets an override through with its reason", func() {
		b := startBoard(nil)
		b.cork("set-domain", "cork")
		startRep(b, "cell-z1", "z1")
		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.Instances = instances
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		v1ID := steady(b, guid, instances, "cell-z1")[0].GetDefinitionId()

		By("adding a one-off freeze that ends in a few seconds, then updating to v2")
		now := time.Now().UTC()
		until := now.Add(frozenFor).Truncate(time.Second)
		b.cork("freeze", "add", "release", "--from", now.Add(-time.Minute).Format(time.RFC3339), "--until", until.Format(time.RFC3339))
		b.cork("update", guid, "--definition", filepath.Join("..", "fixtures", "lrps", "hello-local-v2-definition.json"), "--id", "v2")

		frozen := waitForRollout(b, guid, 5*time.Second, rolloutCondition{"frozen", func(s *models.RolloutStatus) bool {
			return strings.Contains(s.GetReason(), "frozen by release until "+until.Format(time.RFC3339))
		}})
		Expect(frozen.GetState()).To(Equal(models.RolloutStatus_PROGRESSING))
		Expect(frozen.GetInFlight()).To(BeZero())
		Expect(frozen.GetDeadlineAt()).To(BeNumerically(">=", until.UnixNano()), "the deadline counts from the thaw")
		Consistently(func() []string {
			var ids []string
			for _, row := range b.lrps(guid) {
				ids = append(ids, row.GetDefinitionId()+"/"+row.GetPresence().String())
			}
			return ids
		}, time.Until(until)-500*time.Millisecond, 250*time.Millisecond).Should(HaveEach(v1ID+"/ORDINARY"),
			"nothing moves to v2 while frozen")

		By("completing once the freeze has ended")
		status := waitForRollout(b, guid, 20*time.Second, complete())
		Expect(status.GetActiveDefinitionId()).To(Equal("v2"))
		Expect(status.GetReason()).NotTo(ContainSubstring("frozen"))
		Expect(status.GetFinishedAt()).To(BeNumerically(">=", until.UnixNano()))
		expectVersion(steady(b, guid, instances, "cell-z1"), "v2", "v2")

		By("overriding a freeze of an hour with a reason")
		b.cork("freeze", "add", "incident", "--from", time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
			"--until", time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
		list := &models.FreezeWindowsResponse{}
		Expect(protojson.Unmarshal([]byte(b.cork("freeze", "list")), list)).To(Succeed())
		Expect(list.GetActive()).To(Equal("incident"))
		out := b.cork("update", guid, "--definition", filepath.Join("..", "fixtures", "lrps", "hello-local-v3-definition.json"), "--id", "v3",
			"--override-freeze", "--reason", "hotfix for INC-42", "-o", "table")
		id := operationOf(out)
		status = waitForRollout(b, guid, 20*time.Second, completeOn("v3"))
		Expect(status.GetFreezeExemption()).To(Equal(models.FreezeExemptOverride))
		expectVersion(steady(b, guid, instances, "cell-z1"), "v3", "v3")

		op, err := b.client().Operation(ctx, id)
		Expect(err).NotTo(HaveOccurred())
		Expect(op.GetStatus()).To(Equal(models.Operation_FINISHED))
		Expect(op.GetHistory()[0].GetMessage()).To(ContainSubstring("overrides any freeze window: hotfix for INC-42"))
		var request models.UpdateDesiredLRPRequest
		Expect(op.GetParameters().UnmarshalTo(&request)).To(Succeed())
		Expect(request.GetUpdate().GetOverrideReason()).To(Equal("hotfix for INC-42"))
		Expect(b.cork("operation", id)).To(ContainSubstring("hotfix for INC-42"))
	})
})
