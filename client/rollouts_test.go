package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

// stagedV2 is hello's v2 rolled out in a staged phase to 25% at 5% every
// 6 hours: slow enough that the share stays near 0 while a spec runs.
func stagedV2() *models.DesiredLRPUpdate {
	return &models.DesiredLRPUpdate{
		Definition:       helloDefinition("v2"),
		UpdateIdentifier: "v2",
		Staged: &models.StagedRollout{
			TargetPercent: 25,
			SafeRate:      &models.SafeRate{Percent: 5, PerMs: (6 * time.Hour).Milliseconds()},
		},
	}
}

var _ = Describe("Staged rollouts", func() {
	var (
		ctx context.Context
		c   *client.Client
	)

	BeforeEach(func() {
		ctx = context.Background()
		c = client.New(startBoard().URL)
		_, err := c.DesireLRP(ctx, helloLRP("hello"))
		Expect(err).NotTo(HaveOccurred())
	})

	// Needs the store's staged-rollout writes.
	It("promotes, pauses and resumes a staged phase, returning the operation each recorded", func() {
		_, started, err := c.UpdateDesiredLRPWithOperation(ctx, "hello", stagedV2())
		Expect(err).NotTo(HaveOccurred())

		status, promoted, err := c.PromoteRollout(ctx, "hello", 50, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.GetStage().GetTargetPercent()).To(Equal(50.0))
		Expect(status.GetStage().GetSafeRate()).To(BeNil(), "no rate: the target at once")
		Expect(promoted).NotTo(Equal(started))
		op, err := c.Operation(ctx, promoted)
		Expect(err).NotTo(HaveOccurred())
		Expect(op.GetKind()).To(Equal(models.Operation_PROMOTE))
		Expect(op.GetRequestedBy()).To(MatchRegexp(`^corkboard-client from 127\.0\.0\.1:\d+$`))

		status, paused, err := c.PauseRollout(ctx, "hello")
		Expect(err).NotTo(HaveOccurred())
		Expect(status.GetStage().GetPaused()).To(BeTrue())
		op, err = c.Operation(ctx, paused)
		Expect(err).NotTo(HaveOccurred())
		Expect(op.GetKind()).To(Equal(models.Operation_PAUSE))
		_, _, err = c.PauseRollout(ctx, "hello")
		Expect(err).To(errorOfType(models.Error_InvalidStateTransition), "paused already")

		status, resumed, err := c.ResumeRollout(ctx, "hello")
		Expect(err).NotTo(HaveOccurred())
		Expect(status.GetStage().GetPaused()).To(BeFalse())
		op, err = c.Operation(ctx, resumed)
		Expect(err).NotTo(HaveOccurred())
		Expect(op.GetKind()).To(Equal(models.Operation_RESUME))
	})

	It("passes the board's refusals on: requests naming the field, and a rollout that is not staged", func() {
		_, _, err := c.PromoteRollout(ctx, "hello", 150, nil)
		Expect(err).To(errorOfType(models.Error_InvalidRequest))
		Expect(err.(*models.Error).GetMessage()).To(HavePrefix("to_percent: "))
		_, _, err = c.PromoteRollout(ctx, "hello", 50, &models.SafeRate{Percent: 5})
		Expect(err).To(errorOfType(models.Error_InvalidRequest))
		Expect(err.(*models.Error).GetMessage()).To(HavePrefix("safe_rate.per_ms: "))
		_, _, err = c.PauseRollout(ctx, "bad guid!")
		Expect(err).To(errorOfType(models.Error_InvalidRequest))
		Expect(err.(*models.Error).GetMessage()).To(HavePrefix("process_guid: "))

		_, err = c.UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2"})
		Expect(err).NotTo(HaveOccurred())
		status, id, err := c.PromoteRollout(ctx, "hello", 50, nil)
		Expect(err).To(errorOfType(models.Error_InvalidStateTransition))
		Expect(status).To(BeNil())
		Expect(id).To(BeEmpty())
		_, _, err = c.PauseRollout(ctx, "hello")
		Expect(err).To(errorOfType(models.Error_InvalidStateTransition))
		_, _, err = c.ResumeRollout(ctx, "hello")
		Expect(err).To(errorOfType(models.Error_InvalidStateTransition))
	})
})

