package handlers_test

import (
	"math"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// The success paths of promote, pause and resume go through the store's
// staged-rollout writes (db.RolloutDB); the validation and refusal paths
// never reach a write.

func (b *board) rolloutStatus(guid string) *models.RolloutStatus {
	GinkgoHelper()
	resp := &models.RolloutStatusResponse{}
	b.call(models.RouteRolloutStatus, &models.RolloutStatusRequest{ProcessGuid: guid}, resp)
	Expect(resp.GetError()).To(BeNil())
	return resp.GetStatus()
}

func (b *board) promote(guid string, toPercent float64, rate *models.SafeRate) *models.PromoteRolloutResponse {
	GinkgoHelper()
	resp := &models.PromoteRolloutResponse{}
	b.call(models.RoutePromoteRollout, &models.PromoteRolloutRequest{ProcessGuid: guid, ToPercent: toPercent, SafeRate: rate}, resp)
	return resp
}

func (b *board) pause(guid string) *models.PauseRolloutResponse {
	GinkgoHelper()
	resp := &models.PauseRolloutResponse{}
	b.call(models.RoutePauseRollout, &models.PauseRolloutRequest{ProcessGuid: guid}, resp)
	return resp
}

func (b *board) resume(guid string) *models.ResumeRolloutResponse {
	GinkgoHelper()
	resp := &models.ResumeRolloutResponse{}
	b.call(models.RouteResumeRollout, &models.ResumeRolloutRequest{ProcessGuid: guid}, resp)
	return resp
}

func (b *board) editRollout(req *models.EditRolloutRequest) *models.EditRolloutResponse {
	GinkgoHelper()
	resp := &models.EditRolloutResponse{}
	b.call(models.RouteEditRollout, req, resp)
	return resp
}

// stagedUpdate is a new definition id rolled out in a staged phase to
// target at rate (nil: at once).
func stagedUpdate(id string, target float64, rate *models.SafeRate) *models.DesiredLRPUpdate {
	update := newDefinitionUpdate(id)
	update.Staged = &models.StagedRollout{TargetPercent: target, SafeRate: rate}
	return update
}

// fivePerSixHours is Storj's rate: slow enough that a spec's share stays
// near where its phase started.
var fivePerSixHours = &models.SafeRate{Percent: 5, PerMs: (6 * time.Hour).Milliseconds()}

var _ = Describe("Staged rollouts API", func() {
	for _, dialect := range testdb.MustDialects() {
		for _, wire := range wires {
			Describe(dialect+" with "+wire.name+" bodies", func() {
				var (
					b         *board
					guid      string
					mu        sync.Mutex
					triggered []string
				)

				BeforeEach(func() {
					triggered = nil
					b = newBoardWith(stores[dialect], wire, handlers.WithConvergenceTrigger(func(guid string) {
						mu.Lock()
						defer mu.Unlock()
						triggered = append(triggered, guid)
					}))
					b.header = http.Header{models.RequestedByHeader: {specCaller}}
					guid = randomName("lrp")
					b.mustDesire(newLRP(guid, randomName("domain"), 4))
					// The desire's own trigger is no spec's business.
					mu.Lock()
					triggered = nil
					mu.Unlock()
				})

				taken := func() []string {
					mu.Lock()
					defer mu.Unlock()
					out := triggered
					triggered = nil
					return out
				}

				// expectOperation shows that id names a finished operation of
				// kind on the spec's LRP, recorded under the caller's name.
				expectOperation := func(id string, kind models.Operation_Kind) {
					GinkgoHelper()
					Expect(id).To(MatchRegexp(`^[0-9a-f]{24}$`))
					op := b.mustOperation(id)
					Expect(op.GetProcessGuid()).To(Equal(guid))
					Expect(op.GetKind()).To(Equal(kind))
					Expect(op.GetStatus()).To(Equal(models.Operation_FINISHED))
					Expect(op.GetRequestedBy()).To(MatchRegexp(recordedCaller.String()))
				}

				It("promotes a staged phase from the share that stands, answering the PROMOTE operation it recorded", func() {
					started := b.mustUpdate(guid, stagedUpdate("v2", 25, fivePerSixHours))
					first := b.rolloutStatus(guid).GetStage()
					Expect(first).NotTo(BeNil(), "an update with staged rolls out in a staged phase")
					Expect(first.GetTargetPercent()).To(Equal(25.0))
					taken()

					rate := &models.SafeRate{Percent: 10, PerMs: time.Hour.Milliseconds()}
					promoted := b.promote(guid, 50, rate)
					Expect(promoted.GetError()).To(BeNil())
					Expect(promoted.GetOperationId()).NotTo(Equal(started.GetOperationId()))
					expectOperation(promoted.GetOperationId(), models.Operation_PROMOTE)

					status := promoted.GetStatus()
					Expect(status.GetProcessGuid()).To(Equal(guid))
					Expect(status.GetState()).To(Equal(models.RolloutStatus_PROGRESSING))
					Expect(status.GetActiveDefinitionId()).To(Equal("v2"))
					Expect(status.GetOperationId()).To(Equal(started.GetOperationId()), "still the update that started the rollout")
					stage := status.GetStage()
					Expect(stage.GetTargetPercent()).To(Equal(50.0))
					Expect(proto.Equal(stage.GetSafeRate(), rate)).To(BeTrue(), "rate %v", stage.GetSafeRate())
					Expect(stage.GetPriorPercent()).To(BeNumerically("<", 1), "5%% every 6h has grown next to nothing")
					Expect(stage.GetSeed()).To(Equal(first.GetSeed()), "the same cohort order")
					Expect(stage.GetPaused()).To(BeFalse())
					Expect(taken()).To(Equal([]string{guid}), "convergence acts on the new phase at once")
					Expect(proto.Equal(b.rolloutStatus(guid).GetStage().GetSafeRate(), rate)).To(BeTrue(), "stored")

					atOnce := b.promote(guid, 75, nil)
					Expect(atOnce.GetError()).To(BeNil())
					Expect(atOnce.GetStatus().GetStage().GetSafeRate()).To(BeNil(), "without a rate: the target at once")
					Expect(atOnce.GetStatus().GetStage().GetTargetPercent()).To(Equal(75.0))
				})

				It("refuses a promote below the share that stands as InvalidRequest naming to_percent, writing nothing", func() {
					b.mustUpdate(guid, stagedUpdate("v2", 50, nil))
					before := b.rolloutStatus(guid)
					taken()

					resp := b.promote(guid, 25, nil)
					Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest), "error: %v", resp.GetError())
					Expect(resp.GetError().GetMessage()).To(HavePrefix("to_percent: "))
					Expect(resp.GetOperationId()).To(BeEmpty())
					Expect(taken()).To(BeEmpty())
					Expect(b.rolloutStatus(guid).GetStage().GetTargetPercent()).To(Equal(before.GetStage().GetTargetPercent()))
					Expect(b.operations(&models.OperationsRequest{ProcessGuid: guid, Kind: models.Operation_PROMOTE}).GetOperations()).To(BeEmpty())
				})

				It("pauses and resumes the phase's clock, each once, recording PAUSE and RESUME naming the caller", func() {
					b.mustUpdate(guid, stagedUpdate("v2", 25, fivePerSixHours))
					taken()

					paused := b.pause(guid)
					Expect(paused.GetError()).To(BeNil())
					expectOperation(paused.GetOperationId(), models.Operation_PAUSE)
					stage := paused.GetStatus().GetStage()
					Expect(stage.GetPaused()).To(BeTrue())
					Expect(stage.GetPausedAt()).NotTo(BeZero())
					Expect(stage.GetPauseReason()).To(MatchRegexp(`^paused by ` + regexp.QuoteMeta(specCaller) + ` from 127\.0\.0\.1:\d+$`))
					Expect(stage.GetTargetAt()).To(BeZero(), "no target time while the clock stands")
					Expect(taken()).To(Equal([]string{guid}))

					again := b.pause(guid)
					Expect(again.GetError().GetType()).To(Equal(models.Error_InvalidStateTransition), "already paused")
					Expect(again.GetStatus()).To(BeNil())
					Expect(again.GetOperationId()).To(BeEmpty())

					resumed := b.resume(guid)
					Expect(resumed.GetError()).To(BeNil())
					expectOperation(resumed.GetOperationId(), models.Operation_RESUME)
					stage = resumed.GetStatus().GetStage()
					Expect(stage.GetPaused()).To(BeFalse())
					Expect(stage.GetPauseReason()).To(BeEmpty())
					Expect(stage.GetWatchingSince()).To(BeNumerically(">=", paused.GetStatus().GetStage().GetPausedAt()), "watching again since the resume")
					Expect(stage.GetTargetAt()).NotTo(BeZero(), "the clock runs again")
					Expect(taken()).To(Equal([]string{guid}))

					Expect(b.resume(guid).GetError().GetType()).To(Equal(models.Error_InvalidStateTransition), "not paused")
					Expect(b.operations(&models.OperationsRequest{ProcessGuid: guid, Kind: models.Operation_PAUSE}).GetOperations()).To(HaveLen(1))
					Expect(b.operations(&models.OperationsRequest{ProcessGuid: guid, Kind: models.Operation_RESUME}).GetOperations()).To(HaveLen(1))
				})

				It("refuses promote, pause and resume of a rollout that is not staged as InvalidStateTransition, writing nothing", func() {
					b.mustUpdate(guid, newDefinitionUpdate("v2"))
					before := b.operations(&models.OperationsRequest{ProcessGuid: guid}).GetOperations()
					taken()

					promoted := b.promote(guid, 50, nil)
					Expect(promoted.GetError().GetType()).To(Equal(models.Error_InvalidStateTransition), "error: %v", promoted.GetError())
					Expect(promoted.GetStatus()).To(BeNil())
					Expect(promoted.GetOperationId()).To(BeEmpty())
					Expect(b.pause(guid).GetError().GetType()).To(Equal(models.Error_InvalidStateTransition))
					Expect(b.resume(guid).GetError().GetType()).To(Equal(models.Error_InvalidStateTransition))

					Expect(taken()).To(BeEmpty(), "a refusal asks for no pass")
					Expect(idsOf(b.operations(&models.OperationsRequest{ProcessGuid: guid}).GetOperations())).To(Equal(idsOf(before)))
					Expect(b.rolloutStatus(guid).GetStage()).To(BeNil())
				})

				It("edits a rollout's limits, answering the EDIT operation it recorded, and asks for a pass", func() {
					started := b.mustUpdate(guid, stagedUpdate("v2", 25, fivePerSixHours))
					taken()

					edited := b.editRollout(&models.EditRolloutRequest{ProcessGuid: guid, MaxSurge: proto.String("50%"),
						TargetPercent: proto.Float64(100)})
					Expect(edited.GetError()).To(BeNil())
					expectOperation(edited.GetOperationId(), models.Operation_EDIT)
					Expect(b.mustOperation(edited.GetOperationId()).GetHistory()[0].GetMessage()).To(MatchRegexp(
						`^max_surge default → 50%; target 25% → 100%; from the share that stands, 0\.\d+%$`))
					status := edited.GetStatus()
					Expect(status.GetOperationId()).To(Equal(started.GetOperationId()), "still the update that started the rollout")
					Expect(status.GetStage().GetTargetPercent()).To(Equal(100.0))
					Expect(proto.Equal(status.GetStage().GetSafeRate(), fivePerSixHours)).To(BeTrue(), "the rate stays")
					Expect(taken()).To(Equal([]string{guid}), "convergence acts on the new limits at once")
					Expect(b.mustGet(guid).GetUpdateStrategy().GetMaxSurge()).To(Equal("50%"))
				})

				It("refuses an edit the rollout cannot take, writing nothing and asking for no pass", func() {
					before := b.operations(&models.OperationsRequest{ProcessGuid: guid}).GetOperations()
					none := b.editRollout(&models.EditRolloutRequest{ProcessGuid: guid, MaxSurge: proto.String("2")})
					Expect(none.GetError().GetType()).To(Equal(models.Error_InvalidStateTransition), "no rollout: %v", none.GetError())
					Expect(none.GetOperationId()).To(BeEmpty())

					b.mustUpdate(guid, newDefinitionUpdate("v2"))
					before = b.operations(&models.OperationsRequest{ProcessGuid: guid}).GetOperations()
					taken()
					unstaged := b.editRollout(&models.EditRolloutRequest{ProcessGuid: guid, SafeRate: fivePerSixHours})
					Expect(unstaged.GetError().GetType()).To(Equal(models.Error_InvalidStateTransition), "error: %v", unstaged.GetError())
					Expect(unstaged.GetError().GetMessage()).To(HavePrefix("safe_rate: "))
					Expect(unstaged.GetStatus()).To(BeNil())
					Expect(taken()).To(BeEmpty())
					Expect(idsOf(b.operations(&models.OperationsRequest{ProcessGuid: guid}).GetOperations())).To(Equal(idsOf(before)))
				})

				DescribeTable("a bad edit is InvalidRequest naming the field, and the store is not called",
					func(field string, request *models.EditRolloutRequest) {
						resp := b.editRollout(request)
						Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest), "error: %v", resp.GetError())
						Expect(resp.GetError().GetMessage()).To(HavePrefix(field + ": "))
						Expect(resp.GetStatus()).To(BeNil())
						Expect(resp.GetOperationId()).To(BeEmpty())
						Expect(b.counter(models.RouteEditRollout, "InvalidRequest")).To(BeEquivalentTo(1))
						Expect(taken()).To(BeEmpty())
					},
					Entry("no guid", "process_guid", &models.EditRolloutRequest{MaxSurge: proto.String("2")}),
					Entry("nothing to change", "max_surge, max_unavailable, min_ready_ms, progress_deadline_ms, target_percent, safe_rate",
						&models.EditRolloutRequest{ProcessGuid: "web"}),
					Entry("a surge that is no count", "max_surge", &models.EditRolloutRequest{ProcessGuid: "web", MaxSurge: proto.String("-1")}),
					Entry("an unavailability past 100%", "max_unavailable", &models.EditRolloutRequest{ProcessGuid: "web", MaxUnavailable: proto.String("101%")}),
					Entry("a min_ready over an hour", "min_ready_ms", &models.EditRolloutRequest{ProcessGuid: "web", MinReadyMs: proto.Int64(3_600_001)}),
					Entry("a negative deadline", "progress_deadline_ms", &models.EditRolloutRequest{ProcessGuid: "web", ProgressDeadlineMs: proto.Int64(-1)}),
					Entry("a target past 100%", "target_percent", &models.EditRolloutRequest{ProcessGuid: "web", TargetPercent: proto.Float64(100.5)}),
					Entry("a rate without a period", "safe_rate.per_ms", &models.EditRolloutRequest{ProcessGuid: "web", SafeRate: &models.SafeRate{Percent: 5}}),
				)

				DescribeTable("a bad request is InvalidRequest naming the field, and the store is not called",
					func(route, field string, request proto.Message) {
						resp := &models.PromoteRolloutResponse{}
						b.call(route, request, resp)
						Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest), "error: %v", resp.GetError())
						Expect(resp.GetError().GetMessage()).To(HavePrefix(field + ": "))
						Expect(resp.GetStatus()).To(BeNil())
						Expect(resp.GetOperationId()).To(BeEmpty())
						Expect(b.counter(route, "InvalidRequest")).To(BeEquivalentTo(1))
						Expect(taken()).To(BeEmpty())
					},
					Entry("a promote of a bad guid", models.RoutePromoteRollout, "process_guid",
						&models.PromoteRolloutRequest{ProcessGuid: "not a guid!", ToPercent: 50}),
					Entry("a promote without a share", models.RoutePromoteRollout, "to_percent",
						&models.PromoteRolloutRequest{ProcessGuid: "web"}),
					Entry("a promote to a negative share", models.RoutePromoteRollout, "to_percent",
						&models.PromoteRolloutRequest{ProcessGuid: "web", ToPercent: -5}),
					Entry("a promote past 100%", models.RoutePromoteRollout, "to_percent",
						&models.PromoteRolloutRequest{ProcessGuid: "web", ToPercent: 100.5}),
					Entry("a promote to NaN", models.RoutePromoteRollout, "to_percent",
						&models.PromoteRolloutRequest{ProcessGuid: "web", ToPercent: math.NaN()}),
					Entry("a promote at a rate of 0%", models.RoutePromoteRollout, "safe_rate.percent",
						&models.PromoteRolloutRequest{ProcessGuid: "web", ToPercent: 50, SafeRate: &models.SafeRate{PerMs: 1000}}),
					Entry("a promote at a rate over 100%", models.RoutePromoteRollout, "safe_rate.percent",
						&models.PromoteRolloutRequest{ProcessGuid: "web", ToPercent: 50, SafeRate: &models.SafeRate{Percent: 150, PerMs: 1000}}),
					Entry("a promote at a rate without a period", models.RoutePromoteRollout, "safe_rate.per_ms",
						&models.PromoteRolloutRequest{ProcessGuid: "web", ToPercent: 50, SafeRate: &models.SafeRate{Percent: 5}}),
					Entry("a promote at a rate with a negative period", models.RoutePromoteRollout, "safe_rate.per_ms",
						&models.PromoteRolloutRequest{ProcessGuid: "web", ToPercent: 50, SafeRate: &models.SafeRate{Percent: 5, PerMs: -1}}),
					Entry("a pause without a guid", models.RoutePauseRollout, "process_guid", &models.PauseRolloutRequest{}),
					Entry("a pause of a bad guid", models.RoutePauseRollout, "process_guid", &models.PauseRolloutRequest{ProcessGuid: "bad guid!"}),
					Entry("a resume without a guid", models.RouteResumeRollout, "process_guid", &models.ResumeRolloutRequest{}),
					Entry("a resume of a bad guid", models.RouteResumeRollout, "process_guid", &models.ResumeRolloutRequest{ProcessGuid: "bad guid!"}),
				)

				DescribeTable("an update asking for a bad staged phase is InvalidRequest naming the field, and changes nothing",
					func(field string, update *models.DesiredLRPUpdate) {
						before := b.snapshot(guid)
						taken()
						resp := b.update(guid, update)
						Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest), "error: %v", resp.GetError())
						Expect(resp.GetError().GetMessage()).To(HavePrefix(field + ": "))
						b.expectUnchanged(guid, before)
						Expect(taken()).To(BeEmpty())
					},
					Entry("staged without a definition", "update.staged",
						&models.DesiredLRPUpdate{Instances: proto.Int32(5), Staged: &models.StagedRollout{TargetPercent: 10}}),
					Entry("no target", "update.staged.target_percent", stagedUpdate("v2", 0, nil)),
					Entry("a target past 100%", "update.staged.target_percent", stagedUpdate("v2", 101, nil)),
					Entry("a rate of 0%", "update.staged.safe_rate.percent", stagedUpdate("v2", 10, &models.SafeRate{PerMs: 1000})),
					Entry("a rate without a period", "update.staged.safe_rate.per_ms", stagedUpdate("v2", 10, &models.SafeRate{Percent: 5})),
					Entry("a seed over the limit", "update.staged.seed", &models.DesiredLRPUpdate{
						Definition: newDefinition("/bin/app-v2"), UpdateIdentifier: "v2",
						Staged: &models.StagedRollout{TargetPercent: 10, Seed: strings.Repeat("s", models.MaxStageSeedBytes+1)},
					}),
				)
			})
		}
	}
})
