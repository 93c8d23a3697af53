package convergence

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/corkboard/corkboard/models"
)

// Operations (DESIGN §6). The API writes each operation in the same
// transaction as its change; convergence carries the long ones — changes of
// definition, IN_PROGRESS while their rollout runs — to their end, keeps
// their leases, and starts the PENDING ones in their turn. For each LRP
// with operations that have not ended:
//
//   - The operation whose rollout record this pass writes follows the
//     record: progress appends "3 of 10 instances on v2" to its history;
//     COMPLETE finishes it; FAILED ends it in ERROR with the reason; an
//     auto-revert is a history line, and the end of the revert an ERROR
//     (the requested definition is not what runs).
//   - An IN_PROGRESS operation whose rollout ended before this pass (its
//     record settled, or the write that ended the record won and the one
//     that ended the operation lost) ends by what runs: FINISHED when its
//     definition is active and healthy, ERROR otherwise; one whose record
//     another operation started is CANCELED; one whose LRP is gone ends in
//     ERROR.
//   - Leases: the board converging (Config.Board) owns the lease of every
//     IN_PROGRESS operation it carries. It renews its own when less than
//     half the TTL is left, and adopts one whose lease expired (or that
//     nobody owned), saying in its history from whom. A lease another board
//     owns and that has not expired is left alone: that board may still
//     be at work, and within one lease TTL it either renews or is adopted.
//     So no operation stays IN_PROGRESS without a live lease for longer
//     than one TTL and one pass. A board that stops gives its own leases
//     up first (ReleaseLeases), and the next one takes them up at once.
//   - When no operation of the LRP is IN_PROGRESS after this pass, its
//     oldest PENDING one starts (the store applies the request it holds),
//     or is EVICTED if its definition was cleaned up; a removed LRP's
//     PENDING operations are EVICTED.
//
// Worked example, Config.Board "b2", lease TTL 15 s, at 12:00:30:
//
//  1. Operation A (UPDATE_DEFINITION to v2, IN_PROGRESS) is under "b1"'s lease
//     until 12:00:20: expired, so b2 adopts it — lease b2 until 12:00:45,
//     history "adopted by board b2: board b1's lease expired at 12:00:20".
//  2. This pass completes the rollout to v2: A is FINISHED instead, with
//     reason "every index runs v2" (no lease is written for an operation
//     that ends).
//  3. Operation B (UPDATE_DEFINITION to v3, PENDING, queued behind A) starts:
//     the store activates v3 and B becomes IN_PROGRESS, leased to b2 until
//     12:00:45.

// opOutcome is what the LRP's rollout did this pass to the operation that
// started it: a status it ends in (with its reason) and history lines.
type opOutcome struct {
	operationID string
	status      models.Operation_Status
	reason      string
	history     []string
}

func (o *opOutcome) note(line string) {
	o.history = append(o.history, line)
}

func (o *opOutcome) end(status models.Operation_Status, reason string) {
	o.status, o.reason = status, reason
}

// loadOperations groups the snapshot's operations by LRP, in sequence
// order.
func (p *planner) loadOperations(snapshot *Snapshot) {
	if len(snapshot.Operations) == 0 {
		return
	}
	p.operations = make(map[string][]*OperationRow)
	for i := range snapshot.Operations {
		op := &snapshot.Operations[i]
		p.operations[op.ProcessGuid] = append(p.operations[op.ProcessGuid], op)
	}
	for _, ops := range p.operations {
		slices.SortFunc(ops, func(a, b *OperationRow) int { return cmp.Compare(a.Sequence, b.Sequence) })
	}
}

