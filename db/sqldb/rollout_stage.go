package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// Staged phases (DESIGN §5, "Staged rollout"; the arithmetic is in
// models/rollout_stage.go). A staged rollout's record carries its phase in
// rollouts.stage (migration 0008): the protobuf of a models.RolloutStage
// with only its stored fields set. The phase is written here (an update
// with staged, through models.NewRolloutStage; PromoteRollout, PauseRollout,
// ResumeRollout) and by convergence (a RolloutWrite whose Record.Stage
// changed, e.g. HOLDING or a pause on a crash); a rollback or an abort
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

// formatPercent writes a share for people: at most four decimals, rounded
// up, so that a share quoted back in a request (to_percent) is never below
// the share it was quoted from. The small slack keeps an exact share such
// as 12.5 from rounding up on floating-point noise.
func formatPercent(p float64) string {
	return strconv.FormatFloat(math.Ceil(p*1e4-1e-6)/1e4, 'f', -1, 64)
}

// describeRate writes a rate for people: "at 5% per 6h0m0s", or "at once".
func describeRate(rate *models.SafeRate) string {
	if rate == nil {
		return "at once"
	}
	return fmt.Sprintf("at %s%% per %s", formatPercent(rate.GetPercent()), models.Millis(rate.GetPerMs()))
}

// describeStaged is what an update's history says of its staged request.
func describeStaged(staged *models.StagedRollout) string {
	return fmt.Sprintf("staged: to %s%% %s", formatPercent(staged.GetTargetPercent()), describeRate(staged.GetSafeRate()))
}

// stagedRollout is what PromoteRollout, PauseRollout and ResumeRollout
// work on: the LRP (its desired row locked) and its rollout record (locked
// too), checked to be a staged rollout under way.
type stagedRollout struct {
	desired *models.DesiredLRP
	record  *rolloutRecord
}

// lockStagedRollout locks the LRP's desired row, as every writer of the
// LRP does first, then reads its record, and checks that it is a staged
// rollout to the active definition that is PROGRESSING or HOLDING:
// otherwise InvalidStateTransition, saying what there is instead.
func (s *SQLDB) lockStagedRollout(ctx context.Context, tx *sql.Tx, processGuid string) (*stagedRollout, error) {
	desired, err := s.lockDesiredLRP(ctx, tx, processGuid)
	if err != nil {
		return nil, err
	}
	rec, err := s.readRollout(ctx, tx, processGuid, s.dialect.lockForUpdate())
	if err != nil {
		return nil, err
	}
	none := fmt.Sprintf("desired_lrp %q has no staged rollout under way", processGuid)
	switch {
	case rec == nil || rec.State == models.RolloutStatus_NONE:
		return nil, models.NewError(models.Error_InvalidStateTransition, "%s: it has no rollout", none)
	case rec.Stage == nil:
		return nil, models.NewError(models.Error_InvalidStateTransition,
			"%s: its rollout to %s is not staged (an update with staged starts one)", none, rec.DefinitionID)
	case rec.DefinitionID != desired.ActiveDefinitionId:
		// Cannot happen while every change of the active definition
		// writes the record in its transaction; refuse rather than move
		// a phase of a definition that is no longer rolling out.
		return nil, models.NewError(models.Error_InvalidStateTransition,
			"%s: its staged rollout is to %s, but the active definition is %s", none, rec.DefinitionID, desired.ActiveDefinitionId)
	case rec.State != models.RolloutStatus_PROGRESSING && rec.State != models.RolloutStatus_HOLDING:
		return nil, models.NewError(models.Error_InvalidStateTransition,
			"%s: its staged rollout to %s is %s, not PROGRESSING or HOLDING", none, rec.DefinitionID, rec.State)
	}
	return &stagedRollout{desired: desired, record: rec}, nil
}

// changeStage records the operation kind (made by request, FINISHED at
// once, its history line), stores the record next, compare-and-set on the
// modification index of the record read, and answers the status and the
// events: rollout_changed, then operation_changed.
func (s *SQLDB) changeStage(ctx context.Context, tx *sql.Tx, staged *stagedRollout, next *rolloutRecord,
	kind models.Operation_Kind, request proto.Message, line string, now int64,
) (*models.Operation, *models.RolloutStatus, []models.Event, error) {
	processGuid := staged.desired.ProcessGuid
	op, err := s.newOperation(ctx, tx, processGuid, kind, request, now)
	if err != nil {
		return nil, nil, nil, err
	}
	op.op.DefinitionId = staged.desired.ActiveDefinitionId
	setOperationStatus(op.op, models.Operation_FINISHED, "", now)
	addHistory(op.op, now, line)
	if err := s.insertOperation(ctx, tx, op); err != nil {
		return nil, nil, nil, err
	}
	// Unsettled, so that convergence reads the changed phase on its next
	// pass (a record under way is unsettled anyway).
	next.Settled = false
	if err := s.storeRollout(ctx, tx, next, staged.record.ModificationIndex); err != nil {
		return nil, nil, nil, err
	}
	status, err := s.rolloutStatus(ctx, tx, processGuid, staged.desired, next, now)
	if err != nil {
		return nil, nil, nil, err
	}
	return op.op, status, []models.Event{models.RolloutChanged(status), models.OperationChanged(op.op)}, nil
}

// nextRecord is a copy of rec to write over it, with stage as its phase.
func nextRecord(rec *rolloutRecord, stage *models.RolloutStage) *rolloutRecord {
	next := *rec
	next.Stage = stage
	return &next
}

