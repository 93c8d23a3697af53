package e2e_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// Updates with --validate, with real processes: 4 hello instances on two
// reps. A definition that never gets healthy is refused after 3 attempts
// of one unroutable instance, and not one of the 4 instances is touched; a
// healthy one is validated, then rolled out as usual.
var _ = Describe("updates validated by one instance before they apply", Ordered, func() {
	const (
		guid      = "hello"
		instances = 4
	)
	var (
		b      *board
		before []*models.ActualLRP
	)
	ctx := context.Background()

	BeforeAll(func() {
		b = startBoard(nil)
		b.cork("set-domain", "cork")
		startRep(b, "cell-z1", "z1")
		startRep(b, "cell-z2", "z2")
		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.Instances = instances
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		before = steady(b, guid, instances, "cell-z1", "cell-z2")
	})

	// watchRoutable counts the moments a validation instance was seen
	// routable, until the returned func is called.
	watchRoutable := func() (stop func() int64) {
		var seen atomic.Int64
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			for {
				select {
				case <-done:
					return
				case <-time.After(100 * time.Millisecond):
				}
				rows, err := b.client().ActualLRPs(ctx, client.ActualLRPFilter{ProcessGuid: guid})
				if err != nil {
					continue
				}
				for _, row := range rows {
					if models.IsValidationIndex(row.GetIndex()) && row.GetRoutable() {
						seen.Add(1)
					}
				}
			}
		}()
		return func() int64 { close(done); return seen.Load() }
	}
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
	waitOperation := func(id string, status models.Operation_Status) *models.Operation {
		GinkgoHelper()
		var op *models.Operation
		Eventually(func() (models.Operation_Status, error) {
			var err error
			op, err = b.client().Operation(ctx, id)
			return op.GetStatus(), err
		}).WithTimeout(time.Minute).Should(Equal(status))
		return op
	}

	It("refuses a definition that never gets healthy after 3 attempts, touching no instance", func() {
		stop := watchRoutable()
		out := b.cork("update", guid, "--definition", filepath.Join("..", "fixtures", "lrps", "hello-unhealthy-definition.json"),
			"--id", "bad", "--validate", "-o", "table")
		id := operationOf(out)
		began := time.Now()
		op := waitOperation(id, models.Operation_ERROR)
		AddReportEntry("refused after", time.Since(began).Round(time.Millisecond).String())
		Expect(stop()).To(BeZero(), "the validation instance was never routable")

		Expect(op.GetKind()).To(Equal(models.Operation_VALIDATE))
		Expect(op.GetReason()).To(HavePrefix("validation of bad failed: its instance crashed 3 times, last: "))
		Expect(op.GetReason()).To(ContainSubstring("did not become healthy"))
		history := protojson.Format(op)
		Expect(history).To(ContainSubstring("attempt 1 of 3 crashed"))
		Expect(history).To(ContainSubstring("attempt 2 of 3 crashed"))
		AddReportEntry("operation", history)

		desired, err := b.client().DesiredLRPByProcessGuid(ctx, guid)
		Expect(err).NotTo(HaveOccurred())
		Expect(desired.GetActiveDefinitionId()).To(Equal(before[0].GetDefinitionId()))
		Eventually(func() []*models.ActualLRP { return b.lrps(guid) }).Should(HaveLen(instances), "the validation instance is gone")
		after := steady(b, guid, instances, "cell-z1", "cell-z2")
		for i := range after {
			Expect(after[i].GetInstanceGuid()).To(Equal(before[i].GetInstanceGuid()), "index %d was restarted", i)
			Expect(after[i].GetDefinitionId()).To(Equal(before[i].GetDefinitionId()))
		}
	})

	It("validates a healthy definition with one unroutable instance, then rolls it out", func() {
		stop := watchRoutable()
		out := b.cork("update", guid, "--definition", filepath.Join("..", "fixtures", "lrps", "hello-local-v2-definition.json"),
			"--id", "v2", "--validate", "-o", "table")
		id := operationOf(out)
		op := waitOperation(id, models.Operation_FINISHED)
		Expect(stop()).To(BeZero(), "the validation instance was never routable")
		Expect(op.GetKind()).To(Equal(models.Operation_VALIDATE))
		Expect(protojson.Format(op)).To(ContainSubstring("validated: an instance of v2 became healthy"))
		rows := steady(b, guid, instances, "cell-z1", "cell-z2")
		expectVersion(rows, "v2", "v2")
	})

	// Issue 26: bad failed validation and v2 completed since; a plain
	// rollback used to pick bad, the newest definition older than v2.
	It("rolls back plainly to the last healthy definition, not the one that failed validation; --to it warns", func() {
		Eventually(func() (string, error) {
			st, err := b.client().RolloutStatus(ctx, guid)
			return st.GetHealthyDefinitionId(), err
		}).WithTimeout(time.Minute).Should(Equal("v2"))
		defs, err := b.client().Definitions(ctx, guid)
		Expect(err).NotTo(HaveOccurred())
		history := map[string][2]bool{}
		for _, d := range defs {
			history[d.GetDefinitionId()] = [2]bool{d.GetBecameHealthy(), d.GetFailedValidation()}
		}
		v1 := before[0].GetDefinitionId()
		Expect(history).To(Equal(map[string][2]bool{"v2": {true, false}, "bad": {false, true}, v1: {true, false}}))
		table := b.cork("definitions", guid, "-o", "table")
		Expect(table).To(MatchRegexp(`(?m)^bad\s+\S+\s+no\s+no\s+no\s+yes\s`), "cork definitions shows it:\n%s", table)

		stdout, stderr, code := b.corkResult("rollback", guid)
		Expect(code).To(Equal(0), stderr)
		Expect(stderr).To(BeEmpty(), "no warning")
		var status models.RolloutStatus
		Expect(protojson.Unmarshal([]byte(strings.TrimSpace(stdout)), &status)).To(Succeed())
		Expect(status.GetActiveDefinitionId()).To(Equal(v1), "the last definition that ran, not bad")
		waitForRollout(b, guid, 2*time.Minute, complete())
		rows := steady(b, guid, instances, "cell-z1", "cell-z2")
		expectVersion(rows, v1, "v1")

		stdout, stderr, code = b.corkResult("rollback", guid, "--to", "bad")
		Expect(code).To(Equal(0), stderr)
		Expect(stderr).To(HavePrefix("cork: warning: bad failed validation"))
		Expect(protojson.Unmarshal([]byte(strings.TrimSpace(stdout)), &status)).To(Succeed())
		Expect(status.GetActiveDefinitionId()).To(Equal("bad"), "named, it is allowed")
	})
})
