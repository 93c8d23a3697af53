package convergence

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// Validation instances (an update with validate; DESIGN §5). While an
// LRP's VALIDATE operation is IN_PROGRESS and its definition is not the
// active one, the LRP has one extra instance of that definition at
// models.ValidationIndex: outside the index range, so it never stands for
// an index, and never routable (the store sees to that). It is placed like
// any instance. Once it is RUNNING — its rep reports it started only once
// it is healthy — the definition is validated: the instance is deleted
// (its rep stops it) and the operation is started again, which applies
// the update as it was asked (the definition becomes active and rolls out
// as usual). A crash restarts it at once, whatever the crash backoff, up
// to maxValidationAttempts; then the operation ends in ERROR with the last
// crash reason, each one before it being in the history, and nothing else
// has changed.
//
// Worked example: hello at v1, 4 instances; update to v2 with validate.
//
//  1. The update stores v2 and records VALIDATE, IN_PROGRESS.
//  2. Pass 1: no validation instance: hello/100000 is created on v2 and
//     placed.
//  3. Its rep starts it; v2 exits with code 3 before it is healthy: the
//     rep reports the crash (crash 1). Pass 2 restarts it at once; the
//     history says "attempt 1 of 3 crashed: exited with code 3".
//  4. Crash 3: pass 4 deletes it and ends the operation in ERROR,
//     "validation of v2 failed: its instance crashed 3 times, last:
//     exited with code 3". The 4 instances never left v1.
//
// Had it become healthy at step 3, pass 2 would have deleted it and
// started the operation again: v2 active, rolling from v1 start before
// stop, the operation IN_PROGRESS until the rollout completes.

// maxValidationAttempts is how many times a validation instance may crash
// before its definition is refused.
const maxValidationAttempts = 3

// validationOutcome is what a pass decided for an LRP's validating
// operation: to start it (validated), to end it, and history lines. One
// that neither starts nor ends it leaves the validation under way: then
// instance is what the pass saw of its instance, which finishValidations
// completes once placement has run and diagnoses (DiagnoseValidation).
type validationOutcome struct {
	start   bool
	failed  bool // validation refused the definition
	status  models.Operation_Status
	reason  string
	history []string

	op       *OperationRow
	instance WaitingInstance
}

// validatingOperation is the LRP's VALIDATE operation under way whose
// definition is not active yet, or nil.
func (p *planner) validatingOperation(d *DesiredSchedule) *OperationRow {
	for _, op := range p.operations[d.ProcessGuid] {
		if op.Kind == models.Operation_VALIDATE && op.Status == models.Operation_IN_PROGRESS &&
			op.DefinitionID != d.ActiveDefinitionID {
			return op
		}
	}
	return nil
}

// withoutValidation splits the validation instances' rows off rows (an
// LRP's rows in key order).
func withoutValidation(rows []row) (regular, validation []row) {
	return splitOff(rows, models.IsValidationIndex)
}

// splitOff splits the rows whose index is one of those set apart (is)
// off rows (an LRP's rows in key order), keeping the order of both.
func splitOff(rows []row, is func(index int32) bool) (regular, apart []row) {
	for i := range rows {
		if is(rows[i].Index) {
			apart = append(apart, rows[i])
		}
	}
	if len(apart) == 0 {
		return rows, nil
	}
	regular = make([]row, 0, len(rows)-len(apart))
	for i := range rows {
		if !is(rows[i].Index) {
			regular = append(regular, rows[i])
		}
	}
	return regular, apart
}

