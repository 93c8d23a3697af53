package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// The last group of a plan: operation writes (convergence.OperationWrite). They are
// few per pass — only LRPs with an operation that has not ended — so each
// is a handful of statements, in transactions of up to recordBatchSize
// writes. Each write locks its LRP's desired row, then the operation's
// row, the order the API's writes take them in, and applies only while the
// operation still has ExpectModificationIndex; otherwise it is skipped.
//
// A status write stamps started_at (IN_PROGRESS) or finished_at and ended
// (an ending status); history lines are appended stamped with the time of
// the apply; a lease owner takes the lease until LeaseExpiresAt, and a
// release leaves the operation with no owner. An operation that ends keeps
// the lease it last had, as a record of who carried it.
//
// Start applies the update a PENDING operation holds as UpdateDesiredLRP
// would have (applyUpdate), its modification tag ignored: the operation
// waited its turn, and the LRP moved on meanwhile by design. The operation
// becomes IN_PROGRESS when the update activated its definition (a rollout
// to it starts, carrying its id), else FINISHED, "its definition is
// already active". Unlike an update from the API, a started operation
// supersedes nothing: the operations queued behind it keep waiting. A
// Start is skipped when the LRP is gone or another of its operations is
// IN_PROGRESS at apply time: the plan that started it did not see that.
//
// Events, per applied write: those an update emits, for a Start; then
// operation_changed with the operation after the write.

// checkOperationWrite refuses an operation write that could never be right,
// before anything is read.
func checkOperationWrite(field string, w convergence.OperationWrite) error {
	if err := checkOperationID(field+".id", w.ID); err != nil {
		return err
	}
	if err := checkRequired(field+".process_guid", w.ProcessGuid, maxProcessGuid); err != nil {
		return err
	}
	if w.ExpectModificationIndex < 1 {
		return errInvalid(field+".expect_modification_index", "must be positive: every stored operation has one")
	}
	if _, known := models.Operation_Status_name[int32(w.Status)]; !known {
		return errInvalid(field+".status", fmt.Sprintf("unknown status %d", w.Status))
	}
	if err := checkWidth(field+".lease_owner", w.LeaseOwner, maxLeaseOwner); err != nil {
		return err
	}
	if w.LeaseOwner != "" && w.LeaseExpiresAt <= 0 {
		return errInvalid(field+".lease_expires_at", "must be set with lease_owner")
	}
	if w.ReleaseLease && (w.LeaseOwner != "" || w.Start) {
		return errInvalid(field+".release_lease", "a write that takes the lease, or starts its operation, cannot give it up")
	}
	if w.BlockedBy != nil && !w.SetBlockedBy {
		return errInvalid(field+".blocked_by", "must come with set_blocked_by")
	}
	if w.SetBlockedBy && (w.Start || models.OperationEnded(w.Status)) {
		return errInvalid(field+".set_blocked_by", "a write that starts or ends its operation clears its blocked_by")
	}
	if w.BlockedBy != nil && w.BlockedBy.GetReason() == "" {
		return errInvalid(field+".blocked_by.reason", "must be set")
	}
	return nil
}

// checkOperationTransitions refuses, before anything is written, writes
// whose status change models.CheckOperationTransition forbids from the
// status stored, or that name another LRP than their operation's. Only
// writes that would apply are judged: one whose operation is gone or moved
// on past ExpectModificationIndex will be skipped anyway. A write that
// applies later finds the very version judged here, since it applies only
// at that modification index. Writes of one operation are judged in order,
// each from the version the one before leaves.
func (a *convergenceApplier) checkOperationTransitions(ctx context.Context, writes []convergence.OperationWrite) error {
	if len(writes) == 0 {
		return nil
	}
	type version struct {
		processGuid string
		kind        models.Operation_Kind
		status      models.Operation_Status
		index       int64
	}
	ids := make([]string, 0, len(writes))
	for _, w := range writes {
		ids = append(ids, w.ID)
	}
	stored := map[string]version{}
	for _, batch := range batches(uniqueStrings(ids)) {
		in, args := a.s.driver.inStrings(batch)
		err := a.s.eachRow(ctx, a.s.conn, "SELECT id, process_guid, kind, status, modification_index FROM operations WHERE id"+in,
			args, func(rows *sql.Rows) error {
				var id, kind, status string
				var v version
				if err := rows.Scan(&id, &v.processGuid, &kind, &status, &v.index); err != nil {
					return err
				}
				v.kind = models.Operation_Kind(models.Operation_Kind_value[kind])
				v.status = models.Operation_Status(models.Operation_Status_value[status])
				stored[id] = v
				return nil
			})
		if err != nil {
			return asModelError("apply convergence: operations", err)
		}
	}
	for i, w := range writes {
		field := fmt.Sprintf("writes.operations[%d]", i)
		v, ok := stored[w.ID]
		if !ok || v.index != w.ExpectModificationIndex {
			continue
		}
		if v.processGuid != w.ProcessGuid {
			return errInvalid(field+".process_guid", fmt.Sprintf("operation %s is desired_lrp %q's, not %q's", w.ID, v.processGuid, w.ProcessGuid))
		}
		to := w.Status
		if w.Start && (v.kind != models.Operation_VALIDATE || v.status != models.Operation_IN_PROGRESS) {
			// From PENDING; only a validated update (VALIDATE,
			// IN_PROGRESS) starts again, keeping its status.
			to = models.Operation_IN_PROGRESS
		}
		if to != models.Operation_STATUS_UNKNOWN {
			if err := models.CheckOperationTransition(v.status, to); err != nil {
				return errInvalid(field+".status", fmt.Sprintf("operation %s: %v", w.ID, err))
			}
			v.status = to
		}
		v.index++
		stored[w.ID] = v
	}
	return nil
}

