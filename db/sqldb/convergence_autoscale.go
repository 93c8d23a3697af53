package sqldb

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// The first group of a plan: the autoscaler's decisions
// (convergence.AutoscaleWrite). They are few per pass — only autoscaled LRPs whose
// count or window changed — so each is a handful of statements on one
// LRP, in transactions of up to recordBatchSize writes (applyInBatches).
//
// Each write locks the LRP's desired row, the order every writer of the
// LRP takes it in, and applies only while the LRP is still at
// ExpectModificationIndex with autoscaling enabled; the UPDATE is
// compare-and-set on that index too. A gone LRP, an update since (any
// update moves the tag on, enabling or disabling autoscaling included) or
// autoscaling turned off makes it skipped, left for the next pass.
//
// The write always stores Status in desired_lrps.autoscaler. A change of
// the count (Instances ≠ PreviousInstances) also sets instances, moves the
// modification tag on and stamps updated_at, and records an AUTOSCALE
// operation, FINISHED at once (created, started and finished now), whose
// parameters are the decision (an Any of Status.LastDecision), whose
// reason is the decision's (else "autoscaled from N to M"), whose history
// is the decision's arithmetic (models.AutoscalerDecision.Describe) and
// which is requested by "autoscaler". The instances themselves are the
// plan's Create and Retire writes that follow: the store adds or deletes
// none here.
//
// Events, per applied write that changed the count: desired_lrp_changed
// (before and after), then operation_changed. A write of Status alone
// emits nothing and leaves the tag and the operations alone.

// autoscaleRequester is the requested_by of an AUTOSCALE operation.
const autoscaleRequester = "autoscaler"

// checkAutoscaleWrite refuses an autoscale write that could never be
// right, before anything is read.
func checkAutoscaleWrite(field string, w convergence.AutoscaleWrite) error {
	if err := checkRequired(field+".process_guid", w.ProcessGuid, maxProcessGuid); err != nil {
		return err
	}
	if w.ExpectModificationIndex < 0 {
		return errInvalid(field+".expect_modification_index", "must not be negative")
	}
	for _, n := range []struct {
		name  string
		value int32
	}{{"instances", w.Instances}, {"previous_instances", w.PreviousInstances}} {
		if n.value < 0 || n.value > models.MaxInstances {
			return errInvalid(field+"."+n.name, fmt.Sprintf("must be between 0 and %d, got %d", models.MaxInstances, n.value))
		}
	}
	return nil
}

// autoscale applies the Autoscale group.
func (a *convergenceApplier) autoscale(ctx context.Context, writes []convergence.AutoscaleWrite) error {
	return applyInBatches(ctx, a, "autoscale", writes, func(w convergence.AutoscaleWrite) string { return w.ProcessGuid }, a.autoscaleWrite)
}

// autoscaleWrite applies one write and returns its events (none, but not
// nil, for a write of the status alone), or nil when it is skipped.
func (a *convergenceApplier) autoscaleWrite(ctx context.Context, tx *sql.Tx, w convergence.AutoscaleWrite) ([]models.Event, error) {
	s := a.s
	before, err := s.lockDesiredLRP(ctx, tx, w.ProcessGuid)
	if models.IsErrorType(err, models.Error_ResourceNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if int64(before.ModificationTag.Index) != w.ExpectModificationIndex || !before.Autoscaling.IsEnabled() {
		return nil, nil
	}
	status, err := encodeAutoscalerStatus(w.Status)
	if err != nil {
		return nil, err
	}
	if w.Instances == w.PreviousInstances {
		// Not checked for a row count: MySQL counts no row when the
		// status is the one stored. The row is locked at the version read.
		_, err := s.exec(ctx, tx, "UPDATE desired_lrps SET autoscaler = ? WHERE process_guid = ? AND modification_tag_index = ?",
			status, w.ProcessGuid, w.ExpectModificationIndex)
		if err != nil {
			return nil, err
		}
		return []models.Event{}, nil
	}

	scaled := convergence.Autoscaled(convergence.DesiredSchedule{
		Instances: before.Instances, Autoscaler: before.Autoscaler, ModificationIndex: int64(before.ModificationTag.Index),
	}, w)
	after := copyDesiredLRP(before)
	after.Instances, after.Autoscaler, after.ModificationTag.Index = scaled.Instances, scaled.Autoscaler, uint32(scaled.ModificationIndex)
	err = s.updateDesiredRow(ctx, tx, before, "autoscaler = ?, instances = ?, modification_tag_index = ?, updated_at = ?",
		status, w.Instances, int64(after.ModificationTag.Index), a.now)
	if err != nil {
		return nil, err
	}
	rec, err := a.recordAutoscale(ctx, tx, w)
	if err != nil {
		return nil, err
	}
	return []models.Event{models.DesiredLRPChanged(before, after), models.OperationChanged(rec.op)}, nil
}

// recordAutoscale stores the AUTOSCALE operation of w, a change of the
// count.
func (a *convergenceApplier) recordAutoscale(ctx context.Context, tx *sql.Tx, w convergence.AutoscaleWrite) (*operationRecord, error) {
	decision := w.Status.GetLastDecision()
	if decision == nil {
		decision = &models.AutoscalerDecision{}
	}
	rec, err := a.s.newOperation(ctx, tx, w.ProcessGuid, models.Operation_AUTOSCALE, decision, a.now)
	if err != nil {
		return nil, err
	}
	op := rec.op
	op.RequestedBy = autoscaleRequester
	reason := decision.GetReason()
	if reason == "" {
		reason = fmt.Sprintf("autoscaled from %d to %d", w.PreviousInstances, w.Instances)
	}
	setOperationStatus(op, models.Operation_FINISHED, reason, a.now)
	line := decision.Describe()
	if w.Status.GetLastDecision() == nil {
		line = reason
	}
	addHistory(op, a.now, line)
	return rec, a.s.insertOperation(ctx, tx, rec)
}