// A stand-in board shows what the client sends and how it reads the answer,
// whatever the store can do.
var _ = Describe("Staged rollouts on the wire", func() {
	var ctx context.Context

	BeforeEach(func() {
		ctx = context.Background()
	})

	// standIn answers every request on route with answer, and keeps the
	// body of the last one in sent.
	standIn := func(route string, sent proto.Message, answer proto.Message) *client.Client {
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer GinkgoRecover()
			Expect(r.URL.Path).To(Equal(route))
			body, err := io.ReadAll(r.Body)
			Expect(err).NotTo(HaveOccurred())
			Expect(proto.Unmarshal(body, sent)).To(Succeed())
			encoded, err := proto.Marshal(answer)
			Expect(err).NotTo(HaveOccurred())
			w.Header().Set("Content-Type", models.ContentTypeProtobuf)
			w.Write(encoded)
		}))
		DeferCleanup(server.Close)
		return client.New(server.URL, client.WithRetries(0))
	}

	holding := &models.RolloutStatus{ProcessGuid: "hello", State: models.RolloutStatus_HOLDING, OperationId: "0123456789abcdef01234567"}
	const recorded = "89abcdef0123456789abcdef"

	It("sends a promote's share and rate, and returns the status with the promote's own operation id", func() {
		var sent models.PromoteRolloutRequest
		c := standIn(models.RoutePromoteRollout, &sent, &models.PromoteRolloutResponse{Status: holding, OperationId: recorded})
		rate := &models.SafeRate{Percent: 6.25, PerMs: (90 * time.Minute).Milliseconds()}
		status, id, err := c.PromoteRollout(ctx, "hello", 12.5, rate)
		Expect(err).NotTo(HaveOccurred())
		Expect(proto.Equal(&sent, &models.PromoteRolloutRequest{ProcessGuid: "hello", ToPercent: 12.5, SafeRate: rate})).To(BeTrue(), "sent %v", &sent)
		Expect(proto.Equal(status, holding)).To(BeTrue())
		Expect(id).To(Equal(recorded), "not the status's operation_id, which started the rollout")
	})

	It("sends a pause and a resume for the guid, and returns their operation ids", func() {
		var paused models.PauseRolloutRequest
		c := standIn(models.RoutePauseRollout, &paused, &models.PauseRolloutResponse{Status: holding, OperationId: recorded})
		_, id, err := c.PauseRollout(ctx, "hello")
		Expect(err).NotTo(HaveOccurred())
		Expect(paused.GetProcessGuid()).To(Equal("hello"))
		Expect(id).To(Equal(recorded))

		var resumed models.ResumeRolloutRequest
		c = standIn(models.RouteResumeRollout, &resumed, &models.ResumeRolloutResponse{Status: holding, OperationId: recorded})
		_, id, err = c.ResumeRollout(ctx, "hello")
		Expect(err).NotTo(HaveOccurred())
		Expect(resumed.GetProcessGuid()).To(Equal("hello"))
		Expect(id).To(Equal(recorded))
	})

	It("sends an edit as asked, and returns the status with the edit's own operation id", func() {
		var sent models.EditRolloutRequest
		c := standIn(models.RouteEditRollout, &sent, &models.EditRolloutResponse{Status: holding, OperationId: recorded})
		edit := &models.EditRolloutRequest{ProcessGuid: "hello", MaxSurge: proto.String("100%"), MinReadyMs: proto.Int64(0),
			SafeRate: &models.SafeRate{Percent: 10, PerMs: 5000}}
		status, id, err := c.EditRollout(ctx, edit)
		Expect(err).NotTo(HaveOccurred())
		Expect(proto.Equal(&sent, edit)).To(BeTrue(), "sent %v", &sent)
		Expect(sent.MinReadyMs).NotTo(BeNil(), "a field set to 0 is sent as set")
		Expect(proto.Equal(status, holding)).To(BeTrue())
		Expect(id).To(Equal(recorded))
	})

	It("sends a rollout plan's update and ready-after, and returns the plan", func() {
		var sent models.RolloutPlanRequest
		answer := &models.RolloutPlan{ProcessGuid: "hello", ToDefinitionId: "v2", Completes: true, ProjectedMs: 40_000}
		c := standIn(models.RouteRolloutPlan, &sent, &models.RolloutPlanResponse{Plan: answer})
		update := &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2"}
		plan, err := c.RolloutPlan(ctx, "hello", update, 10*time.Second)
		Expect(err).NotTo(HaveOccurred())
		Expect(proto.Equal(&sent, &models.RolloutPlanRequest{ProcessGuid: "hello", Update: update, ReadyAfterMs: 10_000})).To(BeTrue(), "sent %v", &sent)
		Expect(proto.Equal(plan, answer)).To(BeTrue())

		c = standIn(models.RouteRolloutPlan, &sent, &models.RolloutPlanResponse{})
		_, err = c.RolloutPlan(ctx, "hello", update, 0)
		Expect(err).To(MatchError(ContainSubstring("without a result")))
	})

	It("fails rather than return nothing when an answer lacks its status", func() {
		c := standIn(models.RoutePromoteRollout, &models.PromoteRolloutRequest{}, &models.PromoteRolloutResponse{OperationId: recorded})
		status, id, err := c.PromoteRollout(ctx, "hello", 50, nil)
		Expect(err).To(MatchError(ContainSubstring("without a result")))
		Expect(status).To(BeNil())
		Expect(id).To(BeEmpty())
	})
})
