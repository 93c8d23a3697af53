package sqldb_test

import (
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("RolloutDB", func(b *board) {
	var sink *recordingSink
	var t0 int64

	BeforeEach(func() {
		sink = recordEvents(b)
		t0 = b.clock.Now().UnixNano()
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 3))
		Expect(err).NotTo(HaveOccurred())
		b.clock.Advance(time.Second)
		sink.take()
	})

	get := func() *models.DesiredLRP {
		GinkgoHelper()
		lrp, err := b.store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		return lrp
	}
	status := func() *models.RolloutStatus {
		GinkgoHelper()
		st, err := b.store.RolloutStatus(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		return st
	}
	// record is the LRP's rollout record as convergence would read it,
	// settled or not.
	record := func() (convergence.RolloutRow, bool) {
		GinkgoHelper()
		var r convergence.RolloutRow
		var state string
		var settled bool
		err := b.conn.QueryRow(`SELECT state, reason, definition_id, failed_definition_id, started_at, progress_at,
 finished_at, updated_instances, in_flight, settled, modification_index, operation_id FROM rollouts WHERE process_guid = 'web'`).
			Scan(&state, &r.Reason, &r.DefinitionID, &r.FailedDefinitionID, &r.StartedAt, &r.ProgressAt, &r.FinishedAt,
				&r.UpdatedInstances, &r.InFlight, &settled, &r.ModificationIndex, &r.OperationID)
		Expect(err).NotTo(HaveOccurred())
		r.ProcessGuid = "web"
		r.State = models.RolloutStatus_State(models.RolloutStatus_State_value[state])
		return r, settled
	}
	update := func(id string) *models.DesiredLRP {
		GinkgoHelper()
		lrp, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
			Definition: newDefinition("", "/bin/web-"+id), UpdateIdentifier: id,
		})
		Expect(err).NotTo(HaveOccurred())
		return lrp
	}
	// completeRollout settles the record and makes the active definition
	// healthy, as convergence does when a rollout completes (it then
	// became healthy, for good).
	completeRollout := func() {
		GinkgoHelper()
		b.exec("UPDATE desired_lrps SET healthy_definition_id = active_definition_id WHERE process_guid = 'web'")
		b.exec(`UPDATE run_infos SET became_healthy = ? WHERE process_guid = 'web'
 AND definition_id = (SELECT active_definition_id FROM desired_lrps WHERE process_guid = 'web')`, true)
		b.exec("UPDATE rollouts SET state = 'COMPLETE', settled = ?, finished_at = 1 WHERE process_guid = 'web'", true)
	}
	// expectRefused checks that a refused call wrote and announced nothing.
	expectRefused := func(errType models.Error_Type, call func() error) error {
		GinkgoHelper()
		before, instances := get(), b.instances("web")
		var rolloutsBefore []string
		rollouts := func() []string {
			var out []string
			rows, err := b.conn.Query("SELECT process_guid, state, modification_index FROM rollouts ORDER BY process_guid")
			Expect(err).NotTo(HaveOccurred())
			defer rows.Close()
			for rows.Next() {
				var guid, state string
				var index int64
				Expect(rows.Scan(&guid, &state, &index)).To(Succeed())
				out = append(out, fmt.Sprint(guid, state, index))
			}
			return out
		}
		rolloutsBefore = rollouts()
		sink.take()
		err := call()
		Expect(err).To(HaveErrorType(errType))
		Expect(get()).To(EqualProto(before))
		Expect(b.instances("web")).To(HaveLen(len(instances)))
		Expect(rollouts()).To(Equal(rolloutsBefore))
		Expect(sink.take()).To(BeEmpty())
		return err
	}

	Describe("RolloutStatus", func() {
		It("is NONE for an LRP that never changed definition, with its instances counted live", func() {
			b.exec("UPDATE actual_lrps SET state = 'RUNNING', routable = ? WHERE instance_index = 1", true)
			Expect(status()).To(EqualProto(&models.RolloutStatus{
				ProcessGuid: "web", State: models.RolloutStatus_NONE, ActiveDefinitionId: "v1", HealthyDefinitionId: "v1", Instances: 3,
				Definitions: []*models.DefinitionInstances{{DefinitionId: "v1", Instances: 3, Running: 1}},
			}))
		})

		It("reports a rollout under way: the record, the deadline, every definition's instances, newest first, and its operation", func() {
			update("v2")
			operationID := newestOperation(b, "web").Id
			now := b.clock.Now().UnixNano()
			b.putActual(&models.ActualLRP{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_RETIRING, Domain: "apps",
				InstanceGuid: "ig", CellId: "cell-a", DefinitionId: "v1", State: models.ActualLRP_RUNNING, Routable: true,
				ModificationTag: &models.ModificationTag{Epoch: "e"}})
			b.exec("UPDATE actual_lrps SET definition_id = 'v2', state = 'RUNNING', routable = ? WHERE presence = 'ORDINARY' AND instance_index = 0", true)
			b.exec("UPDATE rollouts SET updated_instances = 1, in_flight = 1, progress_at = ?", now+5)
			strategy := &models.UpdateStrategy{ProgressDeadlineMs: 30_000}
			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{UpdateStrategy: strategy})
			Expect(err).NotTo(HaveOccurred())

			Expect(status()).To(EqualProto(&models.RolloutStatus{
				ProcessGuid: "web", State: models.RolloutStatus_PROGRESSING, Reason: "rolling from v1 to v2",
				ActiveDefinitionId: "v2", HealthyDefinitionId: "v1", Instances: 3, UpdatedInstances: 1, InFlight: 1,
				Definitions: []*models.DefinitionInstances{
					{DefinitionId: "v2", Instances: 1, Running: 1},
					{DefinitionId: "v1", Instances: 3, Running: 1},
				},
				StartedAt: now, ProgressAt: now + 5, DeadlineAt: now + 5 + int64(30*time.Second),
				OperationId: operationID,
			}))
		})

		It("keeps the governor's admission and queue, shows a queued rollout's place and no deadline, and a superseding rollout keeps its slot", func() {
			update("v2")
			started := b.clock.Now().UnixNano()
			write := func(change func(*convergence.RolloutRow)) {
				GinkgoHelper()
				snapshot, err := b.store.ConvergenceSnapshot(b.ctx, []string{"web"})
				Expect(err).NotTo(HaveOccurred())
				Expect(snapshot.Rollouts).To(HaveLen(1))
				rec := snapshot.Rollouts[0]
				change(&rec)
				_, err = b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{{
					ProcessGuid: "web", ExpectModificationIndex: rec.ModificationIndex, ExpectActiveDefinitionID: "v2", Record: rec,
				}}})
				Expect(err).NotTo(HaveOccurred())
				snapshot, err = b.store.ConvergenceSnapshot(b.ctx, []string{"web"})
				Expect(err).NotTo(HaveOccurred())
				rec.ModificationIndex++
				Expect(snapshot.Rollouts[0]).To(Equal(rec), "read back as written")
			}

			By("queued at position 3 of 7")
			write(func(r *convergence.RolloutRow) {
				r.QueuePosition, r.QueueReason = 3, "queued: position 3 of 7 (max_rollouts_in_flight 10)"
			})
			st := status()
			Expect(st.QueuePosition).To(BeEquivalentTo(3))
			Expect(st.AdmittedAt).To(BeZero())
			Expect(st.Reason).To(Equal("queued: position 3 of 7 (max_rollouts_in_flight 10); rolling from v1 to v2"))
			Expect(st.DeadlineAt).To(BeZero(), "a queued rollout's deadline does not run")

			By("admitted a minute later: the deadline counts from the admission")
			b.clock.Advance(time.Minute)
			admitted := b.clock.Now().UnixNano()
			write(func(r *convergence.RolloutRow) {
				r.AdmittedAt, r.QueuePosition, r.QueueReason = admitted, 0, ""
			})
			st = status()
			Expect(st.QueuePosition).To(BeZero())
			Expect(st.AdmittedAt).To(Equal(admitted))
			Expect(st.Reason).To(Equal("rolling from v1 to v2"))
			Expect(st.StartedAt).To(Equal(started))
			Expect(st.DeadlineAt).To(Equal(admitted + int64(10*time.Minute)))

			By("a new definition mid-rollout keeps the slot; a rollout after a completed one waits its turn")
			update("v3")
			Expect(status().AdmittedAt).To(Equal(admitted))
			completeRollout()
			update("v4")
			Expect(status().AdmittedAt).To(BeZero())
		})

		It("stores the planner's blocked_by with the record, shows it in the status, its event and the operation that started the rollout, and a new rollout starts without one", func() {
			update("v2")
			operationID := newestOperation(b, "web").Id
			snapshot, err := b.store.ConvergenceSnapshot(b.ctx, []string{"web"})
			Expect(err).NotTo(HaveOccurred())
			rec := snapshot.Rollouts[0]
			Expect(rec.BlockedBy).To(BeNil())
			blocked := &models.BlockedBy{Reason: models.BlockedNoCapacity, Since: 7,
				Detail: "index 0 fits no cell: zone z1 is short of memory (256 MB free at most, 512 MB needed)"}
			rec.BlockedBy = blocked
			sink.take()
			_, err = b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{{
				ProcessGuid: "web", ExpectModificationIndex: rec.ModificationIndex, ExpectActiveDefinitionID: "v2", Record: rec,
			}}})
			Expect(err).NotTo(HaveOccurred())

			snapshot, err = b.store.ConvergenceSnapshot(b.ctx, []string{"web"})
			Expect(err).NotTo(HaveOccurred())
			rec.ModificationIndex++
			Expect(snapshot.Rollouts[0].Equal(rec)).To(BeTrue(), "read back as written")
			Expect(status().BlockedBy).To(EqualProto(blocked))
			events := sink.take()
			Expect(eventTypes(events)).To(ContainElement(models.EventRolloutChanged))
			for _, e := range events {
				if e.Type == models.EventRolloutChanged {
					Expect(e.Payload.(*models.RolloutChangedEvent).Status.BlockedBy).To(EqualProto(blocked))
				}
			}
			op, err := b.store.Operation(b.ctx, operationID)
			Expect(err).NotTo(HaveOccurred())
			Expect(op.Status).To(Equal(models.Operation_IN_PROGRESS))
			Expect(op.BlockedBy).To(EqualProto(blocked))
			ops, _, err := b.store.Operations(b.ctx, db.OperationFilter{ProcessGuid: "web"})
			Expect(err).NotTo(HaveOccurred())
			Expect(ops[0].Id).To(Equal(operationID))
			Expect(ops[0].BlockedBy).To(EqualProto(blocked))

			By("a new definition starts a rollout that nothing blocks yet; the superseded operation ended and carries none")
			update("v3")
			Expect(status().BlockedBy).To(BeNil())
			op, err = b.store.Operation(b.ctx, operationID)
			Expect(err).NotTo(HaveOccurred())
			Expect(op.BlockedBy).To(BeNil())
		})

		It("has no deadline once the rollout completed", func() {
			update("v2")
			completeRollout()
			st := status()
			Expect(st.State).To(Equal(models.RolloutStatus_COMPLETE))
			Expect(st.HealthyDefinitionId).To(Equal("v2"))
			Expect(st.FinishedAt).To(BeEquivalentTo(1))
			Expect(st.DeadlineAt).To(BeZero())
		})

		It("is ResourceNotFound for an unknown LRP, and InvalidRequest without a guid", func() {
			_, err := b.store.RolloutStatus(b.ctx, "nope")
			Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
			_, err = b.store.RolloutStatus(b.ctx, "")
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(err.Error()).To(ContainSubstring("process_guid"))
		})
	})

	Describe("an update", func() {
		It("with a new definition starts a rollout to it and announces it", func() {
			updated := update("v2")
			now := b.clock.Now().UnixNano()
			rec, settled := record()
			Expect(settled).To(BeFalse())
			op := newestOperation(b, "web")
			Expect(op.Kind).To(Equal(models.Operation_UPDATE_DEFINITION))
			Expect(rec).To(Equal(convergence.RolloutRow{ProcessGuid: "web", State: models.RolloutStatus_PROGRESSING,
				Reason: "rolling from v1 to v2", DefinitionID: "v2", StartedAt: now, ProgressAt: now, ModificationIndex: 1,
				OperationID: op.Id}))
			events := sink.take()
			Expect(eventTypes(events)).To(Equal([]string{models.EventDesiredLRPChanged, models.EventRolloutChanged,
				models.EventOperationChanged}))
			Expect(events[1].Payload.(*models.RolloutChangedEvent).Status).To(EqualProto(status()))
			Expect(updated.ActiveDefinitionId).To(Equal("v2"))
		})

		It("with a third definition restarts the rollout over the record, which moves on", func() {
			update("v2")
			b.exec("UPDATE rollouts SET state = 'FAILED', reason = 'stuck', updated_instances = 2, finished_at = 9, failed_definition_id = 'x'")
			b.clock.Advance(time.Second)
			update("v3")
			now := b.clock.Now().UnixNano()
			rec, settled := record()
			Expect(settled).To(BeFalse())
			Expect(rec).To(Equal(convergence.RolloutRow{ProcessGuid: "web", State: models.RolloutStatus_PROGRESSING,
				Reason: "rolling from v2 to v3", DefinitionID: "v3", StartedAt: now, ProgressAt: now, ModificationIndex: 2,
				OperationID: newestOperation(b, "web").Id}))
		})

		It("re-sending the active definition writes no record and announces no rollout", func() {
			update("v2")
			completeRollout()
			before, _ := record()
			sink.take()
			update("v2")
			after, settled := record()
			Expect(after).To(Equal(before))
			Expect(settled).To(BeTrue())
			Expect(eventTypes(sink.take())).To(Equal([]string{models.EventDesiredLRPChanged, models.EventOperationChanged}))
			Expect(newestOperation(b, "web").Kind).To(Equal(models.Operation_UPDATE))
		})

		It("without a definition writes no record", func() {
			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Instances: int32p(4)})
			Expect(err).NotTo(HaveOccurred())
			Expect(b.count("SELECT COUNT(*) FROM rollouts")).To(BeZero())
			Expect(eventTypes(sink.take())).NotTo(ContainElement(models.EventRolloutChanged))
		})
	})

	Describe("Rollback", func() {
		It("goes back to the healthy definition while a rollout is under way", func() {
			update("v2")
			completeRollout()
			b.clock.Advance(time.Second)
			update("v3")
			before := get()
			sink.take()
			b.clock.Advance(time.Second)
			now := b.clock.Now().UnixNano()

			st, err := b.store.Rollback(b.ctx, "web", "", false)
			Expect(err).NotTo(HaveOccurred())
			after := get()
			Expect(after.ActiveDefinitionId).To(Equal("v2"))
			Expect(after.HealthyDefinitionId).To(Equal("v2"))
			Expect(after.ModificationTag.Index).To(Equal(before.ModificationTag.Index + 1))

			rec, settled := record()
			Expect(settled).To(BeFalse())
			rollback := newestOperation(b, "web")
			Expect(rollback.Kind).To(Equal(models.Operation_ROLLBACK))
			Expect(rec).To(Equal(convergence.RolloutRow{ProcessGuid: "web", State: models.RolloutStatus_PROGRESSING,
				Reason: "rolling back from v3 to v2", DefinitionID: "v2", StartedAt: now, ProgressAt: now, ModificationIndex: 3,
				OperationID: rollback.Id}))
			Expect(st).To(EqualProto(status()))
			Expect(st.OperationId).To(Equal(rollback.Id))
			Expect(st.DeadlineAt).To(Equal(now + int64(10*time.Minute)))

			// The rollback supersedes the update to v3, still in progress.
			events := sink.take()
			Expect(eventTypes(events)).To(Equal([]string{models.EventDesiredLRPChanged, models.EventRolloutChanged,
				models.EventOperationChanged, models.EventOperationChanged}))
			expectEvent(events[0], models.EventDesiredLRPChanged, "web", &models.DesiredLRPChangedEvent{
				Before: withoutDefinition(before), After: withoutDefinition(after)})
			expectEvent(events[1], models.EventRolloutChanged, "web", &models.RolloutChangedEvent{Status: st})
		})

		It("with fast, starts a fast rollout: the record, the status, the operation's parameters and the snapshot say so", func() {
			update("v2")
			b.clock.Advance(time.Second)
			sink.take()

			st, err := b.store.Rollback(b.ctx, "web", "", true)
			Expect(err).NotTo(HaveOccurred())
			Expect(st.ActiveDefinitionId).To(Equal(get().ActiveDefinitionId))
			Expect(st.Fast).To(BeTrue())
			Expect(st.Stage).To(BeNil(), "never staged")
			Expect(status().Fast).To(BeTrue())
			Expect(b.count("SELECT COUNT(*) FROM rollouts WHERE fast")).To(Equal(1))
			events := sink.take()
			Expect(eventTypes(events)).To(ContainElement(models.EventRolloutChanged))
			expectEvent(events[1], models.EventRolloutChanged, "web", &models.RolloutChangedEvent{Status: st})

			op := newestOperation(b, "web")
			Expect(op.Kind).To(Equal(models.Operation_ROLLBACK))
			var request models.RollbackRequest
			Expect(op.Parameters.UnmarshalTo(&request)).To(Succeed())
			Expect(request.Fast).To(BeTrue())
			Expect(op.History[0].Message).To(HaveSuffix(" (fast)"))

			snapshot, err := b.store.ConvergenceSnapshot(b.ctx, []string{"web"})
			Expect(err).NotTo(HaveOccurred())
			Expect(snapshot.Rollouts).To(HaveLen(1))
			Expect(snapshot.Rollouts[0].Fast).To(BeTrue())

			By("convergence writing the record keeps what it says of fast")
			rec := snapshot.Rollouts[0]
			rec.Fast = false
			rec.Reason = "written by convergence"
			_, err = b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{{
				ProcessGuid: "web", ExpectModificationIndex: rec.ModificationIndex, ExpectActiveDefinitionID: st.ActiveDefinitionId, Record: rec,
			}}})
			Expect(err).NotTo(HaveOccurred())
			Expect(status().Fast).To(BeFalse())
			Expect(status().Reason).To(Equal("written by convergence"))

			By("a rollback without fast is not fast, and neither is an update")
			_, err = b.store.Rollback(b.ctx, "web", "v2", false)
			Expect(err).NotTo(HaveOccurred())
			Expect(status().Fast).To(BeFalse())
			Expect(b.count("SELECT COUNT(*) FROM rollouts WHERE fast")).To(BeZero())
		})

		It("goes back to the newest kept definition that became healthy when the active one is healthy", func() {
			v1 := get().ActiveDefinitionId
			update("v2")
			completeRollout()
			b.clock.Advance(time.Second)
			update("v3")
			b.clock.Advance(time.Second)
			update("v4")
			b.clock.Advance(time.Second)
			// Back to v3, which never became healthy: allowed, with a warning.
			note := &db.OperationNote{}
			_, err := b.store.Rollback(db.WithOperationNote(b.ctx, note), "web", "v3", false)
			Expect(err).NotTo(HaveOccurred())
			Expect(note.Warning).To(HavePrefix("v3 never became healthy"))
			completeRollout()

			// v4 is newer but never became healthy; v1 ran too, but is older.
			note = &db.OperationNote{}
			st, err := b.store.Rollback(db.WithOperationNote(b.ctx, note), "web", "", false)
			Expect(err).NotTo(HaveOccurred())
			Expect(st.ActiveDefinitionId).To(Equal("v2"))
			Expect(st.Reason).To(Equal("rolling back from v3 to v2"))
			Expect(note.Warning).To(BeEmpty())

			defs, err := b.store.Definitions(b.ctx, "web")
			Expect(err).NotTo(HaveOccurred())
			var ran []string
			for _, d := range defs {
				if d.BecameHealthy {
					ran = append(ran, d.DefinitionId)
				}
			}
			Expect(ran).To(Equal([]string{"v3", "v2", v1}), "v4 never did")
		})

		It("goes back to the definition asked for, also a newer one", func() {
			update("v2")
			b.clock.Advance(time.Second)
			_, err := b.store.Rollback(b.ctx, "web", "v1", false)
			Expect(err).NotTo(HaveOccurred())
			st, err := b.store.Rollback(b.ctx, "web", "v2", false)
			Expect(err).NotTo(HaveOccurred())
			Expect(st.ActiveDefinitionId).To(Equal("v2"))
			Expect(st.State).To(Equal(models.RolloutStatus_PROGRESSING))
			Expect(st.Reason).To(Equal("rolling back from v1 to v2"))
			Expect(get().Definition.Action.Path).To(Equal("/bin/web-v2"))
		})

		It("refuses a definition that is not kept, naming it", func() {
			update("v2")
			err := expectRefused(models.Error_ResourceNotFound, func() error {
				_, err := b.store.Rollback(b.ctx, "web", "v9", false)
				return err
			})
			Expect(err.Error()).To(ContainSubstring(`definition_id "v9"`))
		})

		It("refuses the active definition", func() {
			update("v2")
			err := expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := b.store.Rollback(b.ctx, "web", "v2", false)
				return err
			})
			Expect(err.Error()).To(ContainSubstring(`"v2"`))
		})

		It("refuses when there is no other definition that ran to go back to", func() {
			err := expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := b.store.Rollback(b.ctx, "web", "", false)
				return err
			})
			Expect(err.Error()).To(ContainSubstring("became healthy"))
		})

		It("refuses an unknown LRP and bad input", func() {
			_, err := b.store.Rollback(b.ctx, "nope", "v1", false)
			Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
			_, err = b.store.Rollback(b.ctx, "", "v1", false)
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(err.Error()).To(ContainSubstring("process_guid"))
			_, err = b.store.Rollback(b.ctx, "web", string(make([]byte, 65)), false)
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(err.Error()).To(ContainSubstring("definition_id"))
		})
	})

	Describe("AbortRollout", func() {
		It("goes back to the healthy definition", func() {
			update("v2")
			completeRollout()
			update("v3")
			sink.take()

			st, err := b.store.AbortRollout(b.ctx, "web", false)
			Expect(err).NotTo(HaveOccurred())
			Expect(get().ActiveDefinitionId).To(Equal("v2"))
			Expect(st.State).To(Equal(models.RolloutStatus_PROGRESSING))
			Expect(st.Reason).To(Equal("rolling back from v3 to v2"))
			Expect(st).To(EqualProto(status()))
			abort := newestOperation(b, "web")
			Expect(abort.Kind).To(Equal(models.Operation_ABORT))
			Expect(st.OperationId).To(Equal(abort.Id))
			Expect(eventTypes(sink.take())).To(Equal([]string{models.EventDesiredLRPChanged, models.EventRolloutChanged,
				models.EventOperationChanged, models.EventOperationChanged}))
		})

		It("with fast, starts a fast rollout and says so in the operation's parameters", func() {
			update("v2")
			st, err := b.store.AbortRollout(b.ctx, "web", true)
			Expect(err).NotTo(HaveOccurred())
			Expect(st.Fast).To(BeTrue())
			Expect(st).To(EqualProto(status()))
			abort := newestOperation(b, "web")
			Expect(abort.Kind).To(Equal(models.Operation_ABORT))
			var request models.AbortRolloutRequest
			Expect(abort.Parameters.UnmarshalTo(&request)).To(Succeed())
			Expect(request.Fast).To(BeTrue())
		})

		It("refuses when the healthy definition is active", func() {
			update("v2")
			completeRollout()
			err := expectRefused(models.Error_InvalidStateTransition, func() error {
				_, err := b.store.AbortRollout(b.ctx, "web", false)
				return err
			})
			Expect(err.Error()).To(ContainSubstring("healthy_definition_id"))
		})

		It("takes the first rollout back to the definition the LRP was desired with", func() {
			active := get().ActiveDefinitionId
			Expect(get().HealthyDefinitionId).To(Equal(active))
			update("v2")
			sink.take()

			st, err := b.store.AbortRollout(b.ctx, "web", false)
			Expect(err).NotTo(HaveOccurred())
			Expect(get().ActiveDefinitionId).To(Equal(active))
			Expect(st.Reason).To(Equal("rolling back from v2 to " + active))
		})

		It("refuses an unknown LRP", func() {
			_, err := b.store.AbortRollout(b.ctx, "nope", false)
			Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
			_, err = b.store.AbortRollout(b.ctx, "", false)
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
		})
	})

	Describe("a remove", func() {
		snapshotRollouts := func() []convergence.RolloutRow {
			GinkgoHelper()
			snap, err := b.store.ConvergenceSnapshot(b.ctx, nil)
			Expect(err).NotTo(HaveOccurred())
			return snap.Rollouts
		}

		It("marks a settled record unsettled, so convergence cleans up, and announces it", func() {
			update("v2")
			completeRollout()
			Expect(snapshotRollouts()).To(BeEmpty())
			before, _ := record()
			sink.take()

			Expect(b.store.RemoveDesiredLRP(b.ctx, "web")).To(Succeed())
			after, settled := record()
			Expect(settled).To(BeFalse())
			want := before
			want.ModificationIndex++
			Expect(after).To(Equal(want))
			Expect(snapshotRollouts()).To(Equal([]convergence.RolloutRow{want}))

			events := sink.take()
			types := eventTypes(events)
			Expect(types).To(ContainElement(models.EventRolloutChanged))
			st := events[slices.Index(types, models.EventRolloutChanged)].Payload.(*models.RolloutChangedEvent).Status
			Expect(st.State).To(Equal(models.RolloutStatus_COMPLETE))
			Expect(st.ActiveDefinitionId).To(BeEmpty())
		})

		It("inserts an unsettled record, state NONE, for an LRP that never rolled", func() {
			Expect(b.store.RemoveDesiredLRP(b.ctx, "web")).To(Succeed())
			Expect(snapshotRollouts()).To(Equal([]convergence.RolloutRow{
				{ProcessGuid: "web", State: models.RolloutStatus_NONE, ModificationIndex: 1},
			}))
			snap, err := b.store.ConvergenceSnapshot(b.ctx, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(snap.Definitions).To(Equal([]convergence.DefinitionRow{{ProcessGuid: "web", DefinitionID: "v1", CreatedAt: t0,
				MemoryMB: 256, DiskMB: 1024}}))
		})

		It("lets the guid be desired again, its record kept for the new LRP", func() {
			Expect(b.store.RemoveDesiredLRP(b.ctx, "web")).To(Succeed())
			_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
			Expect(err).NotTo(HaveOccurred())
			Expect(status().State).To(Equal(models.RolloutStatus_NONE))
		})
	})
})