// PromoteRollout starts the next staged phase (see db.RolloutDB): from the
// share that stands now to toPercent at rate, the record PROGRESSING with
// its progress (the deadline's start) now, under a PROMOTE operation.
func (s *SQLDB) PromoteRollout(ctx context.Context, processGuid string, toPercent float64, rate *models.SafeRate) (*models.RolloutStatus, error) {
	request := &models.PromoteRolloutRequest{ProcessGuid: processGuid, ToPercent: toPercent, SafeRate: rate}
	if err := request.Validate(); err != nil {
		return nil, err
	}
	var status *models.RolloutStatus
	err := s.transactOperation(ctx, "promote rollout", func(tx *sql.Tx) (*models.Operation, []models.Event, error) {
		staged, err := s.lockStagedRollout(ctx, tx, processGuid)
		if err != nil {
			return nil, nil, err
		}
		now := s.now().UnixNano()
		current := staged.record.Stage
		share := models.StageShare(current, now)
		if toPercent < share {
			return nil, nil, errInvalid("to_percent", fmt.Sprintf("must not be below the share that stands, %s (got %s)",
				formatPercent(share), strconv.FormatFloat(toPercent, 'f', -1, 64)))
		}
		// A new phase: it grows from the share that stands, is not
		// paused, and its crash watch starts over. The seed stays, so
		// the cohort only grows.
		stage := &models.RolloutStage{
			PriorPercent:   share,
			TargetPercent:  toPercent,
			Seed:           current.GetSeed(),
			PhaseStartedAt: now,
			WatchingSince:  now,
		}
		if rate != nil {
			stage.SafeRate = proto.Clone(rate).(*models.SafeRate)
		}
		line := fmt.Sprintf("promoted from %s%% to %s%% %s", formatPercent(share), formatPercent(toPercent), describeRate(rate))
		next := nextRecord(staged.record, stage)
		next.State = models.RolloutStatus_PROGRESSING
		next.Reason = fmt.Sprintf("staged rollout to %s %s", staged.desired.ActiveDefinitionId, line)
		next.ProgressAt = now
		next.FinishedAt = 0
		var op *models.Operation
		var events []models.Event
		op, status, events, err = s.changeStage(ctx, tx, staged, next, models.Operation_PROMOTE, request, line, now)
		return op, events, err
	})
	if err != nil {
		return nil, err
	}
	return status, nil
}

// PauseRollout freezes the staged phase's clock (see db.RolloutDB) under a
// PAUSE operation: paused at now, the reason "paused by <requested_by>".
func (s *SQLDB) PauseRollout(ctx context.Context, processGuid string) (*models.RolloutStatus, error) {
	if err := checkRolloutGuid(processGuid); err != nil {
		return nil, err
	}
	request := &models.PauseRolloutRequest{ProcessGuid: processGuid}
	var status *models.RolloutStatus
	err := s.transactOperation(ctx, "pause rollout", func(tx *sql.Tx) (*models.Operation, []models.Event, error) {
		staged, err := s.lockStagedRollout(ctx, tx, processGuid)
		if err != nil {
			return nil, nil, err
		}
		current := staged.record.Stage
		if current.GetPaused() {
			return nil, nil, models.NewError(models.Error_InvalidStateTransition,
				"desired_lrp %q: its staged rollout is paused already (%s)", processGuid, current.GetPauseReason())
		}
		now := s.now().UnixNano()
		reason := "paused"
		if note := db.OperationNoteFrom(ctx); note != nil && note.RequestedBy != "" {
			reason = "paused by " + note.RequestedBy
		}
		stage := proto.Clone(current).(*models.RolloutStage)
		stage.Paused, stage.PausedAt, stage.PauseReason = true, now, reason
		var op *models.Operation
		var events []models.Event
		op, status, events, err = s.changeStage(ctx, tx, staged, nextRecord(staged.record, stage), models.Operation_PAUSE, request, reason, now)
		return op, events, err
	})
	if err != nil {
		return nil, err
	}
	return status, nil
}

// ResumeRollout starts the staged phase's clock again (see db.RolloutDB)
// under a RESUME operation: the paused time moves both the phase (through
// paused_nanos) and the record's progress time (so the deadline did not
// run while paused) on, and crashes count again from now.
func (s *SQLDB) ResumeRollout(ctx context.Context, processGuid string) (*models.RolloutStatus, error) {
	if err := checkRolloutGuid(processGuid); err != nil {
		return nil, err
	}
	request := &models.ResumeRolloutRequest{ProcessGuid: processGuid}
	var status *models.RolloutStatus
	err := s.transactOperation(ctx, "resume rollout", func(tx *sql.Tx) (*models.Operation, []models.Event, error) {
		staged, err := s.lockStagedRollout(ctx, tx, processGuid)
		if err != nil {
			return nil, nil, err
		}
		current := staged.record.Stage
		if !current.GetPaused() {
			return nil, nil, models.NewError(models.Error_InvalidStateTransition,
				"desired_lrp %q: its staged rollout is not paused", processGuid)
		}
		now := s.now().UnixNano()
		// A clock that stepped back since the pause counts as no pause.
		paused := max(0, now-current.GetPausedAt())
		stage := proto.Clone(current).(*models.RolloutStage)
		stage.PausedNanos += paused
		stage.Paused, stage.PausedAt, stage.PauseReason = false, 0, ""
		stage.WatchingSince = now
		next := nextRecord(staged.record, stage)
		next.ProgressAt += paused
		line := fmt.Sprintf("resumed after %s", time.Duration(paused).Round(time.Millisecond))
		var op *models.Operation
		var events []models.Event
		op, status, events, err = s.changeStage(ctx, tx, staged, next, models.Operation_RESUME, request, line, now)
		return op, events, err
	})
	if err != nil {
		return nil, err
	}
	return status, nil
}
