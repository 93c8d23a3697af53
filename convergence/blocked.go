package convergence

import (
	"fmt"
	"strings"
	"time"

	"github.com/corkboard/corkboard/models"
)

// Why a rollout is stuck (docs/rollouts.md "Why a rollout is stuck"). Every
// pass that leaves a rollout under way asks DiagnoseRollout what holds it,
// from what the pass saw (RolloutSituation), and stores the answer on the
// rollout's record as its blocked_by: cork, the dashboard, the event
// stream and the corkboard_blocked metric show that one answer.

// RolloutSituation is what one pass saw of a rollout that is still under
// way after it: the input of DiagnoseRollout. The planner fills it in
// (blockedSituation); a test writes it out.
type RolloutSituation struct {
	// Turn is the rollout governor's decision (Position > 0: queued) and
	// Limit the board's max_rollouts_in_flight.
	Turn  RolloutTurn
	Limit int32
	// FrozenBy names the freeze window that holds the rollout this pass,
	// "" for none, and FrozenUntil (Unix nanoseconds) is when it ends.
	FrozenBy    string
	FrozenUntil int64
	// Holding: a staged phase waits for a promote; HoldingReason is the
	// record's reason ("holding at 2 of 10 (20%) on v2: promote to go on").
	Holding       bool
	HoldingReason string
	// BakeUntil (Unix nanoseconds) is when the bake ends, 0 when the
	// rollout does not bake.
	BakeUntil int64
	// Definition is the definition the rollout moves to.
	Definition string
	// Waiting are the wanted indices that do not count as updated yet and
	// that something is known of, in index order: an ORDINARY row of the
	// rollout's definition that does not serve for min_ready, a SUSPECT
	// row, or an instance this pass could not place.
	Waiting []WaitingInstance
	// BudgetHeldBy, when the LRP's disruption budget (or its budget
	// group's) is spent so that the rollout may start no replacement, says
	// what holds it (DisruptionBudget.Holds, "budget " + GroupBudget.Holds);
	// "" otherwise.
	BudgetHeldBy string
}

// WaitingInstance is one index of a rollout's definition that does not
// count as updated: what its row says, and what placing it said this pass.
type WaitingInstance struct {
	Index int32
	// Unplaced: this pass found no cell for it. RefusedByTags: no present
	// cell has the LRP's placement tags (Tags); otherwise Short says, zone
	// by zone, what no cell of the zone has enough of.
	Unplaced      bool
	RefusedByTags bool
	Tags          []string
	Short         []ZoneShortfall
	// NoFit is why no cell fits it when no zone is short of anything: its
	// placement error (explainNoFit), e.g. every present cell is draining
	// or quarantined, no cell is present, the cells' start limits.
	NoFit string
	// LostCell names the cell its instance was on when that cell is not
	// present (a SUSPECT row, or a claimed or running row whose cell's
	// presence ran out).
	LostCell string
	// CrashReason is the reason of its last crash, "" for none.
	CrashReason string
	// CheckFailure is what its failing health check said, "" when none
	// fails (CheckFailing).
	CheckFailure string
	// ReadyAt (Unix nanoseconds) is when it counts as updated, for an
	// instance that serves but has not served for min_ready yet; 0
	// otherwise.
	ReadyAt int64
}

// ZoneShortfall is what no cell of one zone has enough of for an
// instance: "memory", "disk" or "instances" (a free instance slot), with
// the most any cell of the zone has free and what the instance needs.
type ZoneShortfall struct {
	Zone       string
	Short      string
	Free, Need int64
}