// reconcileValidation decides for the LRP's validation instances (rows)
// and its validation under way, if any.
func (p *planner) reconcileValidation(d *DesiredSchedule, rows []row) {
	op := p.validatingOperation(d)
	var v *row
	for i := range rows {
		r := &rows[i]
		switch {
		case op == nil:
			p.delete(r, "a validation instance, and no validation of the LRP is under way")
		case r.Presence != ordinary || r.DefinitionID != op.DefinitionID || v != nil:
			p.delete(r, "a validation instance of no validation under way")
		default:
			v = r
		}
	}
	if op == nil {
		return
	}
	out := &validationOutcome{op: op, instance: WaitingInstance{Index: models.ValidationIndex}}
	p.validations[d.ProcessGuid] = out
	underWay := func() {
		if v != nil {
			out.instance.CrashReason = v.CrashReason
			p.noteCheckFailure(&out.instance, v)
		}
		p.underWay = append(p.underWay, out)
	}
	schedule := *d
	schedule.ActiveDefinitionID, schedule.MemoryMB, schedule.DiskMB = op.DefinitionID, op.MemoryMB, op.DiskMB
	switch {
	case !op.DefinitionStored:
		if v != nil {
			p.delete(v, "its definition was cleaned up")
		}
		out.status, out.reason = models.Operation_ERROR, fmt.Sprintf("its definition %s was cleaned up", op.DefinitionID)
	case v == nil:
		p.create(&schedule, models.ValidationIndex, fmt.Sprintf("validates %s before it becomes active", op.DefinitionID))
		underWay()
	case v.State == running:
		p.delete(v, fmt.Sprintf("validated: %s is healthy and becomes active", op.DefinitionID))
		out.start = true
		out.history = append(out.history, fmt.Sprintf("validated: an instance of %s became healthy on cell %s", op.DefinitionID, v.CellID))
	case v.State == crashed && v.CrashCount >= maxValidationAttempts:
		p.delete(v, "its validation failed")
		out.status, out.failed = models.Operation_ERROR, true
		out.reason = fmt.Sprintf("validation of %s failed: its instance crashed %d times, last: %s", op.DefinitionID, v.CrashCount, v.CrashReason)
	case v.State == crashed:
		why := fmt.Sprintf("attempt %d of %d crashed: %s", v.CrashCount, maxValidationAttempts, v.CrashReason)
		out.history = append(out.history, why)
		underWay()
		p.restart(v, "validation "+why+"; restarts at once")
		p.requestPlace(v, whyRestarted, true, noCell)
	default:
		underWay()
		p.reconcileOrdinary(&schedule, v)
	}
}

// finishValidations gives each validation this pass leaves under way its
// blocked_by (DiagnoseValidation), once placement has said whether its
// instance found a cell, and counts the blocked ones among the blocked
// operations. A blocked_by that differs from the operation's is written
// with the operation: into the write this pass already makes of it, or
// a write of its own.
func (p *planner) finishValidations() {
	if len(p.underWay) == 0 {
		return
	}
	unplaced := p.unplacedRequests()
	for _, out := range p.underWay {
		op := out.op
		if req := unplaced[unplacedKey{op.ProcessGuid, models.ValidationIndex}]; req != nil {
			p.noteUnplaced(&out.instance, req)
		}
		blocked := DiagnoseValidation(out.instance, op.DefinitionID, op.BlockedBy, p.now)
		if blocked != nil {
			p.countBlockedOperation(blocked.Reason)
		}
		if proto.Equal(blocked, op.BlockedBy) {
			continue
		}
		if i := slices.IndexFunc(p.plan.Writes.Operations, func(w OperationWrite) bool { return w.ID == op.ID }); i >= 0 {
			p.plan.Writes.Operations[i].SetBlockedBy, p.plan.Writes.Operations[i].BlockedBy = true, blocked
			continue
		}
		why := "no longer blocked"
		if blocked != nil {
			why = "blocked: " + blocked.Reason
		}
		p.operationWrite(op, OperationWrite{SetBlockedBy: true, BlockedBy: blocked}, why)
	}
}

// carryValidation is the write of this pass for op, the LRP's validating
// operation: started (validated), ended, or history; ok false when this
// pass decided nothing for it.
func (p *planner) carryValidation(op *OperationRow) (w OperationWrite, ok bool) {
	out := p.validations[op.ProcessGuid]
	if out == nil {
		return w, false
	}
	w.History = out.history
	w.Start = out.start
	w.Status, w.Reason = out.status, out.reason
	w.FailedValidation = out.failed
	return w, true
}
