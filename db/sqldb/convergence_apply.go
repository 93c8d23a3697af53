package sqldb

import (
	"context"
	"database/sql"
	"strings"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

// ApplyConvergence performs a plan's writes, group by group in the order
// documented on convergence.ConvergenceWrites, each group in transactions of at
// most batchSize rows. convergence/doc.go says what each write does.
//
// Every write is conditional on the row version the plan saw. A batch's
// transaction first reads its rows with a row lock (SQLite has a single
// writer instead); writes whose row is gone or no longer at that state and
// modification index are skipped and counted, so are presence changes
// whose target key is taken, and the rest are written in one statement.
// Creates insert only keys that are free. Every applied write moves the
// row's modification index on by exactly one, which is how the second of
// two writes to one row (Restart then Place) finds the version the first
// one left. When a concurrent writer gets in between the read and the
// write after all (an insert taking a free key), the batch runs again and
// the next attempt skips that write.
//
// Events, published after each batch commits: actual_lrp_removed with the
// row as it was for a Delete, actual_lrp_created for a Create, and
// actual_lrp_changed with the row before and after for the rest of the
// row writes (Retire, RequestStop and Redefine included). Rollout writes
// and definition deletes are described in convergence_rollouts.go,
// operation writes in convergence_operations.go, autoscale writes (the
// first group) in convergence_autoscale.go.
//
// Writes that could never be right (an empty guid, a Restart of a row the
// plan did not see CRASHED, a Place without a cell, an operation status
// change that models.CheckOperationTransition forbids, …) fail the whole
// call with InvalidRequest before anything is written. An error from the
// database stops the call; the batches committed before it stay, counted
// in the result returned with the error.
//
// Decisions where the planner is silent: Restart and Unassign also clear
// routable and occupied, which describe the instance that is gone;
// PlacementFailed keeps since, as the state does not change. Retire keeps
// the instance's net info, routable and occupied (it still serves); a
// Retire's target key, like a presence change's, must be free. Retire's
// two kinds (Stop or not) apply as two groups, the ones that keep running
// first.
func (s *SQLDB) ApplyConvergence(ctx context.Context, writes *convergence.ConvergenceWrites) (*convergence.ConvergenceResult, error) {
	result := &convergence.ConvergenceResult{}
	if writes == nil || writes.Empty() {
		return result, nil
	}
	if err := checkConvergenceWrites(writes); err != nil {
		return nil, err
	}
	a := &convergenceApplier{s: s, now: s.now().UnixNano(), result: result, guard: placementGuard{expected: writes.PlacementEpoch}}
	if err := a.checkOperationTransitions(ctx, writes.Operations); err != nil {
		return nil, err
	}
	keep, stop := retirementChanges(writes.Retire)
	err := a.autoscale(ctx, writes.Autoscale)
	if err == nil {
		err = a.changeGroups(ctx, []changeGroup{
			{&deleteRows, plainChanges(writes.Delete)},
			{&promoteRows, plainChanges(writes.Promote)},
			{&markSuspects, plainChanges(writes.MarkSuspect)},
			{&retireKeepRunning, keep},
			{&retireStop, stop},
			{&requestStops, plainChanges(writes.RequestStop)},
		})
	}
	if err == nil {
		err = a.createRows(ctx, writes.Create)
	}
	if err == nil {
		err = a.changeGroups(ctx, []changeGroup{
			{&restartRows, plainChanges(writes.Restart)},
			{&redefineRows, redefinitionChanges(writes.Redefine)},
			{&unassignRows, plainChanges(writes.Unassign)},
			{&placeRows, placementChanges(writes.Place)},
			{&failPlacements, placementFailureChanges(writes.PlacementFailed)},
		})
	}
	if err == nil {
		err = a.rollouts(ctx, writes.Rollouts)
	}
	if err == nil {
		err = a.deleteDefinitions(ctx, writes.DeleteDefinitions)
	}
	if err == nil {
		err = a.operations(ctx, writes.Operations)
	}
	if !a.guard.stale {
		result.PlacementEpoch = a.guard.expected
	}
	return result, err
}

type convergenceApplier struct {
	s      *SQLDB
	now    int64
	result *convergence.ConvergenceResult
	guard  placementGuard
}

// rowChange is one write to an existing row: the version the plan saw and,
// for the kinds that set a value per row, that value (Place's cell id,
// PlacementFailed's reason, Redefine's definition id).
type rowChange struct {
	version convergence.RowVersion
	value   string
}

func plainChanges(versions []convergence.RowVersion) []rowChange {
	changes := make([]rowChange, len(versions))
	for i, v := range versions {
		changes[i].version = v
	}
	return changes
}

func placementChanges(placements []convergence.Placement) []rowChange {
	changes := make([]rowChange, len(placements))
	for i, p := range placements {
		changes[i] = rowChange{version: p.Row, value: p.CellID}
	}
	return changes
}

// retirementChanges splits retirements into those whose instance keeps
// serving until its successor is ready and those stopped at once: each
// kind sets its own stop_requested.
func retirementChanges(retirements []convergence.Retirement) (keep, stop []rowChange) {
	for _, r := range retirements {
		if r.Stop {
			stop = append(stop, rowChange{version: r.Row})
		} else {
			keep = append(keep, rowChange{version: r.Row})
		}
	}
	return keep, stop
}

func redefinitionChanges(redefinitions []convergence.Redefinition) []rowChange {
	changes := make([]rowChange, len(redefinitions))
	for i, r := range redefinitions {
		changes[i] = rowChange{version: r.Row, value: r.DefinitionID}
	}
	return changes
}

func placementFailureChanges(failures []convergence.PlacementFailure) []rowChange {
	changes := make([]rowChange, len(failures))
	for i, f := range failures {
		changes[i] = rowChange{version: f.Row, value: f.Reason}
	}
	return changes
}

// changeKind is what one group of writes does to its rows.
type changeKind struct {
	op      string
	deletes bool
	// places: the writes give rows a cell, under the placement epoch.
	places bool
	// toPresence, when set, is the presence the row moves to; its target
	// key must be free.
	toPresence models.ActualLRP_Presence
	// column, when set, is the column each write sets to its own value.
	column string
	// set is the SET clause besides column and the modification index;
	// its ? are bound to setArgs. It writes the effect that effect
	// describes; the differential test holds the two equal.
	set     string
	setArgs func(now int64) []any
	// effect is the write's effect on the row (one of package
	// convergence's), for the changed event's row after the write.
	effect func(r convergence.ActualRow, value string, now int64) convergence.ActualRow
}

var (
	deleteRows = changeKind{op: "delete", deletes: true}

	// promoteRows: a SUSPECT row whose cell came back, or a RETIRING row
	// on the definition that is active again, is the ORDINARY instance once
	// more. A RETIRING row is promoted only before it was told to stop.
	promoteRows = changeKind{
		op:         "promote",
		toPresence: models.ActualLRP_ORDINARY,
		set:        "presence = ?, stop_requested = ?",
		setArgs:    func(int64) []any { return []any{presenceOrdinary, false} },
		effect:     func(r convergence.ActualRow, _ string, _ int64) convergence.ActualRow { return convergence.Promoted(r) },
	}

	markSuspects = changeKind{
		op:         "mark suspect",
		toPresence: models.ActualLRP_SUSPECT,
		set:        "presence = ?",
		setArgs:    func(int64) []any { return []any{models.ActualLRP_SUSPECT.String()} },
		effect: func(r convergence.ActualRow, _ string, _ int64) convergence.ActualRow {
			return convergence.MarkedSuspect(r)
		},
	}

	retireKeepRunning = retiring(false)
	retireStop        = retiring(true)

	requestStops = changeKind{
		op:      "request stop",
		set:     "stop_requested = ?, since = ?",
		setArgs: func(now int64) []any { return []any{true, now} },
		effect: func(r convergence.ActualRow, _ string, now int64) convergence.ActualRow {
			return convergence.StopRequestedAt(r, now)
		},
	}

	restartRows  = unassigning("restart")
	unassignRows = unassigning("unassign")

	// redefineRows: the instance that ran the row, if any, sees its row
	// taken (another definition, no instance) and stops.
	redefineRows = changeKind{
		op:     "redefine",
		column: "definition_id",
		set: "state = ?, cell_id = '', instance_guid = '', net_info = NULL, route_ports = NULL, crash_count = 0, crash_reason = '', " +
			"placement_error = '', routable = ?, occupied = ?, since = ?",
		setArgs: func(now int64) []any { return []any{stateUnclaimed, false, false, now} },
		effect:  convergence.Redefined,
	}

	placeRows = changeKind{
		op:      "place",
		places:  true,
		column:  "cell_id",
		set:     "placement_error = '', since = ?",
		setArgs: func(now int64) []any { return []any{now} },
		effect:  convergence.Placed,
	}

	failPlacements = changeKind{
		op:      "record placement failure",
		column:  "placement_error",
		set:     "cell_id = ''",
		setArgs: func(int64) []any { return nil },
		effect: func(r convergence.ActualRow, reason string, _ int64) convergence.ActualRow {
			return convergence.PlacementFailedFor(r, reason)
		},
	}
)

// retiring makes a RUNNING ORDINARY row the index's RETIRING row: the
// same instance, still serving, its clock restarted; stop tells its rep to
// drain and remove it at once.
func retiring(stop bool) changeKind {
	return changeKind{
		op:         "retire",
		toPresence: models.ActualLRP_RETIRING,
		set:        "presence = ?, stop_requested = ?, since = ?",
		setArgs:    func(now int64) []any { return []any{models.ActualLRP_RETIRING.String(), stop, now} },
		effect: func(r convergence.ActualRow, _ string, now int64) convergence.ActualRow {
			return convergence.Retired(r, stop, now)
		},
	}
}

// unassigning makes a row UNCLAIMED without a cell or an instance: Restart
// (from CRASHED, crash count kept) and Unassign do the same to the row.
func unassigning(op string) changeKind {
	return changeKind{
		op: op,
		set: "state = ?, cell_id = '', instance_guid = '', net_info = NULL, route_ports = NULL, routable = ?, occupied = ?, " +
			"since = ?",
		setArgs: func(now int64) []any { return []any{stateUnclaimed, false, false, now} },
		effect: func(r convergence.ActualRow, _ string, now int64) convergence.ActualRow {
			return convergence.Unassigned(r, now)
		},
	}
}

// changeGroup is one group of writes to existing rows.
type changeGroup struct {
	kind    *changeKind
	changes []rowChange
}

// changeGroups applies the groups one after the other, each in batches.
func (a *convergenceApplier) changeGroups(ctx context.Context, groups []changeGroup) error {
	for _, g := range groups {
		if err := a.changeRows(ctx, g.kind, g.changes); err != nil {
			return err
		}
	}
	return nil
}

func (a *convergenceApplier) changeRows(ctx context.Context, kind *changeKind, changes []rowChange) error {
	for len(changes) > 0 {
		n := convergenceBatchLen(len(changes), func(i int) models.ActualLRPKey { return changes[i].version.Key })
		applied, err := a.changeBatch(ctx, kind, changes[:n])
		if err != nil {
			return err
		}
		a.result.Applied += applied
		a.result.Skipped += n - applied
		changes = changes[n:]
	}
	return nil
}

// convergenceBatchLen is how many of the next writes go into one batch: at
// most batchSize, and no key twice, so that a row named twice in a group
// sees the first write's result (and is skipped, its version gone).
func convergenceBatchLen(n int, key func(i int) models.ActualLRPKey) int {
	limit := min(n, batchSize)
	seen := make(map[models.ActualLRPKey]struct{}, limit)
	for i := range limit {
		k := key(i)
		if _, dup := seen[k]; dup {
			return i
		}
		seen[k] = struct{}{}
	}
	return limit
}

func (a *convergenceApplier) changeBatch(ctx context.Context, kind *changeKind, batch []rowChange) (int, error) {
	s := a.s
	keys := make([]models.ActualLRPKey, 0, 2*len(batch))
	for _, c := range batch {
		keys = append(keys, c.version.Key)
		if kind.toPresence != 0 {
			keys = append(keys, movedKey(c.version.Key, kind.toPresence))
		}
	}
	var applied int
	placed := false
	err := s.transactPublishing(ctx, "apply convergence: "+kind.op, func(tx *sql.Tx) ([]models.Event, error) {
		applied = 0
		if kind.places {
			var err error
			if placed, err = a.guard.claim(ctx, s, tx); err != nil || !placed {
				return nil, err
			}
		}
		stored, err := s.lockConvergenceRows(ctx, tx, keys)
		if err != nil {
			return nil, err
		}
		matched := make([]rowChange, 0, len(batch))
		before := make([]*models.ActualLRP, 0, len(batch))
		for _, c := range batch {
			row, ok := stored[c.version.Key]
			if !ok || row.index != c.version.ModificationIndex || row.lrp.State != c.version.State {
				continue
			}
			if kind.toPresence != 0 {
				if _, taken := stored[movedKey(c.version.Key, kind.toPresence)]; taken {
					continue
				}
			}
			matched = append(matched, c)
			before = append(before, row.lrp)
		}
		applied = len(matched)
		if len(matched) == 0 {
			return nil, nil
		}
		if err := s.writeConvergenceChanges(ctx, tx, kind, matched, before, a.now); err != nil {
			return nil, err
		}
		events := make([]models.Event, len(matched))
		for i, c := range matched {
			if kind.deletes {
				events[i] = models.ActualLRPRemoved(before[i])
				continue
			}
			after := withRow(before[i], kind.effect(actualRowOf(before[i]), c.value, a.now))
			after.ModificationTag = &models.ModificationTag{
				Epoch: before[i].GetModificationTag().GetEpoch(),
				Index: before[i].GetModificationTag().GetIndex() + 1,
			}
			events[i] = models.ActualLRPChanged(before[i], after)
		}
		return events, nil
	})
	if err != nil {
		return 0, err
	}
	if kind.places {
		a.guard.settle(placed)
	}
	return applied, nil
}

func movedKey(key models.ActualLRPKey, presence models.ActualLRP_Presence) models.ActualLRPKey {
	key.Presence = presence
	return key
}

// writeConvergenceChanges writes matched, rows this transaction has read
// and locked at the expected version (before, index for index).
func (s *SQLDB) writeConvergenceChanges(ctx context.Context, tx *sql.Tx, kind *changeKind, matched []rowChange, before []*models.ActualLRP, now int64) error {
	keys := make([]models.ActualLRPKey, len(matched))
	for i, c := range matched {
		keys[i] = c.version.Key
	}
	var query string
	var args []any
	rowsPerChange := 1
	switch {
	case kind.deletes:
		query, args = s.driver.deleteByKeys(actualLRPKeys, actualKeyArgs(keys))
	case kind.column != "":
		changes := make([]valueChange, len(matched))
		for i, c := range matched {
			changes[i] = valueChange{row: before[i], value: c.value}
		}
		query, args, rowsPerChange = s.driver.updateEachByKey(kind.column, kind.set+", "+bumpModificationIndex, kind.setArgs(now), changes)
	default:
		query, args = s.driver.updateByKeys(actualLRPKeys, kind.set+", "+bumpModificationIndex, kind.setArgs(now), actualKeyArgs(keys))
	}
	res, err := s.exec(ctx, tx, query, args...)
	if err != nil {
		if kind.toPresence != 0 && isUniqueViolation(err) {
			// The target key was free when read and taken since: run the
			// batch again, which skips this write.
			return errLostRace
		}
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if int(n) != rowsPerChange*len(matched) {
		// Cannot happen while the rows are locked; never write blind.
		return errLostRace
	}
	return nil
}

const bumpModificationIndex = "modification_tag_index = modification_tag_index + 1"

// lockedRow is a row as a batch read it, with its modification index at
// full width.
type lockedRow struct {
	lrp   *models.ActualLRP
	index int64
}

// lockConvergenceRows reads the rows with these keys, locking them for the
// rest of the transaction, by key; keys without a row are absent.
func (s *SQLDB) lockConvergenceRows(ctx context.Context, tx *sql.Tx, keys []models.ActualLRPKey) (map[models.ActualLRPKey]lockedRow, error) {
	query, args := s.driver.selectByKeys(actualLRPKeys, strings.Join(actualLRPColumns, ", "), actualKeyArgs(keys), true)
	rows, err := s.query(ctx, tx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	stored := make(map[models.ActualLRPKey]lockedRow, len(keys))
	for rows.Next() {
		lrp, index, err := scanLockedActualLRP(rows)
		if err != nil {
			return nil, err
		}
		stored[models.ActualLRPKey{ProcessGuid: lrp.ProcessGuid, Index: lrp.Index, Presence: lrp.Presence}] = lockedRow{lrp: lrp, index: index}
	}
	return stored, rows.Err()
}

// scanLockedActualLRP reads one row of actualLRPColumns and its
// modification index at full width.
func scanLockedActualLRP(rows *sql.Rows) (*models.ActualLRP, int64, error) {
	var scan actualLRPScan
	if err := rows.Scan(scan.dest()...); err != nil {
		return nil, 0, err
	}
	lrp, err := scan.lrp()
	return lrp, scan.tagIndex, err
}

// actualRowOf is the stored columns of lrp that a convergence write may
// change, as the planner sees them.
func actualRowOf(lrp *models.ActualLRP) convergence.ActualRow {
	return convergence.ActualRow{
		ProcessGuid: lrp.ProcessGuid, Index: lrp.Index, Presence: lrp.Presence, State: lrp.State, Domain: lrp.Domain,
		InstanceGuid: lrp.InstanceGuid, CellID: lrp.CellId, DefinitionID: lrp.DefinitionId, CrashCount: lrp.CrashCount,
		CrashReason: lrp.CrashReason, Since: lrp.Since, PlacementError: lrp.PlacementError, Routable: lrp.Routable,
		Occupied: lrp.Occupied, StopRequested: lrp.StopRequested,
	}
}

// withRow is a copy of lrp holding r's columns. The net info and route
// ports belong to the instance: a row left without one has none (the SET
// clauses that clear instance_guid clear them too); otherwise they are
// shared with lrp, as no write changes them in place. The modification
// tag is lrp's, for the caller to move on.
func withRow(lrp *models.ActualLRP, r convergence.ActualRow) *models.ActualLRP {
	after := &models.ActualLRP{
		ProcessGuid:     r.ProcessGuid,
		Index:           r.Index,
		Presence:        r.Presence,
		Domain:          r.Domain,
		InstanceGuid:    r.InstanceGuid,
		CellId:          r.CellID,
		DefinitionId:    r.DefinitionID,
		State:           r.State,
		NetInfo:         lrp.NetInfo,
		CrashCount:      r.CrashCount,
		CrashReason:     r.CrashReason,
		Since:           r.Since,
		PlacementError:  r.PlacementError,
		Routable:        r.Routable,
		Occupied:        r.Occupied,
		StopRequested:   r.StopRequested,
		ModificationTag: lrp.ModificationTag,
		RoutePorts:      lrp.RoutePorts,
	}
	if r.InstanceGuid == "" {
		after.NetInfo, after.RoutePorts = nil, nil
	}
	return after
}