// DiagnoseRollout says what holds a rollout under way, nil when nothing
// does. The first cause that applies, in this order, is the answer:
//
//  1. queued by the governor: its position in the queue;
//  2. frozen: the window and its end (estimate: the end);
//  3. awaiting promote: a staged phase holds at its target;
//  4. baking: every index runs the definition (estimate: the bake's end);
//  5. a waiting index, the first in index order of the first of these
//     that any has: placement refused by tags, no capacity (each zone and
//     what it is short of), cell unreachable, asset download failing (the
//     last crash's error), start failing (the last crash is another start
//     its rep could not make: the action's path missing, the cell's port
//     range exhausted; its error), health check failing (the failing check's
//     output its cell reports of the instance, before any crash, else
//     the last crash's check output);
//  6. waiting for min-ready: an index serves but not for min_ready yet
//     (estimate: the earliest such index counts);
//  7. budget exhausted: the LRP's disruption budget is spent, and which
//     disruption holds it. Last, because an index of steps 5 and 6 is
//     itself a disruption that holds the budget: its cause is the one to
//     act on.
//
// The rollout-wide causes come first: while one holds, the waiting
// indices wait on it. Since is previous's since when previous has the same
// reason (the first pass that saw it), now otherwise.
//
// Worked example, now 12:00, index 0 updated, index 1 UNCLAIMED and
// placed nowhere (zone z1 has 512 MB free at most, 1024 needed), index 2
// CRASHED with "did not become healthy within 60s: GET /health on port
// 8080: 503", previous {no_capacity, since 11:52}: no rollout-wide cause;
// among the waiting indices, no capacity comes before a failing health
// check, so {no_capacity, "index 1 fits no cell: zone z1 is short of
// memory (512 MB free at most, 1024 MB needed)", since 11:52, estimate 0}.
// Once index 1 is placed, the next pass answers health_check_failing,
// since 12:00 (or later).
func DiagnoseRollout(s RolloutSituation, previous *models.BlockedBy, now int64) *models.BlockedBy {
	b := diagnose(s)
	if b == nil {
		return nil
	}
	b.Since = now
	if previous.GetReason() == b.Reason && previous.GetSince() != 0 {
		b.Since = previous.GetSince()
	}
	return b
}

// diagnose is DiagnoseRollout without since.
func diagnose(s RolloutSituation) *models.BlockedBy {
	switch {
	case s.Turn.Position > 0:
		return &models.BlockedBy{Reason: models.BlockedQueued, Detail: QueueReason(s.Turn, s.Limit)}
	case s.FrozenBy != "":
		return &models.BlockedBy{Reason: models.BlockedFrozen, Estimate: s.FrozenUntil,
			Detail: fmt.Sprintf("freeze window %s holds it until %s", s.FrozenBy, time.Unix(0, s.FrozenUntil).UTC().Format(time.RFC3339))}
	case s.Holding:
		return &models.BlockedBy{Reason: models.BlockedAwaitingPromote, Detail: s.HoldingReason}
	case s.BakeUntil != 0:
		return &models.BlockedBy{Reason: models.BlockedBaking, Estimate: s.BakeUntil,
			Detail: fmt.Sprintf("every index runs %s; the bake ends at %s", s.Definition, time.Unix(0, s.BakeUntil).UTC().Format(time.RFC3339))}
	}
	for _, cause := range instanceCauses {
		var first *WaitingInstance
		var detail string
		n := 0
		for i := range s.Waiting {
			if d, ok := cause.holds(&s.Waiting[i]); ok {
				if first == nil {
					first, detail = &s.Waiting[i], d
				}
				n++
			}
		}
		if first == nil {
			continue
		}
		detail = instanceName(first.Index) + detail
		if n > 1 {
			detail += fmt.Sprintf(" (and %d more)", n-1)
		}
		return &models.BlockedBy{Reason: cause.reason, Detail: detail}
	}
	var ready *WaitingInstance
	for i := range s.Waiting {
		if w := &s.Waiting[i]; w.ReadyAt != 0 && (ready == nil || w.ReadyAt < ready.ReadyAt) {
			ready = w
		}
	}
	if ready != nil {
		return &models.BlockedBy{Reason: models.BlockedMinReady, Estimate: ready.ReadyAt,
			Detail: fmt.Sprintf("index %d serves and counts as updated at %s (min_ready)", ready.Index, time.Unix(0, ready.ReadyAt).UTC().Format(time.RFC3339))}
	}
	if s.BudgetHeldBy != "" {
		return &models.BlockedBy{Reason: models.BlockedBudgetExhausted, Detail: "disruption " + s.BudgetHeldBy}
	}
	return nil
}

// DiagnoseValidation says what holds a validation under way (an update
// with validate, validation.go), nil when nothing does: its one instance,
// w, at models.ValidationIndex, of definition, judged as a rollout's
// waiting index is (step 5 of DiagnoseRollout; no rollout-wide cause
// applies to a validation, and its instance is never routable, so it is
// never waiting for min-ready). Since is previous's since when previous
// has the same reason, now otherwise.
//
// Worked example, now 12:00, hello updated to v2 with validate, v2 needs
// 4096 MB and zone z1's cells have 1024 MB free at most: the pass creates
// the validation instance and places it nowhere, so w is {Unplaced, Short:
// [z1 memory 1024 of 4096]} and the answer is {no_capacity, "the
// validation instance fits no cell: zone z1 is short of memory (1024 MB
// free at most, 4096 MB needed)", since 12:00}. A cell with room joins;
// the next pass places the instance and answers nil, which the operation
// records.
func DiagnoseValidation(w WaitingInstance, definition string, previous *models.BlockedBy, now int64) *models.BlockedBy {
	return DiagnoseRollout(RolloutSituation{Definition: definition, Waiting: []WaitingInstance{w}}, previous, now)
}

