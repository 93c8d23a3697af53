package handlers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/signals"
)

// statusOnly is a store that answers a fixed rollout status and nothing
// else: the handler's part alone, no database.
type statusOnly struct {
	db.DB
	status *models.RolloutStatus
}

func (s statusOnly) RolloutStatus(_ context.Context, processGuid string) (*models.RolloutStatus, error) {
	if processGuid != s.status.GetProcessGuid() {
		return nil, models.NewError(models.Error_ResourceNotFound, "no LRP %s", processGuid)
	}
	return proto.Clone(s.status).(*models.RolloutStatus), nil
}

var _ = Describe("Rollout status with per-instance signals (no database)", func() {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	store := statusOnly{status: &models.RolloutStatus{
		ProcessGuid: "web", State: models.RolloutStatus_PROGRESSING, ActiveDefinitionId: "v2", HealthyDefinitionId: "v1",
		Definitions: []*models.DefinitionInstances{
			{DefinitionId: "v2", Instances: 1, Running: 1},
			{DefinitionId: "v1", Instances: 2, Running: 1},
		},
	}}

	// collector saw index 0 of v2 start, and index 1 of v1 crash and
	// restart while index 0 of v1 ran.
	collector := func() *signals.Collector {
		c := signals.NewCollector(5*time.Minute, func() time.Time { return now })
		row := func(def string, index int32, guid string, state models.ActualLRP_State, ago time.Duration) *models.ActualLRP {
			return &models.ActualLRP{ProcessGuid: "web", DefinitionId: def, Index: index, InstanceGuid: guid,
				Presence: models.ActualLRP_ORDINARY, State: state, Since: now.Add(-ago).UnixNano()}
		}
		c.Observe(models.ActualLRPChanged(row("v2", 0, "n0", models.ActualLRP_CLAIMED, 30*time.Second), row("v2", 0, "n0", models.ActualLRP_RUNNING, 28*time.Second)))
		c.Observe(models.ActualLRPCreated(row("v1", 0, "o0", models.ActualLRP_RUNNING, 10*time.Minute)))
		c.Observe(models.ActualLRPCreated(row("v1", 1, "o1", models.ActualLRP_RUNNING, 10*time.Minute)))
		crashed := row("v1", 1, "", models.ActualLRP_CRASHED, time.Minute)
		crashed.CrashReason = "exited with code 3"
		c.Observe(models.ActualLRPCrashed(crashed))
		c.Observe(models.ActualLRPChanged(crashed, row("v1", 1, "", models.ActualLRP_UNCLAIMED, time.Minute)))
		return c
	}

	for _, wire := range wires {
		It("fills each definition's instances from the signals, over "+wire.name, func() {
			b := newBoardWith(store, wire, handlers.WithSignals(collector()))
			resp := &models.RolloutStatusResponse{}
			b.call(models.RouteRolloutStatus, &models.RolloutStatusRequest{ProcessGuid: "web"}, resp)
			Expect(resp.GetError()).To(BeNil())
			v2, v1 := resp.GetStatus().GetDefinitions()[0], resp.GetStatus().GetDefinitions()[1]

			Expect(v2.GetInstanceSignals()).To(HaveLen(1))
			Expect(proto.Equal(v2.GetInstanceSignals()[0], &models.InstanceSignals{
				Index: 0, InstanceGuid: "n0", WindowMs: 28000, TimeToReadyMs: proto.Int64(2000),
			})).To(BeTrue(), "got %v", v2.GetInstanceSignals()[0])

			Expect(v1.GetInstanceSignals()).To(HaveLen(2))
			Expect(proto.Equal(v1.GetInstanceSignals()[0], &models.InstanceSignals{Index: 0, InstanceGuid: "o0", WindowMs: 300000})).
				To(BeTrue(), "index 0 did nothing: got %v", v1.GetInstanceSignals()[0])
			Expect(proto.Equal(v1.GetInstanceSignals()[1], &models.InstanceSignals{
				Index: 1, InstanceGuid: "o1", WindowMs: 300000, Crashes: 1, LastCrashReason: "exited with code 3", Restarts: 1,
			})).To(BeTrue(), "got %v", v1.GetInstanceSignals()[1])
			Expect(v1.GetSignals().GetCrashes()).To(BeEquivalentTo(1), "the definition's figures count the crash too")
		})
	}

	It("answers no instances without signals", func() {
		b := newBoardWith(store, jsonWire)
		resp := &models.RolloutStatusResponse{}
		b.call(models.RouteRolloutStatus, &models.RolloutStatusRequest{ProcessGuid: "web"}, resp)
		for _, d := range resp.GetStatus().GetDefinitions() {
			Expect(d.GetInstanceSignals()).To(BeEmpty())
			Expect(d.GetSignals()).To(BeNil())
		}
	})
})
