package convergence

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/corkboard/corkboard/models"
)

// The rollout governor bounds how many rollouts move instances at once
// across the board (Config.MaxRolloutsInFlight). A rollout is admitted
// once, by the pass that lets it start (RolloutRow.AdmittedAt), and holds
// its slot while it goes on; the others wait QUEUED, starting nothing,
// their progress deadline stopped. Admission is stored on the record so
// that a board restart, another board taking over convergence or a
// change of the limit never takes a slot back from a rollout half-way
// through: only admitting new ones waits for room.

// RolloutTurn is the governor's decision for one rollout record.
type RolloutTurn struct {
	// Admit: this pass admits the rollout (it had no slot before).
	Admit bool
	// Position is the rollout's place in the queue, from 1, and Queued
	// the queue's length; both 0 when the rollout is not queued.
	Position int32
	Queued   int32
}

// HoldsSlot reports whether the record takes one of the governor's slots:
// it was admitted and is still under way (models.RolloutUnderWay: it
// advances, or reverts), or HELD. A HOLDING or HELD rollout keeps its
// slot though nothing moves: its instances run a mix of definitions until
// a promote, a resume or a rollback, which must not wait in the queue
// behind rollouts that have not started.
func (r RolloutRow) HoldsSlot() bool {
	return r.AdmittedAt != 0 && (models.RolloutUnderWay(r.State, r.FinishedAt) || r.State == models.RolloutStatus_HELD)
}

// WantsSlot reports whether the record waits for admission: under way and
// never admitted.
func (r RolloutRow) WantsSlot() bool {
	return r.AdmittedAt == 0 && models.RolloutUnderWay(r.State, r.FinishedAt)
}

// QueueJumper reports whether the rollout is admitted whatever the limit:
// an automatic revert (REVERTED) or a fast rollback or abort (Fast). Going
// back to what ran before is never queued behind rollouts going forward;
// it still counts against the limit while it moves.
func (r RolloutRow) QueueJumper() bool {
	return r.State == models.RolloutStatus_REVERTED || r.Fast
}

// Queued reports whether the governor keeps the rollout waiting.
func (r RolloutRow) Queued() bool {
	return r.QueuePosition > 0
}

// DeadlineFrom is the moment the rollout's progress deadline counts from,
// unless a staged phase says later: its last progress, or its admission
// when that came after (a rollout does not fail for the time it waited in
// the queue).
func (r RolloutRow) DeadlineFrom() int64 {
	return max(r.ProgressAt, r.AdmittedAt)
}

// SupersededAdmission is the admission a new rollout of the LRP takes over
// from r, the record it replaces (a new definition, a rollback or an
// abort mid-rollout): r's when r holds a slot — the LRP is half-way, and
// sending it to the back of the queue would leave it on a mix of
// definitions — and none otherwise (the new rollout waits its turn).
func (r RolloutRow) SupersededAdmission() int64 {
	if r.HoldsSlot() {
		return r.AdmittedAt
	}
	return 0
}

// StatusReason is the reason a rollout status shows: the queue's reason
// first while the rollout is queued, e.g. "queued: position 3 of 7
// (max_rollouts_in_flight 10); rolling from v1 to v2".
func (r RolloutRow) StatusReason() string {
	if r.Queued() && r.QueueReason != "" {
		return r.QueueReason + "; " + r.Reason
	}
	return r.Reason
}

// QueueReason is the reason a queued rollout shows, e.g. "queued: position
// 3 of 7 (max_rollouts_in_flight 10)".
func QueueReason(t RolloutTurn, limit int32) string {
	return fmt.Sprintf("queued: position %d of %d (max_rollouts_in_flight %d)", t.Position, t.Queued, limit)
}

// GovernRollouts decides, over every rollout record of the board, which
// rollouts this pass admits and where the others wait, with at most limit
// in flight (0: no limit). Records that neither hold nor want a slot get
// no turn.
//
//  1. Every record that holds a slot (HoldsSlot) counts, whatever the
//     limit: the governor never stops a rollout it admitted.
//  2. Those waiting (WantsSlot) are taken queue jumpers first (a revert,
//     a fast rollback), then by start time, then by process guid: first
//     in, first out, so none waits behind a rollout that started later.
//  3. A queue jumper is admitted at once; any other is admitted while
//     fewer than limit are in flight, and each admitted counts.
//  4. The rest are queued, at positions 1, 2, … in that order.
//
// Worked example, limit 2: a (admitted, PROGRESSING), b (started 12:01),
// c (12:02), d (12:03, a fast rollback), e (HOLDING, admitted), f
// (COMPLETE). a and e hold 2 slots; f neither holds nor wants one. In
// order d, b, c: d jumps the queue (3 in flight); b and c are queued at
// positions 1 and 2 of 2. When a completes and d finishes, 1 is in flight
// (e): b is admitted, c moves to position 1 of 1.
func GovernRollouts(records []RolloutRow, limit int32) map[string]RolloutTurn {
	turns := map[string]RolloutTurn{}
	var inFlight int32
	var waiting []*RolloutRow
	for i := range records {
		r := &records[i]
		switch {
		case r.HoldsSlot():
			inFlight++
		case r.WantsSlot():
			waiting = append(waiting, r)
		}
	}
	slices.SortFunc(waiting, func(a, b *RolloutRow) int {
		if a.QueueJumper() != b.QueueJumper() {
			if a.QueueJumper() {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.StartedAt, b.StartedAt), strings.Compare(a.ProcessGuid, b.ProcessGuid))
	})
	var queued []*RolloutRow
	for _, r := range waiting {
		if r.QueueJumper() || limit <= 0 || inFlight < limit {
			turns[r.ProcessGuid] = RolloutTurn{Admit: true}
			inFlight++
			continue
		}
		queued = append(queued, r)
	}
	for i, r := range queued {
		turns[r.ProcessGuid] = RolloutTurn{Position: int32(i + 1), Queued: int32(len(queued))}
	}
	return turns
}