// instanceName names an index in a blocked_by's detail: "index 3", or
// "the validation instance".
func instanceName(index int32) string {
	if models.IsValidationIndex(index) {
		return "the validation instance"
	}
	return fmt.Sprintf("index %d", index)
}

// instanceCause is one cause a waiting index can have: holds reports
// whether the index has it and says so, right after "index N" (its words
// begin with their own separator: " fits no cell", ": health check
// failing").
type instanceCause struct {
	reason string
	holds  func(w *WaitingInstance) (string, bool)
}

// instanceCauses are the causes of step 5 of DiagnoseRollout, in order.
var instanceCauses = []instanceCause{
	{models.BlockedPlacementRefused, func(w *WaitingInstance) (string, bool) {
		return " fits no cell: no present cell has tags [" + strings.Join(w.Tags, " ") + "]", w.Unplaced && w.RefusedByTags
	}},
	{models.BlockedNoCapacity, func(w *WaitingInstance) (string, bool) {
		if !w.Unplaced || w.RefusedByTags {
			return "", false
		}
		if len(w.Short) == 0 {
			if w.NoFit != "" {
				return " fits no cell: " + w.NoFit, true
			}
			return " fits no cell: no present cell takes instances", true
		}
		zones := make([]string, len(w.Short))
		for i, z := range w.Short {
			zones[i] = z.describe()
		}
		return " fits no cell: " + strings.Join(zones, "; "), true
	}},
	{models.BlockedCellUnreachable, func(w *WaitingInstance) (string, bool) {
		return " ran on cell " + w.LostCell + ", which is unreachable", w.LostCell != ""
	}},
	{models.BlockedDownloadFailing, func(w *WaitingInstance) (string, bool) {
		return " could not start: " + strings.TrimPrefix(w.CrashReason, models.CrashCouldNotStart),
			strings.HasPrefix(w.CrashReason, models.CrashCouldNotStart+models.CrashAsset)
	}},
	{models.BlockedStartFailing, func(w *WaitingInstance) (string, bool) {
		return " could not start: " + strings.TrimPrefix(w.CrashReason, models.CrashCouldNotStart),
			strings.HasPrefix(w.CrashReason, models.CrashCouldNotStart) && !strings.HasPrefix(w.CrashReason, models.CrashCouldNotStart+models.CrashAsset)
	}},
	{models.BlockedHealthCheck, func(w *WaitingInstance) (string, bool) {
		if w.CheckFailure != "" {
			// What it fails now comes before how an earlier start ended.
			// The detail holds no time of its own, so that it stays the
			// same while the check keeps failing the same way and the
			// record is not written again at each report: the
			// blocked_by's since says how long.
			return ": health check failing: " + w.CheckFailure, true
		}
		return " crashed: " + w.CrashReason,
			strings.HasPrefix(w.CrashReason, models.CrashNeverHealthy) || strings.HasPrefix(w.CrashReason, models.CrashHealthCheckFailed)
	}},
}

// noteUnplaced says on w why req, the placement request of its index,
// found no cell this pass.
func (p *planner) noteUnplaced(w *WaitingInstance, req *request) {
	elig := p.placer.lrps[req.lrp].elig
	w.Unplaced = true
	w.RefusedByTags = refusedByTags(p.cells, elig)
	w.Tags = elig.tags
	w.Short = zoneShortfalls(p.cells, elig, req.need)
	if len(w.Short) == 0 {
		w.NoFit = req.failure
	}
}

// checkKey names one index of one definition of an LRP.
type checkKey struct {
	guid, definition string
	index            int32
}

// RecentCheckFailure is how recent a reported failing health check must
// be to say why an instance waits. A rep reports an instance's failing
// check with every health report (every 10 s by default) while the
// check fails, and without it once a check passes; a failure not
// reported again for a minute is one the board has heard nothing of since
// (its cell reports no more, or the report was lost), not one it knows
// to go on.
const RecentCheckFailure = time.Minute

