package sqldb_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("ConvergenceSnapshot of rolling updates", func(b *board) {
	var seed seeder

	BeforeEach(func() {
		seed = seeder{conn: b.conn, dialect: b.dialect}
	})

	snapshot := func(guids ...string) *convergence.Snapshot {
		GinkgoHelper()
		snap, err := b.store.ConvergenceSnapshot(b.ctx, guids)
		Expect(err).NotTo(HaveOccurred())
		return snap
	}
	// putRollout stores a record as convergence or an update would.
	putRollout := func(r convergence.RolloutRow, settled bool) {
		GinkgoHelper()
		b.exec(`INSERT INTO rollouts (process_guid, state, reason, definition_id, failed_definition_id, started_at,
 progress_at, finished_at, updated_instances, in_flight, settled, modification_index)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ProcessGuid, r.State.String(), r.Reason, r.DefinitionID, r.FailedDefinitionID, r.StartedAt,
			r.ProgressAt, r.FinishedAt, r.UpdatedInstances, r.InFlight, settled, r.ModificationIndex)
	}
	putDefinition := func(guid, id string, createdAt int64) {
		GinkgoHelper()
		b.exec(`INSERT INTO run_infos (process_guid, definition_id, content_hash, memory_mb, disk_mb, definition, created_at)
 VALUES (?, ?, ?, 64, 32, ?, ?)`, guid, id, "hash-"+id, []byte{}, createdAt)
	}

	It("reads the healthy definition and update strategy of each LRP, nil for a strategy never set", func() {
		Expect(seed.desired(b.ctx, []seedLRP{
			{guid: "api", domain: "apps", instances: 1, definitionID: "a1"},
			{guid: "web", domain: "apps", instances: 4, definitionID: "v2"},
			{guid: "worker", domain: "apps", instances: 2, definitionID: "w1"},
		})).To(Succeed())
		strategy := &models.UpdateStrategy{MaxSurge: "25%", MaxUnavailable: "1", MinReadyMs: 5000, ProgressDeadlineMs: 60_000,
			AutoRevert: true, HistoryLimit: 3}
		blob, err := proto.Marshal(strategy)
		Expect(err).NotTo(HaveOccurred())
		b.exec("UPDATE desired_lrps SET healthy_definition_id = ?, update_strategy = ? WHERE process_guid IN ('web', 'worker')", "v1", blob)
		b.exec("UPDATE desired_lrps SET disruption_budget = '10%' WHERE process_guid = 'worker'")

		snap := snapshot()
		Expect(snap.Desired).To(HaveLen(3))
		api, web, worker := snap.Desired[0], snap.Desired[1], snap.Desired[2]
		Expect(api.HealthyDefinitionID).To(BeEmpty())
		Expect(api.UpdateStrategy).To(BeNil())
		Expect(web.HealthyDefinitionID).To(Equal("v1"))
		Expect(web.UpdateStrategy).To(EqualProto(strategy))
		Expect(worker.UpdateStrategy).To(EqualProto(strategy))
		Expect(web.DisruptionBudget).To(BeNil(), "never set: the strategy's")
		Expect(worker.DisruptionBudget).To(EqualProto(&models.DisruptionBudget{MaxUnavailable: "10%"}))
	})

	It("reads whether each instance is occupied and whether a RETIRING one was told to stop", func() {
		Expect(seed.desired(b.ctx, []seedLRP{{guid: "web", domain: "apps", instances: 1, definitionID: "v2"}})).To(Succeed())
		b.putActual(&models.ActualLRP{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY, Domain: "apps",
			InstanceGuid: "ig-new", CellId: "cell-a", DefinitionId: "v2", State: models.ActualLRP_RUNNING, Routable: true,
			Occupied: true, ModificationTag: &models.ModificationTag{Epoch: "e", Index: 3}})
		b.putActual(&models.ActualLRP{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_RETIRING, Domain: "apps",
			InstanceGuid: "ig-old", CellId: "cell-b", DefinitionId: "v1", State: models.ActualLRP_RUNNING, Routable: true,
			StopRequested: true, Since: 7, ModificationTag: &models.ModificationTag{Epoch: "e", Index: 5}})

		snap := snapshot()
		Expect(snap.Actual).To(HaveLen(2))
		ordinary, retiring := snap.Actual[0], snap.Actual[1]
		Expect(ordinary.Presence).To(Equal(models.ActualLRP_ORDINARY))
		Expect(ordinary.Occupied).To(BeTrue())
		Expect(ordinary.StopRequested).To(BeFalse())
		Expect(retiring).To(Equal(convergence.ActualRow{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_RETIRING,
			State: models.ActualLRP_RUNNING, Domain: "apps", InstanceGuid: "ig-old", CellID: "cell-b", DefinitionID: "v1",
			Since: 7, Routable: true, StopRequested: true, ModificationIndex: 5}))
	})

	Describe("rollout records and definitions", func() {
		BeforeEach(func() {
			Expect(seed.desired(b.ctx, []seedLRP{
				{guid: "api", domain: "apps", instances: 1, definitionID: "a2"},
				{guid: "web", domain: "apps", instances: 2, definitionID: "v3"},
				{guid: "worker", domain: "apps", instances: 1, definitionID: "w1"},
			})).To(Succeed())
			// web rolls from v2 to v3; api's rollout completed long ago;
			// gone was removed and waits for cleanup; worker never rolled.
			putRollout(convergence.RolloutRow{ProcessGuid: "web", State: models.RolloutStatus_PROGRESSING, Reason: "rolling from v2 to v3",
				DefinitionID: "v3", StartedAt: 10, ProgressAt: 20, UpdatedInstances: 1, InFlight: 1, ModificationIndex: 4}, false)
			putRollout(convergence.RolloutRow{ProcessGuid: "api", State: models.RolloutStatus_COMPLETE, DefinitionID: "a2",
				StartedAt: 1, ProgressAt: 2, FinishedAt: 3, ModificationIndex: 2}, true)
			putRollout(convergence.RolloutRow{ProcessGuid: "gone", State: models.RolloutStatus_REVERTED, DefinitionID: "g1",
				FailedDefinitionID: "g2", ModificationIndex: 7}, false)
			putDefinition("web", "v1", 100)
			putDefinition("web", "v2", 200)
			putDefinition("web", "v0", 100)
			putDefinition("api", "a1", 50)
			putDefinition("gone", "g1", 5)
			putDefinition("gone", "g2", 6)
		})

		It("reads only the unsettled records, in guid order, and the definitions of their LRPs, newest first", func() {
			snap := snapshot()
			Expect(snap.Rollouts).To(Equal([]convergence.RolloutRow{
				{ProcessGuid: "gone", State: models.RolloutStatus_REVERTED, DefinitionID: "g1", FailedDefinitionID: "g2",
					ModificationIndex: 7},
				{ProcessGuid: "web", State: models.RolloutStatus_PROGRESSING, Reason: "rolling from v2 to v3",
					DefinitionID: "v3", StartedAt: 10, ProgressAt: 20, UpdatedInstances: 1, InFlight: 1, ModificationIndex: 4},
			}))
			// seed.desired stamps v3 with the time it ran: the newest.
			v3 := snap.Definitions[2].CreatedAt
			// Each with its resources (putDefinition's 64 MB and 32 MB;
			// seed.desired stores v3 without any).
			Expect(snap.Definitions).To(Equal([]convergence.DefinitionRow{
				{ProcessGuid: "gone", DefinitionID: "g2", CreatedAt: 6, MemoryMB: 64, DiskMB: 32},
				{ProcessGuid: "gone", DefinitionID: "g1", CreatedAt: 5, MemoryMB: 64, DiskMB: 32},
				{ProcessGuid: "web", DefinitionID: "v3", CreatedAt: v3},
				{ProcessGuid: "web", DefinitionID: "v2", CreatedAt: 200, MemoryMB: 64, DiskMB: 32},
				{ProcessGuid: "web", DefinitionID: "v1", CreatedAt: 100, MemoryMB: 64, DiskMB: 32},
				{ProcessGuid: "web", DefinitionID: "v0", CreatedAt: 100, MemoryMB: 64, DiskMB: 32},
			}))
			Expect(v3).To(BeNumerically(">", 200))
		})

		It("narrows records and definitions to the given LRPs, as the rest of the snapshot", func() {
			snap := snapshot("web", "api", "worker")
			Expect(snap.Rollouts).To(HaveLen(1))
			Expect(snap.Rollouts[0].ProcessGuid).To(Equal("web"))
			Expect(snap.Definitions).To(HaveLen(4))
			for _, d := range snap.Definitions {
				Expect(d.ProcessGuid).To(Equal("web"))
			}

			snap = snapshot("api", "worker")
			Expect(snap.Rollouts).To(BeEmpty())
			Expect(snap.Definitions).To(BeEmpty())
		})

		It("reads the same records and definitions in parallel parts", func() {
			whole := snapshot()
			for _, parts := range []int{2, 3} {
				restore := sqldb.SetSnapshotParts(1, parts)
				inParts := snapshot()
				restore()
				Expect(inParts.Rollouts).To(Equal(whole.Rollouts), "in %d parts", parts)
				Expect(inParts.Definitions).To(Equal(whole.Definitions), "in %d parts", parts)
			}
		})

		It("reads nothing more once every record is settled", func() {
			b.exec("UPDATE rollouts SET settled = ?", true)
			snap := snapshot()
			Expect(snap.Rollouts).To(BeEmpty())
			Expect(snap.Definitions).To(BeEmpty())
			Expect(snap.Desired).To(HaveLen(3))
		})
	})
})
