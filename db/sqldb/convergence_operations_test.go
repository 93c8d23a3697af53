package sqldb_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("convergence of operations", func(b *board) {
	var sink *recordingSink

	BeforeEach(func() {
		sink = recordEvents(b)
	})

	snapshot := func(guids ...string) *convergence.Snapshot {
		GinkgoHelper()
		snap, err := b.store.ConvergenceSnapshot(b.ctx, guids)
		Expect(err).NotTo(HaveOccurred())
		return snap
	}
	desire := func(guid string, instances int32) {
		GinkgoHelper()
		_, err := b.store.DesireLRP(b.ctx, newLRP(guid, "apps", instances))
		Expect(err).NotTo(HaveOccurred())
	}
	// update applies an update and returns the operation it recorded.
	update := func(guid string, u *models.DesiredLRPUpdate) *models.Operation {
		GinkgoHelper()
		note := &db.OperationNote{}
		_, err := b.store.UpdateDesiredLRP(db.WithOperationNote(b.ctx, note), guid, u)
		Expect(err).NotTo(HaveOccurred())
		return note.Operation
	}
	toDefinition := func(id string, queue bool) *models.DesiredLRPUpdate {
		return &models.DesiredLRPUpdate{Definition: newDefinition("", "/bin/web-"+id), UpdateIdentifier: id, Queue: queue}
	}
	operation := func(id string) *models.Operation {
		GinkgoHelper()
		op, err := b.store.Operation(b.ctx, id)
		Expect(err).NotTo(HaveOccurred())
		return op
	}
	apply := func(writes ...convergence.OperationWrite) (*convergence.ConvergenceResult, error) {
		return b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Operations: writes})
	}
	now := func() int64 { return b.clock.Now().UnixNano() }

	Describe("the snapshot", func() {
		var inProgress, pending, cleanedUp, api *models.Operation
		var leaseExpires int64

		BeforeEach(func() {
			_, err := b.store.AcquireLease(b.ctx, "convergence", "board-1", time.Minute)
			Expect(err).NotTo(HaveOccurred())
			leaseExpires = now() + int64(time.Minute)
			desire("web", 2)
			desire("api", 1)
			desire("gone", 1)
			b.clock.Advance(time.Second)
			inProgress = update("web", toDefinition("v2", false))
			pending = update("web", toDefinition("v3", true))
			cleanedUp = update("web", toDefinition("v4", true))
			update("web", &models.DesiredLRPUpdate{Instances: int32p(3)}) // FINISHED: not read
			api = update("api", toDefinition("a2", false))
			update("gone", toDefinition("g2", false))
			Expect(b.store.RemoveDesiredLRP(b.ctx, "gone")).To(Succeed()) // ends its operations
			// Cleanup took v4 away, and an operation is left of an LRP
			// desired no more.
			b.exec("DELETE FROM run_infos WHERE process_guid = 'web' AND definition_id = 'v4'")
			b.exec(`INSERT INTO operations (id, process_guid, sequence, kind, status, reason, definition_id, requested_by,
 created_at, ended, modification_index) VALUES ('00000000000000010000abcd', 'orphan', 3, 'UPDATE_DEFINITION', 'PENDING', '', 'o2', '', 5, ?, 7)`, false)
		})

		It("reads the operations that have not ended, by guid then sequence, with whether their definition is stored and its resources", func() {
			t := now()
			// Leased until the convergence lease runs out: a minute after
			// it was taken, less the (real) time since, on the board's clock.
			for _, op := range []*models.Operation{api, inProgress} {
				Expect(op.LeaseExpiresAt).To(BeNumerically("~", leaseExpires, int64(2*time.Second)))
			}
			Expect(snapshot().Operations).To(Equal([]convergence.OperationRow{
				{ID: api.Id, ProcessGuid: "api", Sequence: 2, Kind: models.Operation_UPDATE_DEFINITION,
					Status: models.Operation_IN_PROGRESS, DefinitionID: "a2", DefinitionStored: true, MemoryMB: 256, DiskMB: 1024,
					LeaseOwner: "board-1", LeaseExpiresAt: api.LeaseExpiresAt, CreatedAt: t, ModificationIndex: 1},
				{ID: "00000000000000010000abcd", ProcessGuid: "orphan", Sequence: 3, Kind: models.Operation_UPDATE_DEFINITION,
					Status: models.Operation_PENDING, DefinitionID: "o2", CreatedAt: 5, ModificationIndex: 7},
				{ID: inProgress.Id, ProcessGuid: "web", Sequence: 2, Kind: models.Operation_UPDATE_DEFINITION,
					Status: models.Operation_IN_PROGRESS, DefinitionID: "v2", DefinitionStored: true, MemoryMB: 256, DiskMB: 1024,
					LeaseOwner: "board-1", LeaseExpiresAt: inProgress.LeaseExpiresAt, CreatedAt: t, ModificationIndex: 1},
				{ID: pending.Id, ProcessGuid: "web", Sequence: 3, Kind: models.Operation_UPDATE_DEFINITION,
					Status: models.Operation_PENDING, DefinitionID: "v3", DefinitionStored: true, MemoryMB: 256, DiskMB: 1024, CreatedAt: t, ModificationIndex: 1},
				{ID: cleanedUp.Id, ProcessGuid: "web", Sequence: 4, Kind: models.Operation_UPDATE_DEFINITION,
					Status: models.Operation_PENDING, DefinitionID: "v4", CreatedAt: t, ModificationIndex: 1},
			}))
		})

		It("reads the operation that started each rollout with the record", func() {
			snap := snapshot()
			started := map[string]string{}
			for _, r := range snap.Rollouts {
				started[r.ProcessGuid] = r.OperationID
			}
			Expect(started).To(HaveKeyWithValue("web", inProgress.Id))
			Expect(started).To(HaveKeyWithValue("api", api.Id))
		})

		It("narrows the operations to the LRPs read, and reads the same in parallel parts", func() {
			ops := snapshot("web", "orphan").Operations
			Expect(ops).To(HaveLen(4))
			Expect(ops[0].ProcessGuid).To(Equal("orphan"))
			Expect(snapshot("gone").Operations).To(BeEmpty())

			whole := snapshot()
			for _, parts := range []int{2, 3} {
				restore := sqldb.SetSnapshotParts(1, parts)
				inParts := snapshot()
				restore()
				Expect(inParts.Operations).To(Equal(whole.Operations), "in %d parts", parts)
			}
		})
	})

	Describe("applying operation writes", func() {
		var inProgress, pending *models.Operation

		BeforeEach(func() {
			desire("web", 3)
			b.clock.Advance(time.Second)
			inProgress = update("web", toDefinition("v2", false))
			u := toDefinition("v3", true)
			u.Instances = int32p(5)
			u.ModificationTag = &models.ModificationTag{Epoch: operationLRP(b).ModificationTag.Epoch, Index: 1}
			pending = update("web", u)
			Expect(pending.Status).To(Equal(models.Operation_PENDING))
			b.clock.Advance(time.Second)
			sink.take()
		})

		It("moves statuses on, appends history and takes leases, each compare-and-set, stamped with the apply time", func() {
			t := now()
			result, err := apply(
				convergence.OperationWrite{ID: inProgress.Id, ProcessGuid: "web", ExpectModificationIndex: 1,
					History: []string{"3 of 3 instances on v2"}},
				convergence.OperationWrite{ID: pending.Id, ProcessGuid: "web", ExpectModificationIndex: 1,
					Status: models.Operation_EVICTED, Reason: "its definition v3 was cleaned up"},
			)
			Expect(err).NotTo(HaveOccurred())
			Expect(result).To(Equal(&convergence.ConvergenceResult{Applied: 2}))
			b.clock.Advance(time.Second)
			result, err = apply(convergence.OperationWrite{ID: inProgress.Id, ProcessGuid: "web", ExpectModificationIndex: 2,
				Status: models.Operation_FINISHED, Reason: "every index runs v2", LeaseOwner: "board-2", LeaseExpiresAt: 99})
			Expect(err).NotTo(HaveOccurred())
			Expect(result).To(Equal(&convergence.ConvergenceResult{Applied: 1}))

			finished := operation(inProgress.Id)
			Expect(finished.Status).To(Equal(models.Operation_FINISHED))
			Expect(finished.Reason).To(Equal("every index runs v2"))
			Expect(finished.StartedAt).To(Equal(inProgress.StartedAt))
			Expect(finished.FinishedAt).To(Equal(now()))
			Expect(finished.LeaseOwner).To(Equal("board-2"))
			Expect(finished.LeaseExpiresAt).To(BeEquivalentTo(99))
			Expect(finished.History).To(HaveLen(2))
			Expect(finished.History[1]).To(EqualProto(&models.OperationEvent{At: t, Message: "3 of 3 instances on v2"}))

			evicted := operation(pending.Id)
			Expect(evicted.Status).To(Equal(models.Operation_EVICTED))
			Expect(evicted.Reason).To(Equal("its definition v3 was cleaned up"))
			Expect(evicted.FinishedAt).To(Equal(t))
			Expect(evicted.StartedAt).To(BeZero())
			Expect(snapshot().Operations).To(BeEmpty())

			events := sink.take()
			Expect(eventTypes(events)).To(Equal([]string{models.EventOperationChanged, models.EventOperationChanged,
				models.EventOperationChanged}))
			Expect(events[2].Payload).To(EqualProto(&models.OperationChangedEvent{Operation: finished}))
		})

		It("gives a lease up: no owner and no expiry, a history line and the event, compare-and-set", func() {
			result, err := apply(convergence.OperationWrite{ID: inProgress.Id, ProcessGuid: "web", ExpectModificationIndex: 1,
				LeaseOwner: "board-1", LeaseExpiresAt: now() + int64(15*time.Second)})
			Expect(err).NotTo(HaveOccurred())
			Expect(result.Applied).To(Equal(1))
			b.clock.Advance(time.Second)
			sink.take()

			writes := convergence.ReleaseLeases(snapshot("web").Operations, "board-1")
			Expect(writes).To(HaveLen(1), "the operation in progress, not the PENDING one")
			result, err = apply(writes...)
			Expect(err).NotTo(HaveOccurred())
			Expect(result).To(Equal(&convergence.ConvergenceResult{Applied: 1}))
			released := operation(inProgress.Id)
			Expect(released.Status).To(Equal(models.Operation_IN_PROGRESS))
			Expect(released.LeaseOwner).To(BeEmpty())
			Expect(released.LeaseExpiresAt).To(BeZero())
			Expect(released.History[len(released.History)-1]).To(EqualProto(&models.OperationEvent{At: now(),
				Message: "released by board board-1: it stopped"}))
			events := sink.take()
			Expect(eventTypes(events)).To(Equal([]string{models.EventOperationChanged}))
			Expect(events[0].Payload).To(EqualProto(&models.OperationChangedEvent{Operation: released}))
			row := snapshot("web").Operations[0]
			Expect(row.LeaseOwner).To(BeEmpty())
			Expect(row.ModificationIndex).To(BeEquivalentTo(3))

			// Made again from the version before, it is skipped.
			result, err = apply(writes...)
			Expect(err).NotTo(HaveOccurred())
			Expect(result).To(Equal(&convergence.ConvergenceResult{Skipped: 1}))
			Expect(operation(inProgress.Id)).To(EqualProto(released))
		})

		It("skips and counts a write made from a version that moved on", func() {
			result, err := apply(
				convergence.OperationWrite{ID: inProgress.Id, ProcessGuid: "web", ExpectModificationIndex: 1, History: []string{"first"}},
				convergence.OperationWrite{ID: pending.Id, ProcessGuid: "web", ExpectModificationIndex: 4, Status: models.Operation_EVICTED},
				convergence.OperationWrite{ID: "00000000000000000000beef", ProcessGuid: "web", ExpectModificationIndex: 1, History: []string{"gone"}},
			)
			Expect(err).NotTo(HaveOccurred())
			Expect(result).To(Equal(&convergence.ConvergenceResult{Applied: 1, Skipped: 2}))
			result, err = apply(convergence.OperationWrite{ID: inProgress.Id, ProcessGuid: "web", ExpectModificationIndex: 1,
				Status: models.Operation_ERROR})
			Expect(err).NotTo(HaveOccurred())
			Expect(result).To(Equal(&convergence.ConvergenceResult{Skipped: 1}))
			Expect(operation(inProgress.Id).Status).To(Equal(models.Operation_IN_PROGRESS))
			Expect(operation(pending.Id)).To(EqualProto(pending))
		})

		It("refuses a status change the transitions forbid, or a write naming another LRP, before writing anything", func() {
			before := operation(inProgress.Id)
			for _, bad := range []convergence.OperationWrite{
				{ID: pending.Id, ProcessGuid: "web", ExpectModificationIndex: 1, Status: models.Operation_FINISHED},
				{ID: inProgress.Id, ProcessGuid: "web", ExpectModificationIndex: 1, Status: models.Operation_PENDING},
				{ID: inProgress.Id, ProcessGuid: "web", ExpectModificationIndex: 1, Start: true},
				{ID: pending.Id, ProcessGuid: "api", ExpectModificationIndex: 1, History: []string{"x"}},
				{ID: "short", ProcessGuid: "web", ExpectModificationIndex: 1},
				{ID: pending.Id, ProcessGuid: "web", ExpectModificationIndex: 0},
				{ID: inProgress.Id, ProcessGuid: "web", ExpectModificationIndex: 1, ReleaseLease: true, LeaseOwner: "board-2", LeaseExpiresAt: 99},
				{ID: pending.Id, ProcessGuid: "web", ExpectModificationIndex: 1, ReleaseLease: true, Start: true},
			} {
				// Another operation's write, which comes first, is not made.
				other := inProgress.Id
				if bad.ID == inProgress.Id {
					other = pending.Id
				}
				_, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{
					Operations: []convergence.OperationWrite{
						{ID: other, ProcessGuid: "web", ExpectModificationIndex: 1, History: []string{"would be written"}},
						bad,
					},
				})
				Expect(err).To(HaveErrorType(models.Error_InvalidRequest), "%+v", bad)
				Expect(err.Error()).To(ContainSubstring("writes.operations[1]"))
			}
			// Two writes of one operation are judged in turn: the second
			// starts from where the first leaves it.
			_, err := apply(
				convergence.OperationWrite{ID: inProgress.Id, ProcessGuid: "web", ExpectModificationIndex: 1, Status: models.Operation_FINISHED},
				convergence.OperationWrite{ID: inProgress.Id, ProcessGuid: "web", ExpectModificationIndex: 2, Status: models.Operation_ERROR},
			)
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(operation(inProgress.Id)).To(EqualProto(before))
			Expect(operation(pending.Id)).To(EqualProto(pending))
			Expect(sink.take()).To(BeEmpty())
		})

		It("starts a PENDING operation: applies its update as the API would have, its tag ignored, IN_PROGRESS under the lease", func() {
			// The LRP moved on since the update was queued with its tag.
			update("web", &models.DesiredLRPUpdate{Annotation: stringp("meanwhile")})
			before := operationLRP(b)
			sink.take()
			t := now()
			expires := t + int64(15*time.Second)

			result, err := apply(
				convergence.OperationWrite{ID: inProgress.Id, ProcessGuid: "web", ExpectModificationIndex: 1,
					Status: models.Operation_FINISHED, Reason: "every index runs v2"},
				convergence.OperationWrite{ID: pending.Id, ProcessGuid: "web", ExpectModificationIndex: 1, Start: true,
					LeaseOwner: "board-2", LeaseExpiresAt: expires},
			)
			Expect(err).NotTo(HaveOccurred())
			Expect(result).To(Equal(&convergence.ConvergenceResult{Applied: 2}))

			after := operationLRP(b)
			Expect(after.ActiveDefinitionId).To(Equal("v3"))
			Expect(after.Instances).To(BeEquivalentTo(5))
			Expect(after.Annotation).To(Equal("meanwhile"))
			Expect(after.ModificationTag.Index).To(Equal(before.ModificationTag.Index + 1))
			Expect(b.instances("web")).To(HaveLen(5))
			st, err := b.store.RolloutStatus(b.ctx, "web")
			Expect(err).NotTo(HaveOccurred())
			Expect(st.State).To(Equal(models.RolloutStatus_PROGRESSING))
			Expect(st.Reason).To(Equal("rolling from v2 to v3"))
			Expect(st.OperationId).To(Equal(pending.Id))

			started := operation(pending.Id)
			Expect(started.Status).To(Equal(models.Operation_IN_PROGRESS))
			Expect(started.StartedAt).To(Equal(t))
			Expect(started.FinishedAt).To(BeZero())
			Expect(started.LeaseOwner).To(Equal("board-2"))
			Expect(started.LeaseExpiresAt).To(Equal(expires))
			Expect(started.History[len(started.History)-1]).To(EqualProto(&models.OperationEvent{At: t,
				Message: "started: definition v3 activated: rolling from v2 to v3; instances 3 → 5"}))
			Expect(snapshot().Operations).To(Equal([]convergence.OperationRow{{ID: pending.Id, ProcessGuid: "web", Sequence: 3,
				Kind: models.Operation_UPDATE_DEFINITION, Status: models.Operation_IN_PROGRESS, DefinitionID: "v3",
				DefinitionStored: true, MemoryMB: 256, DiskMB: 1024, LeaseOwner: "board-2", LeaseExpiresAt: expires,
				CreatedAt: pending.CreatedAt, ModificationIndex: 2}}))

			events := sink.take()
			Expect(eventTypes(events)).To(Equal([]string{models.EventOperationChanged,
				models.EventDesiredLRPChanged, models.EventActualLRPCreated, models.EventActualLRPCreated,
				models.EventRolloutChanged, models.EventOperationChanged}))
			Expect(events[5].Payload).To(EqualProto(&models.OperationChangedEvent{Operation: started}))
			Expect(events[4].Payload).To(EqualProto(&models.RolloutChangedEvent{Status: st}))
		})

		It("finishes a started operation whose definition is already active", func() {
			// Say an auto-revert made v3 active meanwhile.
			b.exec("UPDATE desired_lrps SET active_definition_id = 'v3'")
			_, err := apply(
				convergence.OperationWrite{ID: inProgress.Id, ProcessGuid: "web", ExpectModificationIndex: 1, Status: models.Operation_ERROR},
				convergence.OperationWrite{ID: pending.Id, ProcessGuid: "web", ExpectModificationIndex: 1, Start: true},
			)
			Expect(err).NotTo(HaveOccurred())
			done := operation(pending.Id)
			t := now()
			Expect(done.Status).To(Equal(models.Operation_FINISHED))
			Expect(done.Reason).To(Equal("its definition is already active"))
			Expect(done.StartedAt).To(Equal(t))
			Expect(done.FinishedAt).To(Equal(t))
			Expect(operationLRP(b).Instances).To(BeEquivalentTo(5))
		})

		It("skips a Start while another operation of the LRP is in progress, or once the LRP is gone", func() {
			before := operationLRP(b)
			result, err := apply(convergence.OperationWrite{ID: pending.Id, ProcessGuid: "web", ExpectModificationIndex: 1, Start: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(result).To(Equal(&convergence.ConvergenceResult{Skipped: 1}))
			Expect(operation(pending.Id)).To(EqualProto(pending))
			Expect(operationLRP(b)).To(EqualProto(before))
			Expect(sink.take()).To(BeEmpty())

			// Remove evicts it, so a Start made before the remove is stale.
			Expect(b.store.RemoveDesiredLRP(b.ctx, "web")).To(Succeed())
			result, err = apply(convergence.OperationWrite{ID: pending.Id, ProcessGuid: "web", ExpectModificationIndex: 1, Start: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(result).To(Equal(&convergence.ConvergenceResult{Skipped: 1}))
			Expect(operation(pending.Id).Status).To(Equal(models.Operation_EVICTED))
		})
	})
})

// operationLRP reads web as stored.
func operationLRP(b *board) *models.DesiredLRP {
	GinkgoHelper()
	lrp, err := b.store.DesiredLRPByProcessGuid(context.Background(), "web")
	Expect(err).NotTo(HaveOccurred())
	return lrp
}