// CheckFailing says whether f, the failing check a cell last reported of
// an index, says why the index's row r waits at now: it is of the row's
// start (the same instance guid), the row's instance runs (CLAIMED: it
// starts, its startup checks fail; RUNNING: it served, its checks fail),
// the check ran since the row's last change (its claim, or its becoming
// healthy: a failure before that was answered by the change), and within
// RecentCheckFailure of now.
//
// Worked example, now 12:00:30, RecentCheckFailure 1 minute, index 3
// CLAIMED since 12:00:00 as instance g3:
//
//  1. g3's check at 12:00:25 failed ("GET http://10.0.0.1:61001/health:
//     503 Service Unavailable", failing since 12:00:13): it says why,
//     the detail "index 3: health check failing: GET
//     http://10.0.0.1:61001/health: 503 Service Unavailable".
//  2. The same failure of g2, an earlier start: no.
//  3. g3's check at 11:59:50, before its claim: no.
//  4. Now 12:01:30, nothing reported since the 12:00:25 failure: no.
//  5. The row CRASHED: no (its crash reason speaks for it).
func CheckFailing(r *ActualRow, f *models.CheckFailure, now int64) bool {
	return f != nil && f.Output != "" &&
		f.InstanceGuid == r.InstanceGuid &&
		(r.State == models.ActualLRP_CLAIMED || r.State == models.ActualLRP_RUNNING) &&
		f.At >= r.Since &&
		now-f.At <= int64(RecentCheckFailure)
}

// loadCheckFailures keys the snapshot's failing checks by instance.
func (p *planner) loadCheckFailures(failures []models.CheckFailure) {
	p.checkFailures = make(map[checkKey]*models.CheckFailure, len(failures))
	for i := range failures {
		f := &failures[i]
		p.checkFailures[checkKey{f.ProcessGuid, f.DefinitionID, f.Index}] = f
	}
}

// noteCheckFailure gives w the failing check of r, its row, when one
// says why it waits (CheckFailing).
func (p *planner) noteCheckFailure(w *WaitingInstance, r *row) {
	f := p.checkFailures[checkKey{r.ProcessGuid, r.DefinitionID, r.Index}]
	if !CheckFailing(r.ActualRow, f, p.now) {
		return
	}
	w.CheckFailure = f.Output
}

// describe says what a zone is short of: "zone z1 is short of memory (512
// MB free at most, 1024 MB needed)".
func (z ZoneShortfall) describe() string {
	if z.Short == "instances" {
		return "zone " + z.Zone + " has no free instance slot"
	}
	return fmt.Sprintf("zone %s is short of %s (%d MB free at most, %d MB needed)", z.Zone, z.Short, z.Free, z.Need)
}

// pendingRollout is a rollout record finishRollout decided, but whose
// write waits for placement: next is the record as the pass leaves it
// but for its blocked_by, write the write (Record unset), at its place in
// Writes.Rollouts, rows all the LRP's rows.
type pendingRollout struct {
	ro        *rolloutLRP
	instances int32
	rows      []row
	next      RolloutRow
	write     RolloutWrite
	at        int
}

// finishBlocked, once placement is done, gives every record finishRollout
// left under way its blocked_by (DiagnoseRollout), counts the blocked
// ones, and keeps the write of each record that changed, or is settled or
// moves a definition; the others are dropped, as before blocked_by, so a
// rollout that stays blocked by the same cause is not written again.
func (p *planner) finishBlocked() {
	if len(p.blocked) == 0 {
		return
	}
	unplaced := p.unplacedRequests()
	drop := map[int]bool{}
	for i := range p.blocked {
		pr := &p.blocked[i]
		next, rec, write := pr.next, pr.ro.record, pr.write
		next.BlockedBy = nil
		if models.RolloutUnderWay(next.State, next.FinishedAt) {
			var previous *models.BlockedBy
			if rec != nil && rec.DefinitionID == next.DefinitionID && rec.StartedAt == next.StartedAt {
				previous = rec.BlockedBy
			}
			next.BlockedBy = DiagnoseRollout(p.blockedSituation(pr, &next, unplaced), previous, p.now)
			p.countBlocked(&next)
		}
		if rec != nil && next.Equal(*rec) && !write.Settled && write.SetActiveDefinitionID == "" {
			drop[pr.at] = true
			continue
		}
		next.ModificationIndex = 0
		write.Record = next
		p.plan.Writes.Rollouts[pr.at] = write
	}
	if len(drop) == 0 {
		return
	}
	w, r := p.plan.Writes.Rollouts[:0], p.plan.Reasons.Rollouts[:0]
	for i := range p.plan.Writes.Rollouts {
		if !drop[i] {
			w = append(w, p.plan.Writes.Rollouts[i])
			r = append(r, p.plan.Reasons.Rollouts[i])
		}
	}
	p.plan.Writes.Rollouts, p.plan.Reasons.Rollouts = w, r
}

