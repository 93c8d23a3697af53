package sqldb

import (
	"context"
	"database/sql"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// Staged phases (DESIGN §5, "Staged rollout"; the arithmetic is in
// models/rollout_stage.go). A staged rollout's record carries its phase in
// rollouts.stage (migration 0008): the protobuf of a models.RolloutStage
// with only its stored fields set. The phase is written here (an update
// with staged, through models.NewRolloutStage; PromoteRollout, PauseRollout,
// ResumeRollout as models.DecideStage decides) and by convergence (a
// RolloutWrite whose Record.Stage changed, e.g. HOLDING or a pause on a
// crash, which models.DecideStage decides too); a rollback or an abort
// starts a record without one. The computed fields (share, allowed and
// active instances, target_at) are filled in by stageStatus whenever a
// status is built, at the time it is built.

// encodeStage is the stage column's value: NULL for no stage, else the
// stage's stored fields, encoded deterministically like every stored blob.
// The computed fields are zeroed on a copy: the planner and the store
// treat a stage as immutable (convergence.RolloutRow.Stage), so it is not touched.
func encodeStage(stage *models.RolloutStage) ([]byte, error) {
	if stage == nil {
		return nil, nil
	}
	stored := proto.Clone(stage).(*models.RolloutStage)
	stored.SharePercent, stored.AllowedInstances, stored.ActiveInstances, stored.TargetAt = 0, 0, 0, 0
	return encodeMessage(stored, false)
}

// decodeStage reads the stage column: nil for NULL.
func decodeStage(b []byte) (*models.RolloutStage, error) {
	if b == nil {
		return nil, nil
	}
	stage := &models.RolloutStage{}
	if err := proto.Unmarshal(b, stage); err != nil {
		return nil, err
	}
	return stage, nil
}

// stageStatus is the stage as a status shows it at now: the stored fields,
// and the share allowed now, the instances it allows out of instances, the
// ORDINARY instances on the active definition (activeOrdinary) and when
// the share reaches its target.
func stageStatus(stored *models.RolloutStage, instances, activeOrdinary int32, now int64) *models.RolloutStage {
	stage := proto.Clone(stored).(*models.RolloutStage)
	stage.SharePercent = models.StageShare(stored, now)
	stage.AllowedInstances = models.StageAllowed(stage.SharePercent, instances)
	stage.ActiveInstances = activeOrdinary
	stage.TargetAt = models.StageTargetAt(stored, now)
	return stage
}

// checkStaged refuses a staged request the store cannot run, as the API
// does (models.ValidateStaged), so that a direct caller cannot store a
// phase that never grows.
func checkStaged(update *models.DesiredLRPUpdate) error {
	staged := update.GetStaged()
	if staged == nil {
		return nil
	}
	if update.Definition == nil {
		return errInvalid("update.staged", "requires a definition")
	}
	return models.ValidateStaged("update.staged", staged)
}

// describeStaged is what an update's history says of its staged request.
func describeStaged(staged *models.StagedRollout) string {
	return "staged: to " + models.FormatPercent(staged.GetTargetPercent()) + "% " + models.DescribeRate(staged.GetSafeRate())
}

// stageRecord is rec (nil: none) as models.DecideStage reads it.
func stageRecord(rec *rolloutRecord) models.StageRecord {
	if rec == nil {
		return models.StageRecord{}
	}
	return models.StageRecord{
		State: rec.State, Reason: rec.Reason, DefinitionID: rec.DefinitionID,
		ProgressAt: rec.ProgressAt, FinishedAt: rec.FinishedAt, Stage: rec.Stage, Judgement: rec.Judgement,
	}
}

// withStageRecord is rec with the fields a decision made of it (after, as
// models.DecideStage and models.DecideRolloutEdit write it) and unsettled,
// so that convergence reads the changed record on its next pass (a record
// under way is unsettled anyway). It has no blocked_by: the one stored was
// the planner's of the record before the command (a promote's answer
// said "awaiting_promote"), and the pass the command triggers diagnoses
// the changed record.
func withStageRecord(rec *rolloutRecord, after models.StageRecord) rolloutRecord {
	next := *rec
	next.State, next.Reason, next.DefinitionID = after.State, after.Reason, after.DefinitionID
	next.ProgressAt, next.FinishedAt, next.Stage = after.ProgressAt, after.FinishedAt, after.Stage
	next.Judgement = after.Judgement
	next.Settled = false
	next.BlockedBy = nil
	return next
}

// changeStage writes what a stage command decided: it records the
// operation kind (made by request, FINISHED at once, its history line),
// stores rec as after says, compare-and-set on the modification index of
// rec as read, and answers the status and the events: rollout_changed,
// then operation_changed.
func (s *SQLDB) changeStage(ctx context.Context, tx *sql.Tx, desired *models.DesiredLRP, rec *rolloutRecord, after models.StageRecord,
	kind models.Operation_Kind, request proto.Message, line string, now int64,
) (*models.Operation, *models.RolloutStatus, []models.Event, error) {
	op, err := s.newOperation(ctx, tx, desired.ProcessGuid, kind, request, now)
	if err != nil {
		return nil, nil, nil, err
	}
	op.op.DefinitionId = desired.ActiveDefinitionId
	setOperationStatus(op.op, models.Operation_FINISHED, "", now)
	addHistory(op.op, now, line)
	if err := s.insertOperation(ctx, tx, op); err != nil {
		return nil, nil, nil, err
	}
	next := withStageRecord(rec, after)
	if err := s.storeRollout(ctx, tx, &next, rec.ModificationIndex); err != nil {
		return nil, nil, nil, err
	}
	status, err := s.rolloutStatus(ctx, tx, desired.ProcessGuid, desired, &next, now)
	if err != nil {
		return nil, nil, nil, err
	}
	return op.op, status, []models.Event{models.RolloutChanged(status), models.OperationChanged(op.op)}, nil
}

// PromoteRollout starts the next staged phase (see db.RolloutDB;
// models.DecideStage) under a PROMOTE operation.
func (s *SQLDB) PromoteRollout(ctx context.Context, processGuid string, toPercent float64, rate *models.SafeRate) (*models.RolloutStatus, error) {
	request := &models.PromoteRolloutRequest{ProcessGuid: processGuid, ToPercent: toPercent, SafeRate: rate}
	if err := request.Validate(); err != nil {
		return nil, err
	}
	return s.runRolloutCommand(ctx, processGuid, rolloutCommand{name: "promote rollout", kind: models.Operation_PROMOTE, request: request,
		stage: &models.StageCommand{Kind: models.StagePromote, ToPercent: toPercent, Rate: rate}})
}

// PauseRollout freezes the staged phase's clock (see db.RolloutDB;
// models.DecideStage) under a PAUSE operation, by the context's
// requested_by.
func (s *SQLDB) PauseRollout(ctx context.Context, processGuid string) (*models.RolloutStatus, error) {
	if err := checkRolloutGuid(processGuid); err != nil {
		return nil, err
	}
	pause := &models.StageCommand{Kind: models.StagePause}
	if note := db.OperationNoteFrom(ctx); note != nil {
		pause.By = note.RequestedBy
	}
	return s.runRolloutCommand(ctx, processGuid, rolloutCommand{name: "pause rollout", kind: models.Operation_PAUSE,
		request: &models.PauseRolloutRequest{ProcessGuid: processGuid}, stage: pause})
}

// ResumeRollout starts the staged phase's clock again (see db.RolloutDB;
// models.DecideStage) under a RESUME operation.
func (s *SQLDB) ResumeRollout(ctx context.Context, processGuid string) (*models.RolloutStatus, error) {
	if err := checkRolloutGuid(processGuid); err != nil {
		return nil, err
	}
	return s.runRolloutCommand(ctx, processGuid, rolloutCommand{name: "resume rollout", kind: models.Operation_RESUME,
		request: &models.ResumeRolloutRequest{ProcessGuid: processGuid}, stage: &models.StageCommand{Kind: models.StageResume}})
}
