package sqldb

import (
	"context"
	"database/sql"

	"github.com/corkboard/corkboard/models"
)

// EditRollout changes the limits of the LRP's rollout under way (see
// db.RolloutDB; the rule is models.DecideRolloutEdit) under an EDIT
// operation. It writes the strategy and the record only: the instances
// are convergence's, which reads both again on its next pass (the LRP's
// desired_lrp_changed names it to the mirror).
func (s *SQLDB) EditRollout(ctx context.Context, edit *models.EditRolloutRequest) (*models.RolloutStatus, error) {
	if err := edit.Validate(); err != nil {
		return nil, err
	}
	processGuid := edit.GetProcessGuid()
	var status *models.RolloutStatus
	err := s.transactOperation(ctx, "edit rollout", processGuid, func(tx *sql.Tx) (*models.Operation, []models.Event, error) {
		before, err := s.lockDesiredLRP(ctx, tx, processGuid)
		if err != nil {
			return nil, nil, err
		}
		rec, err := s.readRollout(ctx, tx, processGuid, s.driver.lockForUpdate())
		if err != nil {
			return nil, nil, err
		}
		now := s.now().UnixNano()
		decided, err := models.DecideRolloutEdit(processGuid, before.ActiveDefinitionId, before.UpdateStrategy, stageRecord(rec), edit, now)
		if err != nil {
			return nil, nil, err
		}
		var op *models.Operation
		var events []models.Event
		op, status, events, err = s.writeRolloutEdit(ctx, tx, before, rec, decided, edit, now)
		return op, events, err
	})
	if err != nil {
		return nil, err
	}
	return status, nil
}

// writeRolloutEdit writes what an edit decided on the LRP before and its
// record rec, both read locked (an edit is refused without a record, so
// rec is set): the EDIT operation made by request, FINISHED with the
// decided line; the strategy on the desired row with its tag moved on,
// compare-and-set on the tag read; the record, compare-and-set on its
// modification index. It answers the operation, the status after, and the
// events: desired_lrp_changed, rollout_changed, operation_changed.
func (s *SQLDB) writeRolloutEdit(ctx context.Context, tx *sql.Tx, before *models.DesiredLRP, rec *rolloutRecord, decided models.RolloutEdit,
	request *models.EditRolloutRequest, now int64,
) (*models.Operation, *models.RolloutStatus, []models.Event, error) {
	op, err := s.newOperation(ctx, tx, before.ProcessGuid, models.Operation_EDIT, request, now)
	if err != nil {
		return nil, nil, nil, err
	}
	op.op.DefinitionId = before.ActiveDefinitionId
	setOperationStatus(op.op, models.Operation_FINISHED, "", now)
	addHistory(op.op, now, decided.Line)
	if err := s.insertOperation(ctx, tx, op); err != nil {
		return nil, nil, nil, err
	}
	strategy, err := encodeUpdateStrategy(decided.Strategy)
	if err != nil {
		return nil, nil, nil, errInvalid("update_strategy", err.Error())
	}
	after := copyDesiredLRP(before)
	after.UpdateStrategy = decided.Strategy
	after.ModificationTag.Index++
	if err := s.updateDesiredRow(ctx, tx, before, "update_strategy = ?, modification_tag_index = ?, updated_at = ?",
		strategy, int64(after.ModificationTag.Index), now); err != nil {
		return nil, nil, nil, err
	}
	next := withStageRecord(rec, decided.Record)
	if err := s.storeRollout(ctx, tx, &next, rec.ModificationIndex); err != nil {
		return nil, nil, nil, err
	}
	status, err := s.rolloutStatus(ctx, tx, before.ProcessGuid, after, &next, now)
	if err != nil {
		return nil, nil, nil, err
	}
	events := []models.Event{models.DesiredLRPChanged(before, after), models.RolloutChanged(status), models.OperationChanged(op.op)}
	return op.op, status, events, nil
}