// countBlocked counts a blocked rollout, its record next, in the plan's
// Counts: by reason, its operation (if one started it) by reason, and
// among those blocked for Config.BlockedAlertAfter or longer.
func (p *planner) countBlocked(next *RolloutRow) {
	b := next.BlockedBy
	if b == nil {
		return
	}
	c := &p.plan.Counts
	if c.RolloutsBlocked == nil {
		c.RolloutsBlocked = map[string]int{}
	}
	c.RolloutsBlocked[b.Reason]++
	if next.OperationID != "" {
		p.countBlockedOperation(b.Reason)
	}
	if after := p.cfg.BlockedAlertAfter; after > 0 && p.now-b.Since >= int64(after) {
		c.RolloutsBlockedTooLong++
	}
}

// countBlockedOperation counts an operation under way that reason holds
// (its rollout's, or its validation's) in the plan's Counts.
func (p *planner) countBlockedOperation(reason string) {
	c := &p.plan.Counts
	if c.OperationsBlocked == nil {
		c.OperationsBlocked = map[string]int{}
	}
	c.OperationsBlocked[reason]++
}

// unplacedKey names one index of one LRP.
type unplacedKey struct {
	guid  string
	index int32
}

// unplacedRequests are this pass's placement requests that found no cell,
// by LRP and index.
func (p *planner) unplacedRequests() map[unplacedKey]*request {
	out := map[unplacedKey]*request{}
	for i := range p.placer.requests {
		r := &p.placer.requests[i]
		if r.cell != noCell {
			continue
		}
		if r.create >= 0 {
			c := &p.plan.Writes.Create[r.create]
			out[unplacedKey{c.ProcessGuid, c.Index}] = r
		} else {
			out[unplacedKey{r.row.ProcessGuid, r.row.Index}] = r
		}
	}
	return out
}

// blockedSituation is what this pass saw of the rollout pr, whose record
// it leaves as next (blocked_by aside).
func (p *planner) blockedSituation(pr *pendingRollout, next *RolloutRow, unplaced map[unplacedKey]*request) RolloutSituation {
	ro, d := pr.ro, pr.ro.d
	s := RolloutSituation{Turn: ro.turn, Limit: p.cfg.MaxRolloutsInFlight, BakeUntil: ro.bakeUntil, Definition: next.DefinitionID}
	if ro.frozen && next.State == models.RolloutStatus_PROGRESSING {
		s.FrozenBy, s.FrozenUntil = p.freeze.GetName(), p.freezeUntil.UnixNano()
	}
	if next.State == models.RolloutStatus_HOLDING {
		s.Holding, s.HoldingReason = true, next.Reason
	}
	waiting := map[int32]*WaitingInstance{}
	at := func(index int32) *WaitingInstance {
		if waiting[index] == nil {
			waiting[index] = &WaitingInstance{Index: index}
		}
		return waiting[index]
	}
	minReady := int64(ro.strategy.MinReady)
	for i := range pr.rows {
		r := &pr.rows[i]
		if r.Index < 0 || r.Index >= pr.instances || ro.covered[r.Index] {
			continue
		}
		lost := r.CellID != "" && !p.cells.isPresent(r.cell) && (r.State == running || r.State == claimed)
		switch {
		case r.Presence == suspect:
			at(r.Index).LostCell = r.CellID
		case r.Presence != ordinary || r.DefinitionID != next.DefinitionID:
		case lost:
			at(r.Index).LostCell = r.CellID
		case r.State == running && r.Routable:
			if p.now-r.Since < minReady {
				at(r.Index).ReadyAt = r.Since + minReady
				p.noteCheckFailure(at(r.Index), r)
			}
		default:
			at(r.Index).CrashReason = r.CrashReason
			p.noteCheckFailure(at(r.Index), r)
		}
	}
	for index := range pr.instances {
		if req := unplaced[unplacedKey{d.ProcessGuid, index}]; req != nil {
			p.noteUnplaced(at(index), req)
		}
	}
	for index := range pr.instances {
		if w := waiting[index]; w != nil {
			s.Waiting = append(s.Waiting, *w)
		}
	}
	if ro.budgetHeld {
		s.BudgetHeldBy = ro.budget.Holds()
		if ro.budget.Stops() > 0 {
			// Only its budget group holds it.
			s.BudgetHeldBy = "budget " + ro.group.Holds()
		}
	}
	return s
}
