package sqldb

import (
	"context"
	"database/sql"

	"github.com/corkboard/corkboard/models"
)

// RecordVerdict stores a verdict of the LRP's rollout to definitionID (see
// db.RolloutDB). It locks the LRP's row and its record, so that it is
// ordered with the update, rollback or pass that would move the rollout
// on, and refuses a rollout that is no longer judged or no longer to
// definitionID: that verdict judged what is gone.
func (s *SQLDB) RecordVerdict(ctx context.Context, processGuid, definitionID string, verdict *models.AnalysisVerdict) error {
	if err := checkRolloutGuid(processGuid); err != nil {
		return err
	}
	return s.transactKeyed(ctx, "record verdict", processGuid, func(tx *sql.Tx) ([]models.Event, error) {
		desired, err := s.lockDesiredLRP(ctx, tx, processGuid)
		if err != nil {
			return nil, err
		}
		rec, err := s.readRollout(ctx, tx, processGuid, s.driver.lockForUpdate())
		if err != nil {
			return nil, err
		}
		if rec == nil || !models.TakesVerdictOf(rec.State, rec.DefinitionID, desired.ActiveDefinitionId, definitionID, rec.Judgement) {
			return nil, models.NewError(models.Error_ResourceConflict,
				"the rollout of %s to %s is no longer judged: a verdict of it is not recorded", processGuid, definitionID)
		}
		now := s.now().UnixNano()
		next := *rec
		next.Judgement = rec.Judgement.WithVerdict(verdict)
		if err := s.storeRollout(ctx, tx, &next, rec.ModificationIndex); err != nil {
			return nil, err
		}
		status, err := s.rolloutStatus(ctx, tx, processGuid, desired, &next, now)
		if err != nil {
			return nil, err
		}
		events := []models.Event{models.RolloutChanged(status)}
		if rec.OperationID == "" {
			return events, nil
		}
		op, err := s.readOperation(ctx, tx, rec.OperationID, s.driver.lockForUpdate())
		if err != nil || op == nil || models.OperationEnded(op.op.Status) {
			return events, err
		}
		addHistory(op.op, now, "verdict "+models.VerdictLine(verdict))
		if err := s.updateOperation(ctx, tx, op); err != nil {
			return nil, err
		}
		return append(events, models.OperationChanged(op.op)), nil
	})
}