// reconcileOperations decides for the operations of one LRP that have not
// ended: d is its DesiredLRP (nil when gone), ro its rollout this pass
// (nil when it takes no part in one), outcome what its rollout record did.
func (p *planner) reconcileOperations(guid string, d *DesiredSchedule, ro *rolloutLRP) {
	ops := p.operations[guid]
	if len(ops) == 0 {
		return
	}
	p.operationsSeen[guid] = true
	running := false
	var pending []*OperationRow
	for _, op := range ops {
		switch op.Status {
		case models.Operation_PENDING:
			pending = append(pending, op)
		case models.Operation_IN_PROGRESS:
			if p.carryInProgress(op, d, ro) {
				running = true
			}
		}
	}
	if running {
		// Its lease wants renewing, its end recording: a pass soon.
		p.plan.Underway = append(p.plan.Underway, guid)
	}
	for i, op := range pending {
		switch {
		case d == nil:
			p.operationWrite(op, OperationWrite{Status: models.Operation_EVICTED, Reason: "its LRP is gone"}, "its LRP is gone")
		case running || i > 0:
			// Waits its turn.
		case !op.DefinitionStored:
			reason := fmt.Sprintf("its definition %s was cleaned up", op.DefinitionID)
			p.operationWrite(op, OperationWrite{Status: models.Operation_EVICTED, Reason: reason}, reason)
		default:
			w := OperationWrite{Start: true}
			p.lease(&w)
			p.operationWrite(op, w, "its turn: no operation of the LRP is in progress")
			p.plan.Underway = append(p.plan.Underway, guid)
		}
	}
}

// carryInProgress decides for an IN_PROGRESS operation and reports
// whether it stays IN_PROGRESS after this pass.
func (p *planner) carryInProgress(op *OperationRow, d *DesiredSchedule, ro *rolloutLRP) bool {
	w := OperationWrite{}
	var rec *RolloutRow
	if ro != nil {
		rec = ro.record
	}
	validation, validating := p.carryValidation(op)
	switch {
	case d == nil:
		w.Status, w.Reason = models.Operation_ERROR, "its LRP is gone"
	case validating:
		w = validation
	case ro != nil && ro.outcome.operationID == op.ID:
		w.History = ro.outcome.history
		w.Status, w.Reason = ro.outcome.status, ro.outcome.reason
	case rec != nil && rec.OperationID != "" && rec.OperationID != op.ID:
		w.Status = models.Operation_CANCELED
		w.Reason = fmt.Sprintf("the LRP's rollout is now operation %s's", rec.OperationID)
	case rec == nil || rec.OperationID != op.ID:
		// Its rollout ended, and the record with it, before this pass.
		if op.DefinitionID != "" && d.ActiveDefinitionID == op.DefinitionID && d.HealthyDefinitionID == op.DefinitionID {
			w.Status, w.Reason = models.Operation_FINISHED, fmt.Sprintf("every index runs %s", op.DefinitionID)
		} else {
			w.Status, w.Reason = models.Operation_ERROR,
				fmt.Sprintf("its rollout to %s ended without it: %s is active", op.DefinitionID, d.ActiveDefinitionID)
		}
	}
	staying := w.Status == models.Operation_STATUS_UNKNOWN
	if staying {
		p.keepLease(op, &w)
	}
	if w.Status != models.Operation_STATUS_UNKNOWN || len(w.History) > 0 || w.LeaseOwner != "" || w.Start {
		why := w.Reason
		if why == "" && len(w.History) > 0 {
			why = w.History[len(w.History)-1]
		}
		if why == "" {
			why = "lease"
		}
		p.operationWrite(op, w, why)
	}
	return staying
}

