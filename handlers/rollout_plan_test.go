package handlers_test

import (
	"context"
	"fmt"
	"math"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence/runner"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// POST /v1/rollouts/plan on a real store: the board's planner reads the
// LRP's live state and answers the plan, and nothing at all is written.
var _ = Describe("Rollout plan API", func() {
	for _, dialect := range testdb.MustDialects() {
		for _, wire := range wires {
			Describe(dialect+" with "+wire.name+" bodies", func() {
				var (
					b         *board
					guid      string
					cellID    string
					triggered []string
				)

				BeforeEach(func() {
					store := stores[dialect]
					planner := runner.NewRolloutPlanner(store, runner.RunnerConfig{})
					triggered = nil
					b = newBoardWith(store, wire, handlers.WithRolloutPlanner(planner.Plan),
						handlers.WithConvergenceTrigger(func(guid string) { triggered = append(triggered, guid) }))
					guid, cellID = randomName("lrp"), randomName("cell")
					register := registerRequest(cellID)
					register.Cell.PlacementTags = nil
					registered := &models.RegisterCellResponse{}
					b.call(models.RouteRegisterCell, register, registered)
					Expect(registered.GetError()).To(BeNil())
					b.mustDesire(newLRP(guid, randomName("domain"), 2))
					active := b.mustGet(guid).GetActiveDefinitionId()
					for index := range int32(2) {
						place(store, models.ActualLRPKey{ProcessGuid: guid, Index: index, Presence: models.ActualLRP_ORDINARY}, cellID)
						instance := fmt.Sprintf("%s-%d", instanceGuid[:30], index)
						claimed := &models.ActualLRPLifecycleResponse{}
						b.call(models.RouteClaimActualLRP, &models.ClaimActualLRPRequest{ProcessGuid: guid, Index: index, InstanceGuid: instance, CellId: cellID}, claimed)
						Expect(claimed.GetError()).To(BeNil())
						started := &models.ActualLRPLifecycleResponse{}
						b.call(models.RouteStartActualLRP, &models.StartActualLRPRequest{ProcessGuid: guid, Index: index, InstanceGuid: instance, CellId: cellID, NetInfo: netInfo()}, started)
						Expect(started.GetError()).To(BeNil())
						Expect(started.GetActualLrp().GetDefinitionId()).To(Equal(active))
					}
					triggered = nil
				})

				plan := func(req *models.RolloutPlanRequest) *models.RolloutPlanResponse {
					GinkgoHelper()
					resp := &models.RolloutPlanResponse{}
					b.call(models.RouteRolloutPlan, req, resp)
					return resp
				}

				// lastEvent is the newest event the log holds once every
				// committed one is sequenced.
				lastEvent := func() uint64 {
					GinkgoHelper()
					ctx := context.Background()
					_, err := stores[dialect].SequenceEvents(ctx, 10_000)
					Expect(err).NotTo(HaveOccurred())
					_, last, err := stores[dialect].EventLogBounds(ctx)
					Expect(err).NotTo(HaveOccurred())
					return last
				}

				expectNothingWritten := func(before snapshot, operations int, event uint64, status *models.RolloutStatus) {
					GinkgoHelper()
					b.expectUnchanged(guid, before)
					Expect(b.operations(&models.OperationsRequest{ProcessGuid: guid}).GetOperations()).To(HaveLen(operations), "no operation recorded")
					Expect(lastEvent()).To(Equal(event), "no event logged")
					Expect(proto.Equal(b.rolloutStatus(guid), status)).To(BeTrue(), "the rollout record is as it was")
					Expect(triggered).To(BeEmpty(), "convergence is not asked for a pass")
				}

				It("answers the rollout pass by pass from the live instances and cells, and writes nothing", func() {
					before := b.snapshot(guid)
					operations := len(b.operations(&models.OperationsRequest{ProcessGuid: guid}).GetOperations())
					event, status := lastEvent(), b.rolloutStatus(guid)

					resp := plan(&models.RolloutPlanRequest{ProcessGuid: guid, ReadyAfterMs: 10_000, Update: newDefinitionUpdate("v2")})
					Expect(resp.GetError()).To(BeNil())
					p := resp.GetPlan()
					Expect(p.GetProcessGuid()).To(Equal(guid))
					Expect(p.GetFromDefinitionId()).To(Equal(before.lrp.GetActiveDefinitionId()))
					Expect(p.GetToDefinitionId()).To(Equal("v2"))
					Expect(p.GetInstances()).To(BeEquivalentTo(2))
					Expect(p.GetMaxSurge()).To(BeEquivalentTo(1))
					Expect(p.GetMaxUnavailable()).To(BeEquivalentTo(0))
					Expect(p.GetReadyAfterMs()).To(BeEquivalentTo(10_000))
					Expect(p.GetCompletes()).To(BeTrue(), p.GetStoppedReason())
					Expect(p.GetProjectedMs()).To(BeEquivalentTo(20_000), "2 instances one after the other, 10 s each")
					Expect(p.GetPasses()).To(HaveLen(3))
					first := p.GetPasses()[0]
					Expect(first.GetAtMs()).To(BeZero())
					Expect(first.GetStarts()).To(HaveLen(1))
					Expect(first.GetStarts()[0].GetIndex()).To(BeZero())
					// Other specs' cells share the database: any live one will do.
					Expect(first.GetStarts()[0].GetCellId()).NotTo(BeEmpty(), "placed on a live cell")
					Expect(first.GetStarts()[0].GetDefinitionId()).To(Equal("v2"))
					Expect(first.GetAvailable()).To(BeEquivalentTo(2))
					Expect(first.GetSurged()).To(BeEquivalentTo(1))
					Expect(first.GetReasons()).NotTo(BeEmpty())
					Expect(p.GetPasses()[1].GetStops()).To(Equal([]int32{0}))
					Expect(p.GetPasses()[2].GetUpdated()).To(BeEquivalentTo(2))

					expectNothingWritten(before, operations, event, status)
				})

				It("answers a plan that does not complete with the reason", func() {
					update := newDefinitionUpdate("huge")
					update.Definition.MemoryMb = 1 << 20
					resp := plan(&models.RolloutPlanRequest{ProcessGuid: guid, Update: update})
					Expect(resp.GetError()).To(BeNil())
					Expect(resp.GetPlan().GetCompletes()).To(BeFalse())
					Expect(resp.GetPlan().GetStoppedReason()).To(HavePrefix("index 0 cannot be placed: "))
				})

				It("answers ResourceNotFound for an LRP nobody desired", func() {
					resp := plan(&models.RolloutPlanRequest{ProcessGuid: randomName("nobody"), Update: newDefinitionUpdate("v2")})
					Expect(resp.GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
				})

				DescribeTable("refuses a bad field as an update would, naming it, and writes nothing",
					func(field string, req func(guid string) *models.RolloutPlanRequest) {
						before := b.snapshot(guid)
						operations := len(b.operations(&models.OperationsRequest{ProcessGuid: guid}).GetOperations())
						event, status := lastEvent(), b.rolloutStatus(guid)
						resp := plan(req(guid))
						Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
						Expect(resp.GetError().GetMessage()).To(HavePrefix(field + ": "))
						expectNothingWritten(before, operations, event, status)
					},
					Entry("no update", "update", func(guid string) *models.RolloutPlanRequest {
						return &models.RolloutPlanRequest{ProcessGuid: guid}
					}),
					Entry("a bad guid", "process_guid", func(string) *models.RolloutPlanRequest {
						return &models.RolloutPlanRequest{ProcessGuid: "bad guid!", Update: newDefinitionUpdate("v2")}
					}),
					Entry("negative instances", "update.instances", func(guid string) *models.RolloutPlanRequest {
						update := newDefinitionUpdate("v2")
						update.Instances = proto.Int32(-1)
						return &models.RolloutPlanRequest{ProcessGuid: guid, Update: update}
					}),
					Entry("a bad surge", "update.update_strategy.max_surge", func(guid string) *models.RolloutPlanRequest {
						update := newDefinitionUpdate("v2")
						update.UpdateStrategy = &models.UpdateStrategy{MaxSurge: "lots"}
						return &models.RolloutPlanRequest{ProcessGuid: guid, Update: update}
					}),
					Entry("a negative ready_after_ms", "ready_after_ms", func(guid string) *models.RolloutPlanRequest {
						return &models.RolloutPlanRequest{ProcessGuid: guid, Update: newDefinitionUpdate("v2"), ReadyAfterMs: -1}
					}),
					Entry("a ready_after_ms over a day", "ready_after_ms", func(guid string) *models.RolloutPlanRequest {
						return &models.RolloutPlanRequest{ProcessGuid: guid, Update: newDefinitionUpdate("v2"), ReadyAfterMs: math.MaxInt64}
					}),
				)
			})
		}
	}

	It("answers Unavailable on a board without a planner", func() {
		b := newBoard(stores[testdb.SQLite], jsonWire)
		resp := &models.RolloutPlanResponse{}
		b.call(models.RouteRolloutPlan, &models.RolloutPlanRequest{ProcessGuid: "web", Update: newDefinitionUpdate("v2")}, resp)
		Expect(resp.GetError().GetType()).To(Equal(models.Error_Unavailable))
	})
})
