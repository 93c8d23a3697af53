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

// EditRollout (rollout_edit.go): the strategy and the record written as
// models.DecideRolloutEdit decides, in one transaction with the EDIT
// operation and its events, and no instance touched.
var _ = forEachDialect("rollout edits", func(b *board) {
	var sink *recordingSink
	tenPerMinute := func() *models.SafeRate { return &models.SafeRate{Percent: 10, PerMs: time.Minute.Milliseconds()} }

	BeforeEach(func() {
		sink = recordEvents(b)
		lrp := newLRP("web", "apps", 6)
		lrp.UpdateStrategy = &models.UpdateStrategy{MaxSurge: "1", MinReadyMs: 10_000, AutoRevert: true}
		_, err := b.store.DesireLRP(b.ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		b.clock.Advance(time.Second)
	})

	now := func() int64 { return b.clock.Now().UnixNano() }
	update := func(id string, staged *models.StagedRollout) *models.Operation {
		GinkgoHelper()
		_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
			Definition: newDefinition("", "/bin/web-"+id), UpdateIdentifier: id, Staged: staged,
		})
		Expect(err).NotTo(HaveOccurred())
		return newestOperation(b, "web")
	}
	desired := func() *models.DesiredLRP {
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
	recordIndex := func() int64 {
		GinkgoHelper()
		var index int64
		Expect(b.conn.QueryRow("SELECT modification_index FROM rollouts WHERE process_guid = 'web'").Scan(&index)).To(Succeed())
		return index
	}
	// rows is every instance row of web, as stored: an edit changes none.
	rows := func() []*models.ActualLRP { return b.instances("web") }
	edit := func(req *models.EditRolloutRequest) (*models.RolloutStatus, *models.Operation, error) {
		note := &db.OperationNote{RequestedBy: "alice"}
		req.ProcessGuid = "web"
		st, err := b.store.EditRollout(db.WithOperationNote(b.ctx, note), req)
		return st, note.Operation, err
	}
	// expectRefused runs an edit that must fail with errType and checks
	// that nothing was written or announced: the LRP, its record, its
	// operations.
	expectRefused := func(req *models.EditRolloutRequest, errType models.Error_Type) error {
		GinkgoHelper()
		lrpBefore, statusBefore := desired(), status()
		ops := b.count("SELECT COUNT(*) FROM operations WHERE process_guid = 'web'")
		records := b.count("SELECT COUNT(*) FROM rollouts WHERE process_guid = 'web'")
		var index int64
		if records == 1 {
			index = recordIndex()
		}
		sink.take()
		_, op, err := edit(req)
		Expect(err).To(HaveErrorType(errType))
		Expect(op).To(BeNil())
		Expect(desired()).To(EqualProto(lrpBefore))
		Expect(status()).To(EqualProto(statusBefore))
		Expect(b.count("SELECT COUNT(*) FROM operations WHERE process_guid = 'web'")).To(Equal(ops))
		if records == 1 {
			Expect(recordIndex()).To(Equal(index))
		}
		Expect(sink.take()).To(BeEmpty())
		return err
	}

	It("writes the strategy, moves the tag and the record on, records EDIT, and touches no instance", func() {
		started := update("v2", nil)
		// Index 0 is on v2 already, RUNNING: it must stay as it is.
		b.exec("UPDATE actual_lrps SET definition_id = 'v2', state = 'RUNNING', cell_id = 'cell-a', instance_guid = 'ig-0' WHERE process_guid = 'web' AND instance_index = 0")
		before, instances, index := desired(), rows(), recordIndex()
		sink.take()
		b.clock.Advance(time.Minute)
		t := now()

		st, op, err := edit(&models.EditRolloutRequest{MaxSurge: proto.String("3"), MinReadyMs: proto.Int64(0)})
		Expect(err).NotTo(HaveOccurred())

		after := desired()
		Expect(after.UpdateStrategy).To(EqualProto(&models.UpdateStrategy{MaxSurge: "3", AutoRevert: true}))
		Expect(after.ModificationTag.Epoch).To(Equal(before.ModificationTag.Epoch))
		Expect(after.ModificationTag.Index).To(Equal(before.ModificationTag.Index + 1))
		Expect(after.ActiveDefinitionId).To(Equal("v2"))
		Expect(after.Instances).To(Equal(before.Instances))
		Expect(rows()).To(Equal(instances), "no instance is written by an edit")
		Expect(recordIndex()).To(Equal(index + 1))

		Expect(st).To(EqualProto(status()))
		Expect(st.State).To(Equal(models.RolloutStatus_PROGRESSING))
		Expect(st.OperationId).To(Equal(started.Id), "the status still names the update that started the rollout")

		Expect(op).To(EqualProto(newestOperation(b, "web")))
		Expect(op.Kind).To(Equal(models.Operation_EDIT))
		Expect(op.Status).To(Equal(models.Operation_FINISHED))
		Expect(op.RequestedBy).To(Equal("alice"))
		Expect(op.DefinitionId).To(Equal("v2"))
		Expect(op.StartedAt).To(Equal(t))
		Expect(op.FinishedAt).To(Equal(t))
		Expect(op.History).To(HaveLen(1))
		Expect(op.History[0].Message).To(Equal("max_surge 1 → 3; min_ready 10s → 0s"))
		var request models.EditRolloutRequest
		Expect(op.Parameters.UnmarshalTo(&request)).To(Succeed())
		Expect(&request).To(EqualProto(&models.EditRolloutRequest{ProcessGuid: "web", MaxSurge: proto.String("3"), MinReadyMs: proto.Int64(0)}))
		Expect(newestOperation(b, "web").Id).NotTo(Equal(started.Id))
		started, err = b.store.Operation(b.ctx, started.Id)
		Expect(err).NotTo(HaveOccurred())
		Expect(started.Status).To(Equal(models.Operation_IN_PROGRESS), "the rollout's operation goes on")

		events := sink.take()
		Expect(eventTypes(events)).To(Equal([]string{models.EventDesiredLRPChanged, models.EventRolloutChanged, models.EventOperationChanged}))
		expectEvent(events[1], models.EventRolloutChanged, "web", &models.RolloutChangedEvent{Status: st})

		// Convergence reads the new strategy.
		snap, err := b.store.ConvergenceSnapshot(b.ctx, []string{"web"})
		Expect(err).NotTo(HaveOccurred())
		Expect(snap.Desired).To(HaveLen(1))
		Expect(snap.Desired[0].UpdateStrategy).To(EqualProto(after.UpdateStrategy))
	})

	It("a shorter progress deadline shows in the status at once, counted from the last progress", func() {
		update("v2", nil)
		progressAt := status().ProgressAt
		st, _, err := edit(&models.EditRolloutRequest{ProgressDeadlineMs: proto.Int64(90_000)})
		Expect(err).NotTo(HaveOccurred())
		Expect(st.DeadlineAt).To(Equal(progressAt + int64(90*time.Second)))
	})

	Describe("a staged phase", func() {
		It("a new rate goes on from the share that stands, the phase's start now", func() {
			update("v2", &models.StagedRollout{TargetPercent: 50, SafeRate: tenPerMinute()})
			b.clock.Advance(4 * time.Minute) // 40%
			t := now()
			st, op, err := edit(&models.EditRolloutRequest{SafeRate: &models.SafeRate{Percent: 20, PerMs: time.Minute.Milliseconds()}})
			Expect(err).NotTo(HaveOccurred())
			Expect(st.State).To(Equal(models.RolloutStatus_PROGRESSING))
			Expect(st.Stage.PriorPercent).To(BeNumerically("~", 40, 1e-9))
			Expect(st.Stage.PhaseStartedAt).To(Equal(t))
			Expect(st.Stage.SharePercent).To(BeNumerically("~", 40, 1e-9), "no jump")
			Expect(op.History[0].Message).To(Equal("safe_rate at 10% per 1m0s → at 20% per 1m0s; from the share that stands, 40%"))
			b.clock.Advance(15 * time.Second)
			Expect(status().Stage.SharePercent).To(BeNumerically("~", 45, 1e-9))
		})

		It("a target above a HOLDING share grows again: PROGRESSING, the deadline from now", func() {
			update("v2", &models.StagedRollout{TargetPercent: 50})
			snap, err := b.store.ConvergenceSnapshot(b.ctx, []string{"web"})
			Expect(err).NotTo(HaveOccurred())
			row := snap.Rollouts[0]
			row.State, row.Reason = models.RolloutStatus_HOLDING, "holding"
			result, err := b.store.ApplyConvergence(b.ctx, &convergence.ConvergenceWrites{Rollouts: []convergence.RolloutWrite{{
				ProcessGuid: "web", ExpectModificationIndex: row.ModificationIndex, ExpectActiveDefinitionID: "v2", Record: row,
			}}})
			Expect(err).NotTo(HaveOccurred())
			Expect(result.Applied).To(Equal(1))
			b.clock.Advance(time.Hour)
			t := now()

			st, _, err := edit(&models.EditRolloutRequest{TargetPercent: proto.Float64(100)})
			Expect(err).NotTo(HaveOccurred())
			Expect(st.State).To(Equal(models.RolloutStatus_PROGRESSING))
			Expect(st.Reason).To(Equal("staged rollout to v2 edited: growing from 50% to 100% at once"))
			Expect(st.ProgressAt).To(Equal(t))
			Expect(st.DeadlineAt).To(Equal(t + int64(10*time.Minute)))
			Expect(st.Stage.PriorPercent).To(Equal(50.0))
			Expect(st.Stage.TargetPercent).To(Equal(100.0))
			Expect(st.Stage.AllowedInstances).To(BeEquivalentTo(6))
		})

		It("a target below the share that stands is InvalidRequest naming target_percent; nothing is written", func() {
			update("v2", &models.StagedRollout{TargetPercent: 50, SafeRate: tenPerMinute()})
			b.clock.Advance(3 * time.Minute) // 30%
			err := expectRefused(&models.EditRolloutRequest{MaxSurge: proto.String("2"), TargetPercent: proto.Float64(20)}, models.Error_InvalidRequest)
			Expect(err.Error()).To(ContainSubstring("target_percent: must not be below the share that stands, 30"))
		})
	})

	It("refuses, writing nothing: no rollout, a rollout not under way, a phase field without a phase, a bad value, an unknown LRP", func() {
		err := expectRefused(&models.EditRolloutRequest{MaxSurge: proto.String("2")}, models.Error_InvalidStateTransition)
		Expect(err.Error()).To(ContainSubstring(`desired_lrp "web" has no rollout to edit`))

		update("v2", nil)
		err = expectRefused(&models.EditRolloutRequest{TargetPercent: proto.Float64(50)}, models.Error_InvalidStateTransition)
		Expect(err.Error()).To(ContainSubstring("target_percent: "))
		Expect(err.Error()).To(ContainSubstring("its rollout to v2 is not staged"))

		err = expectRefused(&models.EditRolloutRequest{MaxUnavailable: proto.String("150%")}, models.Error_InvalidRequest)
		Expect(err.Error()).To(ContainSubstring("max_unavailable: "))
		err = expectRefused(&models.EditRolloutRequest{}, models.Error_InvalidRequest)
		Expect(err.Error()).To(ContainSubstring("at least one is required"))

		b.exec("UPDATE rollouts SET state = 'FAILED', finished_at = 1 WHERE process_guid = 'web'")
		err = expectRefused(&models.EditRolloutRequest{ProgressDeadlineMs: proto.Int64(3_600_000)}, models.Error_InvalidStateTransition)
		Expect(err.Error()).To(ContainSubstring("its rollout is FAILED"))

		_, err = b.store.EditRollout(b.ctx, &models.EditRolloutRequest{ProcessGuid: "nope", MaxSurge: proto.String("2")})
		Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
	})
})