// keepLease renews this board's lease of op when less than half of the
// TTL is left, and adopts op when its lease expired or nobody owned it.
func (p *planner) keepLease(op *OperationRow, w *OperationWrite) {
	if p.cfg.Board == "" {
		return
	}
	ttl := int64(p.cfg.OperationLeaseTTL)
	switch {
	case op.LeaseOwner == p.cfg.Board:
		// Renewed by a later pass: the LRP is Underway, so the runner
		// passes over it every RolloutInterval, well within ttl/2.
		if op.LeaseExpiresAt-p.now >= ttl/2 {
			return
		}
	case op.LeaseOwner == "":
		w.History = append(w.History, fmt.Sprintf("taken up by board %s", p.cfg.Board))
	case op.LeaseExpiresAt <= p.now:
		w.History = append(w.History, fmt.Sprintf("adopted by board %s: board %s's lease expired at %s",
			p.cfg.Board, op.LeaseOwner, time.Unix(0, op.LeaseExpiresAt).UTC().Format(time.RFC3339)))
	default:
		// Another board's live lease: adopted once it expires.
		p.wakeAt(op.LeaseExpiresAt)
		return
	}
	p.lease(w)
}

// lease makes w take this board's lease for one TTL.
func (p *planner) lease(w *OperationWrite) {
	if p.cfg.Board == "" {
		return
	}
	w.LeaseOwner = p.cfg.Board
	w.LeaseExpiresAt = p.now + int64(p.cfg.OperationLeaseTTL)
}

// cleanForgottenOperations ends the operations of LRPs that neither a
// DesiredLRP nor any row brought to reconcileLRP: the LRP is gone.
func (p *planner) cleanForgottenOperations() {
	var guids []string
	for guid := range p.operations {
		if !p.operationsSeen[guid] {
			guids = append(guids, guid)
		}
	}
	slices.Sort(guids)
	for _, guid := range guids {
		p.reconcileOperations(guid, nil, nil)
	}
}

func (p *planner) operationWrite(op *OperationRow, w OperationWrite, why string) {
	w.ID, w.ProcessGuid, w.ExpectModificationIndex = op.ID, op.ProcessGuid, op.ModificationIndex
	if models.OperationEnded(w.Status) {
		// The history tells the whole story, its end included.
		w.History = append(slices.Clip(w.History), strings.ToLower(w.Status.String())+": "+w.Reason)
	}
	p.plan.Writes.Operations = append(p.plan.Writes.Operations, w)
	p.plan.Reasons.Operations = append(p.plan.Reasons.Operations, why)
}

// ReleaseLeases is what a board that stops writes so that the board after
// it carries its operations at once: each IN_PROGRESS operation of ops
// leased to board gives its lease up (OperationWrite.ReleaseLease), with
// the line "released by board <board>: it stopped" in its history, at the
// modification index it has in ops. Left to expire, such a lease would
// hold the operation for up to a lease TTL after the next board took the
// convergence lease (keepLease leaves a live lease of another board
// alone); released, that board's first pass takes it up ("taken up by
// board …"). Operations leased to another board, or to none, are left as
// they are, and a board with no name (Config.Board empty) holds no leases.
// The writes are in ops' order.
//
// Worked example, board "b1" stopping at 12:00:30, lease TTL 15 s:
//
//  1. Operation A (UPDATE_DEFINITION to v2, IN_PROGRESS) is leased to b1
//     until 12:00:41: released — no owner, history "released by board b1:
//     it stopped".
//  2. Operation B (VALIDATE, IN_PROGRESS) is leased to b0 until 12:00:35
//     (b1 had not adopted it yet): left to b0's lease.
//  3. Operation C (UPDATE_DEFINITION to v3, PENDING) has no lease: left.
//  4. Board b2 takes the convergence lease at 12:00:31; its first pass
//     takes A up at once, where it would have waited until 12:00:41.
func ReleaseLeases(ops []OperationRow, board string) []OperationWrite {
	if board == "" {
		return nil
	}
	var writes []OperationWrite
	for _, op := range ops {
		if op.Status != models.Operation_IN_PROGRESS || op.LeaseOwner != board {
			continue
		}
		writes = append(writes, OperationWrite{
			ID: op.ID, ProcessGuid: op.ProcessGuid, ExpectModificationIndex: op.ModificationIndex,
			ReleaseLease: true,
			History:      []string{fmt.Sprintf("released by board %s: it stopped", board)},
		})
	}
	return writes
}