// operations applies the Operations group.
func (a *convergenceApplier) operations(ctx context.Context, writes []convergence.OperationWrite) error {
	return applyInBatches(ctx, a, "operations", writes, func(w convergence.OperationWrite) string { return w.ID }, a.operationWrite)
}

// operationWrite applies one write and returns its events, or nil when it
// is skipped.
func (a *convergenceApplier) operationWrite(ctx context.Context, tx *sql.Tx, w convergence.OperationWrite) ([]models.Event, error) {
	s := a.s
	lock := s.driver.lockForUpdate()
	desired, err := s.readDesiredLRPOnly(ctx, tx, w.ProcessGuid, lock)
	if models.IsErrorType(err, models.Error_ResourceNotFound) {
		desired, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := s.readOperation(ctx, tx, w.ID, lock)
	if err != nil {
		return nil, err
	}
	if rec == nil || rec.modificationIndex != w.ExpectModificationIndex || rec.op.ProcessGuid != w.ProcessGuid {
		return nil, nil
	}
	op := rec.op
	var events []models.Event
	// The plan's lines come first: they say why (e.g. "validated: …"),
	// and a Start then adds what it applied.
	addHistory(op, a.now, w.History...)
	switch {
	case w.Start:
		if desired == nil {
			return nil, nil
		}
		if events, err = a.start(ctx, tx, rec, desired); err != nil || events == nil {
			return nil, err
		}
	case w.Status != models.Operation_STATUS_UNKNOWN:
		if err := models.CheckOperationTransition(op.Status, w.Status); err != nil {
			return nil, errInvalid("writes.operations.status", fmt.Sprintf("operation %s: %v", w.ID, err))
		}
		setOperationStatus(op, w.Status, w.Reason, a.now)
		if w.FailedValidation && op.Kind == models.Operation_VALIDATE && w.Status == models.Operation_ERROR {
			if err := s.markFailedValidation(ctx, tx, op.ProcessGuid, op.DefinitionId); err != nil {
				return nil, err
			}
		}
	}
	switch {
	case w.LeaseOwner != "":
		op.LeaseOwner, op.LeaseExpiresAt = w.LeaseOwner, w.LeaseExpiresAt
	case w.ReleaseLease:
		op.LeaseOwner, op.LeaseExpiresAt = "", 0
	}
	if err := s.updateOperation(ctx, tx, rec); err != nil {
		return nil, err
	}
	if err := s.writeValidationBlockedBy(ctx, tx, op, w); err != nil {
		return nil, err
	}
	return append(events, models.OperationChanged(op)), nil
}

// writeValidationBlockedBy stores what holds a VALIDATE operation's
// validation (operations.blocked_by, migration 0030): w's, or nothing once
// w starts or ends the operation; and gives op, whose operation_changed
// event the write emits, the blocked_by it keeps, so that the event says
// what a read of the operation would. Other operations have none, and are
// spared the statements.
func (s *SQLDB) writeValidationBlockedBy(ctx context.Context, tx *sql.Tx, op *models.Operation, w convergence.OperationWrite) error {
	if op.Kind != models.Operation_VALIDATE && !w.SetBlockedBy {
		return nil
	}
	clearing := w.Start || models.OperationEnded(op.Status)
	if !w.SetBlockedBy && !clearing {
		// Validating still, the write about something else: the event
		// carries what the operation keeps.
		var kept []byte
		if err := s.queryRow(ctx, tx, "SELECT blocked_by FROM operations WHERE id = ?", op.Id).Scan(&kept); err != nil {
			return err
		}
		var err error
		if op.BlockedBy, err = decodeBlockedBy(kept); err != nil {
			return errInvalidRecord("validation of desired_lrp %q: blocked_by: %v", op.ProcessGuid, err)
		}
		return nil
	}
	op.BlockedBy = nil
	if !clearing {
		op.BlockedBy = w.BlockedBy
	}
	blocked, err := encodeBlockedBy(op.BlockedBy)
	if err != nil {
		return errInvalid("blocked_by", err.Error())
	}
	_, err = s.exec(ctx, tx, "UPDATE operations SET blocked_by = ? WHERE id = ?", blocked, op.Id)
	return err
}

// restoreDefinition puts back into update, the request of op, the run
// definition its operation did not keep (operationParameters), read from
// run_infos under op's definition_id. It reports false when that
// definition is gone (cleanup took it since the plan): the Start is
// skipped, and the next pass evicts the operation.
func (s *SQLDB) restoreDefinition(ctx context.Context, tx *sql.Tx, op *models.Operation, update *models.DesiredLRPUpdate) (bool, error) {
	if update.Definition != nil || op.DefinitionId == "" {
		return true, nil
	}
	var blob []byte
	err := s.queryRow(ctx, tx, "SELECT definition FROM run_infos WHERE process_guid = ? AND definition_id = ?",
		op.ProcessGuid, op.DefinitionId).Scan(&blob)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	def, err := s.decodeStoredDefinition(op.ProcessGuid, op.DefinitionId, blob)
	if err != nil {
		return false, err
	}
	def.DefinitionId, def.CreatedAt = "", 0
	update.Definition, update.UpdateIdentifier = def, op.DefinitionId
	return true, nil
}

// start applies the update rec, a PENDING operation, holds over before (its
// LRP, read locked), and moves rec on: IN_PROGRESS when the update
// activated its definition, else FINISHED. An update with validate starts
// in two steps: from PENDING its validation starts (IN_PROGRESS, nothing
// applied); from IN_PROGRESS (validated) the update applies. It returns the update's events,
// or nil when the Start is skipped (another operation of the LRP is
// IN_PROGRESS).
func (a *convergenceApplier) start(ctx context.Context, tx *sql.Tx, rec *operationRecord, before *models.DesiredLRP) ([]models.Event, error) {
	s, op := a.s, rec.op
	unfinished, err := s.unfinishedOperations(ctx, tx, op.ProcessGuid)
	if err != nil {
		return nil, err
	}
	if slices.ContainsFunc(unfinished, func(u *operationRecord) bool {
		return u.op.Id != op.Id && u.op.Status == models.Operation_IN_PROGRESS
	}) {
		return nil, nil
	}
	request := &models.UpdateDesiredLRPRequest{}
	if err := op.GetParameters().UnmarshalTo(request); err != nil {
		return nil, errInvalidRecord("operation %q: its parameters are not an update it can start: %v", op.Id, err)
	}
	update := &models.DesiredLRPUpdate{}
	if request.Update != nil {
		update = proto.Clone(request.Update).(*models.DesiredLRPUpdate)
	}
	if update.Validate && op.Status == models.Operation_PENDING {
		// Its turn: the validation starts; the update applies once
		// convergence found the definition healthy and starts it again.
		setOperationStatus(op, models.Operation_IN_PROGRESS, "", a.now)
		addHistory(op, a.now, "started: "+validatingLine(op.DefinitionId))
		return []models.Event{}, nil
	}
	validated := op.Status == models.Operation_IN_PROGRESS
	if validated && !update.Validate {
		// Only a validated update starts from IN_PROGRESS.
		return nil, nil
	}
	if restored, err := s.restoreDefinition(ctx, tx, op, update); err != nil || !restored {
		return nil, err
	}
	startedAt := op.StartedAt
	update.ModificationTag, update.Queue, update.Validate = nil, false, false
	change, err := s.prepareUpdate(update)
	if err != nil {
		return nil, errInvalidRecord("operation %q: %v", op.Id, err)
	}
	applied, err := s.applyUpdate(ctx, tx, before, update, change, op.Id, a.now)
	if err != nil {
		return nil, err
	}
	setOperationStatus(op, models.Operation_IN_PROGRESS, "", a.now)
	line := "started: "
	if validated {
		// It started with its validation.
		op.StartedAt, line = startedAt, "applied: "
	}
	addHistory(op, a.now, line+describeUpdate(before, applied.after, update, change, applied.activated))
	if !applied.activated {
		const reason = "its definition is already active"
		setOperationStatus(op, models.Operation_FINISHED, reason, a.now)
		addHistory(op, a.now, reason)
	}
	return applied.events, nil
}
