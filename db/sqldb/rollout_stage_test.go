package sqldb_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// Staged rollouts as the store keeps them (rollout_stage.go): the stage
// an update starts, the three calls that move it, and the convergence
// reads and writes that carry it. The LRP has 16 instances, as in the
// worked example of models/rollout_stage.go.
var _ = forEachDialect("staged rollouts", func(b *board) {
	var sink *recordingSink
	var t0 int64
	// fivePerSixHours is the worked example's rate: 5% every 6 hours.
	fivePerSixHours := func() *models.SafeRate {
		return &models.SafeRate{Percent: 5, PerMs: (6 * time.Hour).Milliseconds()}
	}

	BeforeEach(func() {
		sink = recordEvents(b)
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 16))
		Expect(err).NotTo(HaveOccurred())
		b.clock.Advance(time.Second)
		t0 = b.clock.Now().UnixNano()
		sink.take()
	})

	now := func() int64 { return b.clock.Now().UnixNano() }
	status := func() *models.RolloutStatus {
		GinkgoHelper()
		st, err := b.store.RolloutStatus(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		return st
	}
	// update changes web's definition to id, staged when staged is set.
	update := func(id string, staged *models.StagedRollout) {
		GinkgoHelper()
		_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
			Definition: newDefinition("", "/bin/web-"+id), UpdateIdentifier: id, Staged: staged,
		})
		Expect(err).NotTo(HaveOccurred())
	}
	// storedStage is the stage column as stored: nil for NULL.
	storedStage := func() *models.RolloutStage {
		GinkgoHelper()
		var blob []byte
		Expect(b.conn.QueryRow("SELECT stage FROM rollouts WHERE process_guid = 'web'").Scan(&blob)).To(Succeed())
		if blob == nil {
			return nil
		}
		stage := &models.RolloutStage{}
		Expect(proto.Unmarshal(blob, stage)).To(Succeed())
		return stage
	}
	// recordRow is the record's plain columns, to show they did not change.
	type recordRow struct {
		state                  string
		progressAt, modIndex   int64
		settled                bool
		definitionID, reason   string
		updatedInstances, flow int64
	}
	record := func() recordRow {
		GinkgoHelper()
		var r recordRow
		Expect(b.conn.QueryRow(`SELECT state, progress_at, modification_index, settled, definition_id, reason,
 updated_instances, in_flight FROM rollouts WHERE process_guid = 'web'`).
			Scan(&r.state, &r.progressAt, &r.modIndex, &r.settled, &r.definitionID, &r.reason, &r.updatedInstances, &r.flow)).
			To(Succeed())
		return r
	}
	operations := func() int { return b.count("SELECT COUNT(*) FROM operations WHERE process_guid = 'web'") }
	// expectNothingWritten runs call, which must fail with errType, and
	// checks that it wrote and announced nothing: the record and its stage,
	// the LRP's operations.
	expectNothingWritten := func(errType models.Error_Type, call func() error) error {
		GinkgoHelper()
		hasRecord := b.count("SELECT COUNT(*) FROM rollouts WHERE process_guid = 'web'") == 1
		var before recordRow
		var stageBefore *models.RolloutStage
		if hasRecord {
			before, stageBefore = record(), storedStage()
		}
		opsBefore := operations()
		sink.take()
		err := call()
		Expect(err).To(HaveErrorType(errType))
		if hasRecord {
			Expect(record()).To(Equal(before))
			Expect(storedStage()).To(EqualProto(stageBefore))
		} else {
			Expect(b.count("SELECT COUNT(*) FROM rollouts")).To(BeZero())
		}
		Expect(operations()).To(Equal(opsBefore), "no operation recorded")
		Expect(sink.take()).To(BeEmpty())
		return err
	}
	// hold sets the record HOLDING the way convergence does: a RolloutWrite
	// over the record the snapshot reads.
	hold := func() {
		GinkgoHelper()
		snap, err := b.store.ConvergenceSnapshot(b.ctx, []string{"web"})
		Expect(err).NotTo(HaveOccurred())
		Expect(snap.Rollouts).To(HaveLen(1))
		row := snap.Rollouts[0]
		row.State = models.RolloutStatus_HOLDING
		row.Reason = "holding"
		row.BlockedBy = &models.BlockedBy{Reason: models.BlockedAwaitingPromote, Detail: "holding", Since: now()}
		result, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{{
			ProcessGuid: "web", ExpectModificationIndex: row.ModificationIndex, ExpectActiveDefinitionID: "v2", Record: row,
		}}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Applied).To(Equal(1))
		Expect(status().State).To(Equal(models.RolloutStatus_HOLDING))
	}
	withNote := func(requestedBy string) (*db.OperationNote, func() *models.Operation) {
		note := &db.OperationNote{RequestedBy: requestedBy}
		return note, func() *models.Operation { return note.Operation }
	}

	Describe("an update with staged", func() {
		It("stores the phase: prior 0, the target and rate, the default seed, started and watched from now", func() {
			update("v2", &models.StagedRollout{TargetPercent: 6.25, SafeRate: fivePerSixHours()})
			Expect(storedStage()).To(EqualProto(&models.RolloutStage{
				PriorPercent: 0, TargetPercent: 6.25, SafeRate: fivePerSixHours(), Seed: "web/v2",
				PhaseStartedAt: t0, WatchingSince: t0,
			}))
			events := sink.take()
			Expect(eventTypes(events)).To(ContainElement(models.EventRolloutChanged))
			Expect(newestOperation(b, "web").History[0].Message).To(Equal(
				"definition v2 activated: rolling from v1 to v2; staged: to 6.25% at 5% per 6h0m0s"))
		})

		It("shows in the status the share, the instances it allows and when it reaches its target, at the board's clock", func() {
			update("v2", &models.StagedRollout{TargetPercent: 6.25, SafeRate: fivePerSixHours()})
			st := status()
			Expect(st.State).To(Equal(models.RolloutStatus_PROGRESSING))
			Expect(st.Stage).To(EqualProto(&models.RolloutStage{
				TargetPercent: 6.25, SafeRate: fivePerSixHours(), Seed: "web/v2", PhaseStartedAt: t0, WatchingSince: t0,
				SharePercent: 0, AllowedInstances: 0, ActiveInstances: 0,
				// 6.25 / 5 × 6h = 7h30m.
				TargetAt: t0 + int64(7*time.Hour+30*time.Minute),
			}))

			// 3h in: 2.5%, ceil(16 × 2.5 / 100) = 1. One ORDINARY instance
			// runs v2; a RETIRING copy on v2 is not one more.
			b.clock.Advance(3 * time.Hour)
			b.exec("UPDATE actual_lrps SET definition_id = 'v2' WHERE process_guid = 'web' AND instance_index = 4")
			b.putActual(&models.ActualLRP{ProcessGuid: "web", Index: 5, Presence: models.ActualLRP_RETIRING, Domain: "apps",
				InstanceGuid: "ig-r", CellId: "cell-a", DefinitionId: "v2", State: models.ActualLRP_RUNNING,
				ModificationTag: &models.ModificationTag{Epoch: "e"}})
			st = status()
			Expect(st.Stage.SharePercent).To(BeNumerically("~", 2.5, 1e-9))
			Expect(st.Stage.AllowedInstances).To(BeEquivalentTo(1))
			Expect(st.Stage.ActiveInstances).To(BeEquivalentTo(1))
			Expect(st.Stage.TargetAt).To(Equal(t0 + int64(7*time.Hour+30*time.Minute)))

			// Past the target: the share stands at 6.25% (16 × 6.25% = 1
			// exactly) and target_at is 0.
			b.clock.Advance(5 * time.Hour)
			st = status()
			Expect(st.Stage.SharePercent).To(Equal(6.25))
			Expect(st.Stage.AllowedInstances).To(BeEquivalentTo(1))
			Expect(st.Stage.TargetAt).To(BeZero())
			// Stored: the computed fields never are.
			Expect(storedStage().SharePercent).To(BeZero())
		})

		It("keeps the seed asked; without a rate the share is the target at once", func() {
			update("v2", &models.StagedRollout{TargetPercent: 25, Seed: "s3cr3t"})
			Expect(storedStage().Seed).To(Equal("s3cr3t"))
			st := status()
			Expect(st.Stage.SafeRate).To(BeNil())
			Expect(st.Stage.SharePercent).To(Equal(25.0))
			Expect(st.Stage.AllowedInstances).To(BeEquivalentTo(4))
			Expect(st.Stage.TargetAt).To(BeZero())
		})

		It("is refused, naming the field, when it cannot run; nothing is written", func() {
			for _, u := range []struct {
				update *models.DesiredLRPUpdate
				field  string
			}{
				{&models.DesiredLRPUpdate{Staged: &models.StagedRollout{TargetPercent: 10}}, "update.staged"},
				{&models.DesiredLRPUpdate{Definition: newDefinition("", "/bin/x"), UpdateIdentifier: "v2",
					Staged: &models.StagedRollout{TargetPercent: 0}}, "update.staged.target_percent"},
				{&models.DesiredLRPUpdate{Definition: newDefinition("", "/bin/x"), UpdateIdentifier: "v2",
					Staged: &models.StagedRollout{TargetPercent: 10, SafeRate: &models.SafeRate{Percent: 5}}}, "update.staged.safe_rate.per_ms"},
			} {
				err := expectNothingWritten(models.Error_InvalidRequest, func() error {
					_, err := b.store.UpdateDesiredLRP(b.ctx, "web", u.update)
					return err
				})
				Expect(err.Error()).To(ContainSubstring(u.field))
			}
		})
	})

	It("an update without staged stores no stage, and the status has none", func() {
		update("v2", nil)
		Expect(storedStage()).To(BeNil())
		Expect(status().Stage).To(BeNil())
	})

	It("a rollback or an abort starts a record without a stage", func() {
		update("v2", &models.StagedRollout{TargetPercent: 50})
		_, err := b.store.Rollback(b.ctx, "web", "v1", false)
		Expect(err).NotTo(HaveOccurred())
		Expect(storedStage()).To(BeNil())
		Expect(status().Stage).To(BeNil())

		update("v3", &models.StagedRollout{TargetPercent: 50})
		Expect(storedStage()).NotTo(BeNil())
		_, err = b.store.AbortRollout(b.ctx, "web", false)
		Expect(err).NotTo(HaveOccurred())
		Expect(storedStage()).To(BeNil())
		Expect(status().Stage).To(BeNil())
	})

	It("a queued staged update started by convergence carries its stage, started when it starts", func() {
		update("v2", nil)
		running := newestOperation(b, "web")
		note, queued := withNote("")
		_, err := b.store.UpdateDesiredLRP(db.WithOperationNote(b.ctx, note), "web", &models.DesiredLRPUpdate{
			Definition: newDefinition("", "/bin/web-v3"), UpdateIdentifier: "v3", Queue: true,
			Staged: &models.StagedRollout{TargetPercent: 12.5, SafeRate: fivePerSixHours()},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(queued().Status).To(Equal(models.Operation_PENDING))
		Expect(storedStage()).To(BeNil(), "the rollout to v2 is not staged")

		b.clock.Advance(time.Hour)
		started := now()
		result, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Operations: []convergence.OperationWrite{
			{ID: running.Id, ProcessGuid: "web", ExpectModificationIndex: 1, Status: models.Operation_FINISHED},
			{ID: queued().Id, ProcessGuid: "web", ExpectModificationIndex: 1, Start: true},
		}})
		Expect(err).NotTo(HaveOccurred())
		Expect(result.Applied).To(Equal(2))
		Expect(storedStage()).To(EqualProto(&models.RolloutStage{
			TargetPercent: 12.5, SafeRate: fivePerSixHours(), Seed: "web/v3", PhaseStartedAt: started, WatchingSince: started,
		}))
		st := status()
		Expect(st.ActiveDefinitionId).To(Equal("v3"))
		Expect(st.OperationId).To(Equal(queued().Id))
	})

	Describe("PromoteRollout", func() {
		It("from HOLDING starts the next phase from the share that stands, PROGRESSING, under a PROMOTE operation", func() {
			update("v2", &models.StagedRollout{TargetPercent: 6.25, SafeRate: fivePerSixHours()})
			b.clock.Advance(8 * time.Hour)
			hold()
			before := record()
			sink.take()
			b.clock.Advance(2 * time.Hour)
			t := now()

			note, promote := withNote("alice")
			st, err := b.store.PromoteRollout(db.WithOperationNote(b.ctx, note), "web", 12.5, fivePerSixHours())
			Expect(err).NotTo(HaveOccurred())

			stored := &models.RolloutStage{PriorPercent: 6.25, TargetPercent: 12.5, SafeRate: fivePerSixHours(),
				Seed: "web/v2", PhaseStartedAt: t, WatchingSince: t}
			Expect(storedStage()).To(EqualProto(stored))
			after := record()
			Expect(after.state).To(Equal("PROGRESSING"))
			Expect(after.progressAt).To(Equal(t))
			Expect(after.modIndex).To(Equal(before.modIndex + 1))
			Expect(after.settled).To(BeFalse())

			Expect(st).To(EqualProto(status()))
			Expect(st.State).To(Equal(models.RolloutStatus_PROGRESSING))
			Expect(st.BlockedBy).To(BeNil(), "awaiting_promote was the held phase's; the next pass says what holds this one")
			Expect(st.DeadlineAt).To(Equal(t + int64(10*time.Minute)))
			Expect(st.Stage.SharePercent).To(Equal(6.25))
			Expect(st.Stage.AllowedInstances).To(BeEquivalentTo(1))
			// 6.25 more points at 5% per 6h: 7h30m.
			Expect(st.Stage.TargetAt).To(Equal(t + int64(7*time.Hour+30*time.Minute)))
			// Right after, the share passes 6.25%: the second instance.
			b.clock.Advance(time.Minute)
			Expect(status().Stage.AllowedInstances).To(BeEquivalentTo(2))

			op := promote()
			Expect(op).To(EqualProto(newestOperation(b, "web")))
			Expect(op.Kind).To(Equal(models.Operation_PROMOTE))
			Expect(op.Status).To(Equal(models.Operation_FINISHED))
			Expect(op.RequestedBy).To(Equal("alice"))
			Expect(op.StartedAt).To(Equal(t))
			Expect(op.FinishedAt).To(Equal(t))
			Expect(op.History).To(HaveLen(1))
			Expect(op.History[0].Message).To(Equal("promoted from 6.25% to 12.5% at 5% per 6h0m0s"))
			var request models.PromoteRolloutRequest
			Expect(op.Parameters.UnmarshalTo(&request)).To(Succeed())
			Expect(&request).To(EqualProto(&models.PromoteRolloutRequest{ProcessGuid: "web", ToPercent: 12.5, SafeRate: fivePerSixHours()}))

			events := sink.take()
			Expect(eventTypes(events)).To(Equal([]string{models.EventRolloutChanged, models.EventOperationChanged}))
			expectEvent(events[0], models.EventRolloutChanged, "web", &models.RolloutChangedEvent{Status: st})
		})

		It("while PROGRESSING starts from the share that stands mid-phase; without a rate the target is at once", func() {
			update("v2", &models.StagedRollout{TargetPercent: 25, SafeRate: fivePerSixHours()})
			b.clock.Advance(3 * time.Hour) // 2.5%
			st, err := b.store.PromoteRollout(b.ctx, "web", 50, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(storedStage().PriorPercent).To(BeNumerically("~", 2.5, 1e-9))
			Expect(storedStage().SafeRate).To(BeNil())
			Expect(st.Stage.SharePercent).To(Equal(50.0))
			Expect(st.Stage.AllowedInstances).To(BeEquivalentTo(8))
			Expect(newestOperation(b, "web").History[0].Message).To(Equal("promoted from 2.5% to 50% at once"))
		})

		It("below the share that stands is InvalidRequest naming to_percent; nothing is written", func() {
			update("v2", &models.StagedRollout{TargetPercent: 25, SafeRate: fivePerSixHours()})
			b.clock.Advance(15 * time.Hour) // 12.5%
			err := expectNothingWritten(models.Error_InvalidRequest, func() error {
				_, err := b.store.PromoteRollout(b.ctx, "web", 10, nil)
				return err
			})
			Expect(err.Error()).To(ContainSubstring("to_percent"))
			Expect(err.Error()).To(ContainSubstring("must not be below the share that stands, 12.5"))
		})

		It("refuses what is not a share or a rate, naming the field", func() {
			update("v2", &models.StagedRollout{TargetPercent: 25})
			err := expectNothingWritten(models.Error_InvalidRequest, func() error {
				_, err := b.store.PromoteRollout(b.ctx, "web", 101, nil)
				return err
			})
			Expect(err.Error()).To(ContainSubstring("to_percent"))
			err = expectNothingWritten(models.Error_InvalidRequest, func() error {
				_, err := b.store.PromoteRollout(b.ctx, "web", 50, &models.SafeRate{Percent: 5})
				return err
			})
			Expect(err.Error()).To(ContainSubstring("safe_rate.per_ms"))
		})

		It("of a paused phase starts the next one unpaused", func() {
			update("v2", &models.StagedRollout{TargetPercent: 25, SafeRate: fivePerSixHours()})
			b.clock.Advance(6 * time.Hour) // 5%
			_, err := b.store.PauseRollout(b.ctx, "web")
			Expect(err).NotTo(HaveOccurred())
			b.clock.Advance(6 * time.Hour) // still 5%: paused
			st, err := b.store.PromoteRollout(b.ctx, "web", 30, fivePerSixHours())
			Expect(err).NotTo(HaveOccurred())
			Expect(st.Stage.PriorPercent).To(BeNumerically("~", 5, 1e-9))
			Expect(st.Stage.Paused).To(BeFalse())
			Expect(st.Stage.PausedAt).To(BeZero())
			Expect(st.Stage.PausedNanos).To(BeZero())
			Expect(st.Stage.PauseReason).To(BeEmpty())
		})
	})

	Describe("PauseRollout and ResumeRollout", func() {
		It("freeze the phase's clock and start it again, the paused time left out of the share and the deadline", func() {
			update("v2", &models.StagedRollout{TargetPercent: 25, SafeRate: fivePerSixHours()})
			sink.take()
			b.clock.Advance(time.Hour)
			paused := now()
			note, pauseOp := withNote("alice")
			st, err := b.store.PauseRollout(db.WithOperationNote(b.ctx, note), "web")
			Expect(err).NotTo(HaveOccurred())
			Expect(st).To(EqualProto(status()))
			Expect(st.Stage.Paused).To(BeTrue())
			Expect(st.Stage.PausedAt).To(Equal(paused))
			Expect(st.Stage.PauseReason).To(Equal("paused by alice"))
			Expect(st.Stage.TargetAt).To(BeZero(), "no target time while paused")
			Expect(st.DeadlineAt).To(BeZero(), "the deadline does not run while paused")
			Expect(st.State).To(Equal(models.RolloutStatus_PROGRESSING))
			Expect(pauseOp().Kind).To(Equal(models.Operation_PAUSE))
			Expect(pauseOp().Status).To(Equal(models.Operation_FINISHED))
			Expect(pauseOp().History[0].Message).To(Equal("paused by alice"))
			Expect(eventTypes(sink.take())).To(Equal([]string{models.EventRolloutChanged, models.EventOperationChanged}))

			// Paused 2h: the share stands at 5/6%.
			b.clock.Advance(2 * time.Hour)
			Expect(status().Stage.SharePercent).To(BeNumerically("~", 5.0/6, 1e-9))

			resumed := now()
			note, resumeOp := withNote("bob")
			st, err = b.store.ResumeRollout(db.WithOperationNote(b.ctx, note), "web")
			Expect(err).NotTo(HaveOccurred())
			Expect(storedStage()).To(EqualProto(&models.RolloutStage{TargetPercent: 25, SafeRate: fivePerSixHours(),
				Seed: "web/v2", PhaseStartedAt: t0, PausedNanos: int64(2 * time.Hour), WatchingSince: resumed}))
			Expect(record().progressAt).To(Equal(t0+int64(2*time.Hour)), "progress_at shifted by the paused time")
			Expect(st).To(EqualProto(status()))
			Expect(st.DeadlineAt).To(Equal(t0 + int64(2*time.Hour) + int64(10*time.Minute)))
			// 25% is reached 30h of running after the start, plus 2h paused.
			Expect(st.Stage.TargetAt).To(Equal(t0 + int64(32*time.Hour)))
			Expect(resumeOp().Kind).To(Equal(models.Operation_RESUME))
			Expect(resumeOp().Status).To(Equal(models.Operation_FINISHED))
			Expect(resumeOp().History[0].Message).To(Equal("resumed after 2h0m0s"))
			Expect(eventTypes(sink.take())).To(Equal([]string{models.EventRolloutChanged, models.EventOperationChanged}))

			// An hour later: 1h ran before the pause, 1h after.
			b.clock.Advance(time.Hour)
			Expect(status().Stage.SharePercent).To(BeNumerically("~", 5.0*2/6, 1e-9))
		})

		It("pause says just \"paused\" when no one is named", func() {
			update("v2", &models.StagedRollout{TargetPercent: 25, SafeRate: fivePerSixHours()})
			st, err := b.store.PauseRollout(b.ctx, "web")
			Expect(err).NotTo(HaveOccurred())
			Expect(st.Stage.PauseReason).To(Equal("paused"))
		})

		It("pausing a paused phase, or resuming one that is not, is InvalidStateTransition; nothing is written", func() {
			update("v2", &models.StagedRollout{TargetPercent: 25, SafeRate: fivePerSixHours()})
			err := expectNothingWritten(models.Error_InvalidStateTransition, func() error {
				_, err := b.store.ResumeRollout(b.ctx, "web")
				return err
			})
			Expect(err.Error()).To(ContainSubstring("not paused"))
			_, err = b.store.PauseRollout(b.ctx, "web")
			Expect(err).NotTo(HaveOccurred())
			err = expectNothingWritten(models.Error_InvalidStateTransition, func() error {
				_, err := b.store.PauseRollout(b.ctx, "web")
				return err
			})
			Expect(err.Error()).To(ContainSubstring("paused already"))
		})
	})

	Describe("without a staged rollout under way", func() {
		calls := map[string]func() error{
			"promote": func() error { _, err := b.store.PromoteRollout(b.ctx, "web", 50, nil); return err },
			"pause":   func() error { _, err := b.store.PauseRollout(b.ctx, "web"); return err },
			"resume":  func() error { _, err := b.store.ResumeRollout(b.ctx, "web"); return err },
		}
		expectAllRefused := func() {
			GinkgoHelper()
			for name, call := range calls {
				By(name)
				err := expectNothingWritten(models.Error_InvalidStateTransition, call)
				Expect(err.Error()).To(ContainSubstring(`desired_lrp "web" has no staged rollout under way`))
			}
		}

		It("an LRP that never rolled refuses promote, pause and resume", func() {
			expectAllRefused()
		})

		It("a rollout that is not staged refuses them", func() {
			update("v2", nil)
			expectAllRefused()
		})

		It("a staged rollout that failed or completed refuses them", func() {
			update("v2", &models.StagedRollout{TargetPercent: 25})
			b.exec("UPDATE rollouts SET state = 'FAILED', finished_at = 5 WHERE process_guid = 'web'")
			expectAllRefused()
			b.exec("UPDATE rollouts SET state = 'COMPLETE', finished_at = 5 WHERE process_guid = 'web'")
			expectAllRefused()
		})

		It("an unknown LRP is ResourceNotFound", func() {
			_, err := b.store.PromoteRollout(b.ctx, "nope", 50, nil)
			Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
			_, err = b.store.PauseRollout(b.ctx, "nope")
			Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
		})
	})

	Describe("convergence", func() {
		It("reads the stage in the snapshot and stores a changed one from a RolloutWrite, computed fields left out", func() {
			update("v2", &models.StagedRollout{TargetPercent: 6.25, SafeRate: fivePerSixHours(), Seed: "s"})
			snap, err := b.store.ConvergenceSnapshot(b.ctx, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(snap.Rollouts).To(HaveLen(1))
			row := snap.Rollouts[0]
			want := &models.RolloutStage{TargetPercent: 6.25, SafeRate: fivePerSixHours(), Seed: "s",
				PhaseStartedAt: t0, WatchingSince: t0}
			Expect(row.Stage).To(EqualProto(want))

			// The planner pauses the phase on a crash, and HOLDING passes
			// through as any state does.
			b.clock.Advance(time.Hour)
			t := now()
			changed := proto.Clone(row.Stage).(*models.RolloutStage)
			changed.Paused, changed.PausedAt, changed.PauseReason = true, t, "instance 3 crashed on v2"
			changed.SharePercent, changed.AllowedInstances, changed.TargetAt = 99, 7, 12345
			next := row
			next.Stage = changed
			next.State = models.RolloutStatus_HOLDING
			result, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{{
				ProcessGuid: "web", ExpectModificationIndex: row.ModificationIndex, ExpectActiveDefinitionID: "v2", Record: next,
			}}})
			Expect(err).NotTo(HaveOccurred())
			Expect(result.Applied).To(Equal(1))
			Expect(changed.SharePercent).To(Equal(99.0), "the write's message is not changed")

			storedWant := &models.RolloutStage{TargetPercent: 6.25, SafeRate: fivePerSixHours(), Seed: "s",
				PhaseStartedAt: t0, WatchingSince: t0, Paused: true, PausedAt: t, PauseReason: "instance 3 crashed on v2"}
			Expect(storedStage()).To(EqualProto(storedWant))
			snap, err = b.store.ConvergenceSnapshot(b.ctx, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(snap.Rollouts[0].Stage).To(EqualProto(storedWant))
			Expect(snap.Rollouts[0].ModificationIndex).To(Equal(row.ModificationIndex + 1))
			expected := next
			expected.Stage = storedWant
			expected.ModificationIndex = row.ModificationIndex + 1
			Expect(snap.Rollouts[0].Equal(expected)).To(BeTrue())

			st := status()
			Expect(st.State).To(Equal(models.RolloutStatus_HOLDING))
			Expect(st.Stage.Paused).To(BeTrue())
			Expect(st.Stage.SharePercent).To(BeNumerically("~", 5.0/6, 1e-9))

			// A write whose record lost its stage stores NULL.
			next = snap.Rollouts[0]
			next.Stage = nil
			_, err = b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{{
				ProcessGuid: "web", ExpectModificationIndex: next.ModificationIndex, ExpectActiveDefinitionID: "v2", Record: next,
			}}})
			Expect(err).NotTo(HaveOccurred())
			Expect(storedStage()).To(BeNil())
		})

		It("a stale RolloutWrite leaves the stage alone, as it does the record", func() {
			update("v2", &models.StagedRollout{TargetPercent: 25, SafeRate: fivePerSixHours()})
			snap, err := b.store.ConvergenceSnapshot(b.ctx, nil)
			Expect(err).NotTo(HaveOccurred())
			row := snap.Rollouts[0]
			_, err = b.store.PauseRollout(b.ctx, "web") // moves the record on
			Expect(err).NotTo(HaveOccurred())
			pausedStage := storedStage()
			row.State = models.RolloutStatus_HOLDING
			result, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{{
				ProcessGuid: "web", ExpectModificationIndex: row.ModificationIndex, ExpectActiveDefinitionID: "v2", Record: row,
			}}})
			Expect(err).NotTo(HaveOccurred())
			Expect(result.Skipped).To(Equal(1))
			Expect(storedStage()).To(EqualProto(pausedStage))
		})
	})
})
