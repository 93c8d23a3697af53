package sqldb

import (
	"cmp"
	"context"
	"database/sql"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ db.ConvergenceDB = (*SQLDB)(nil)

// Convergence reads plain columns only: the resources of a definition come
// from its run_infos row, never from its blob (DESIGN §3).

// The autoscaling blobs are NULL for an LRP that never set autoscaling
// and cost it nothing; the settings are decoded once per distinct value,
// the autoscaler's state once per LRP that has one.
const selectSnapshotDesired = `SELECT d.process_guid, d.domain, d.instances, d.placement_tags,
 d.active_definition_id, d.healthy_definition_id, d.update_strategy, COALESCE(r.memory_mb, 0), COALESCE(r.disk_mb, 0),
 d.modification_tag_index, d.autoscaling, d.autoscaler, d.disruption_budget, d.budget_group
 FROM desired_lrps d
 LEFT JOIN run_infos r ON r.process_guid = d.process_guid AND r.definition_id = d.active_definition_id`

// Rows carry their definition's resources, which are the active
// definition's for nearly every row: they are taken from the desired LRP
// and only the others are looked up (resolveResources), rather than
// joining 250,000 rows with run_infos.
const selectSnapshotActual = `SELECT process_guid, instance_index, presence, state, domain, instance_guid,
 cell_id, definition_id, crash_count, crash_reason, since, placement_error, routable, occupied, stop_requested,
 modification_tag_index
 FROM actual_lrps`

// Rollout records are read only while unsettled, through the index on
// (settled, process_guid): a board at rest has none to read. Definitions
// are read only for the LRPs with such a record, for cleanup.
const selectSnapshotRollouts = `SELECT ` + rolloutColumnList + ` FROM rollouts o`

const selectSnapshotDefinitions = `SELECT r.process_guid, r.definition_id, r.created_at, r.memory_mb, r.disk_mb
 FROM rollouts o JOIN run_infos r ON r.process_guid = o.process_guid`

// Operations are read only while they have not ended, through the index
// on (ended, process_guid, sequence): a board at rest has none to read.
// Whether a definition is still stored comes from a join on its key.
const selectSnapshotOperations = `SELECT o.id, o.process_guid, o.sequence, o.kind, o.status, o.definition_id,
 COALESCE(r.definition_id, ''), COALESCE(r.memory_mb, 0), COALESCE(r.disk_mb, 0), o.lease_owner, o.lease_expires_at,
 o.created_at, o.modification_index, o.blocked_by
 FROM operations o
 LEFT JOIN run_infos r ON r.process_guid = o.process_guid AND r.definition_id = o.definition_id`

const selectSnapshotCells = `SELECT cell_id, zone, memory_mb, disk_mb, max_instances, placement_tags, expires_at,
 draining, quarantined_at, quarantine_cleared_at FROM cells`

// A large board's snapshot is read in parallel parts.
var (
	// snapshotPartLRPs is how many desired LRPs make parts worth their
	// extra queries.
	snapshotPartLRPs = 10_000
	// snapshotParts is how many: one per processor, up to four.
	snapshotParts = func() int { return min(runtime.GOMAXPROCS(0), 4) }
)

// ConvergenceSnapshot reads the state convergence plans from.
//
// Desired comes in process guid order and Actual in key order (process
// guid, index, presence), the order the planner walks them in, so it need
// not sort. Guids compare as bytes on every dialect: SQLite's BINARY,
// MySQL's utf8mb4_bin and the "C" collation Postgres gives the guid columns
// (migration 0003) all order by bytes, and the primary key index delivers
// that order without a sort. Presence is the one part of the order SQL
// cannot give: it sorts names, the planner enum values, so the few rows
// that share a guid and index are put in enum order while scanning.
//
// Every LRP is read in one read-only transaction, its desired row and its
// instances alike: a view that saw an LRP's instances but not the LRP (or
// the reverse) would have the planner delete or duplicate them. A large
// board is read in parallel parts, ranges of process guids, each its own
// transaction, so different LRPs may be seen a few milliseconds apart —
// no different, for a plan whose every write is conditional, from the time
// between loading and applying it. Cells and fresh domains are read after
// every part, so that a cell is never seen older than the rows naming it:
// an instance claimed on a cell that registered while the rows were read
// must not look like one on a cell that is not present.
//
// With processGuids, only those LRPs' desired and actual rows are read, in
// IN lists of at most batchSize guids, and the snapshot is Partial; cells
// are always all read, since placement needs every cell's free capacity.
// What the other LRPs' rows use on each cell (UnreadUse) is summed in the
// same transaction as the rows read, so that the two add up to the cell's
// usage at one moment: a pass for one LRP must not overcommit a cell that
// another LRP fills.
func (s *SQLDB) ConvergenceSnapshot(ctx context.Context, processGuids []string) (*convergence.Snapshot, error) {
	// The epoch first: a placement applied after it was read makes this
	// snapshot's placements refused, whether or not its rows saw it.
	epoch, err := s.readPlacementEpoch(ctx)
	if err != nil {
		return nil, asModelError("load convergence snapshot", err)
	}
	parts, err := s.snapshotParts(ctx, processGuids)
	if err != nil {
		return nil, asModelError("load convergence snapshot", err)
	}
	partial := len(processGuids) > 0
	readers := make([]*snapshotReader, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, filters := range parts {
		readers[i] = newSnapshotReader(s)
		wg.Go(func() {
			errs[i] = s.readConsistently(ctx, func(tx *sql.Tx) error {
				if err := readers[i].readLRPs(ctx, tx, filters); err != nil {
					return err
				}
				if partial {
					return readers[i].readUnreadUse(ctx, tx)
				}
				return nil
			})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, asModelError("load convergence snapshot", err)
		}
	}
	snap := joinSnapshotParts(readers)
	if err := s.readCells(ctx, readers[0]); err != nil {
		return nil, asModelError("load convergence snapshot", err)
	}
	snap.Cells, snap.FreshDomains = readers[0].cells, readers[0].freshDomains
	snap.Partial = partial
	snap.PlacementEpoch = epoch
	for i := range snap.Cells {
		snap.Cells[i].UnreadUse = readers[0].unreadUse[snap.Cells[i].CellID]
	}
	return snap, nil
}

// unsettled narrows f to rollout records that are not settled (table
// alias o).
func (f guidFilter) unsettled() guidFilter {
	return f.and("o.settled = ?", false)
}

// unended narrows f to operations that have not ended (table alias o), in
// the words of the operations_unfinished partial index.
func (f guidFilter) unended() guidFilter {
	return f.and(operationsUnended)
}

// and adds condition, with its arguments, before f's guid condition.
func (f guidFilter) and(condition string, args ...any) guidFilter {
	where := func(c string) string { return condition }
	if f.where != nil {
		where = func(c string) string { return condition + " AND " + f.where(c) }
	}
	return guidFilter{where: where, args: append(args, f.args...)}
}

// guidFilter narrows a snapshot query to some LRPs: where makes the
// condition on a guid column, nil for every LRP.
type guidFilter struct {
	where func(guidColumn string) string
	args  []any
}

func (f guidFilter) query(query, guidColumn, orderBy string) string {
	if f.where != nil {
		query += " WHERE " + f.where(guidColumn)
	}
	return query + " ORDER BY " + orderBy
}

// snapshotParts divides the LRPs into parts read in parallel, each a list
// of filters whose results follow each other in guid order.
func (s *SQLDB) snapshotParts(ctx context.Context, processGuids []string) ([][]guidFilter, error) {
	if len(processGuids) > 0 {
		guids := uniqueStrings(processGuids)
		// Sorted before batching, so that batches come out in guid order too.
		slices.Sort(guids)
		var filters []guidFilter
		for _, batch := range batches(guids) {
			in, args := s.driver.inStrings(batch)
			filters = append(filters, guidFilter{where: func(c string) string { return c + in }, args: args})
		}
		return [][]guidFilter{filters}, nil
	}
	all := [][]guidFilter{{{}}}
	n := snapshotParts()
	if n < 2 {
		return all, nil
	}
	var lrps int
	if err := s.queryRow(ctx, s.conn, "SELECT COUNT(*) FROM desired_lrps").Scan(&lrps); err != nil {
		return nil, err
	}
	if lrps < snapshotPartLRPs {
		return all, nil
	}
	// Split at the guids that divide the desired LRPs evenly; instances
	// of LRPs no longer desired fall into whichever range holds their guid.
	var pivots []any
	for i := 1; i < n; i++ {
		var pivot string
		err := s.queryRow(ctx, s.conn, "SELECT process_guid FROM desired_lrps ORDER BY process_guid LIMIT 1 OFFSET ?",
			lrps*i/n).Scan(&pivot)
		if err != nil {
			return nil, err
		}
		pivots = append(pivots, pivot)
	}
	parts := make([][]guidFilter, n)
	parts[0] = []guidFilter{{where: func(c string) string { return c + " < ?" }, args: pivots[:1]}}
	for i := 1; i < n-1; i++ {
		between := func(c string) string { return c + " >= ? AND " + c + " < ?" }
		parts[i] = []guidFilter{{where: between, args: pivots[i-1 : i+1]}}
	}
	parts[n-1] = []guidFilter{{where: func(c string) string { return c + " >= ?" }, args: pivots[n-2:]}}
	return parts, nil
}

// joinSnapshotParts puts the parts' LRPs one after the other, in guid
// order as the parts are.
func joinSnapshotParts(readers []*snapshotReader) *convergence.Snapshot {
	if len(readers) == 1 {
		r := readers[0]
		return &convergence.Snapshot{Desired: r.desired, Actual: r.actual, Rollouts: r.rollouts, Definitions: r.definitions,
			Operations: r.operations}
	}
	var desired, actual int
	for _, r := range readers {
		desired += len(r.desired)
		actual += len(r.actual)
	}
	snap := &convergence.Snapshot{
		Desired: make([]convergence.DesiredSchedule, 0, desired),
		Actual:  make([]convergence.ActualRow, 0, actual),
	}
	for _, r := range readers {
		snap.Desired = append(snap.Desired, r.desired...)
		snap.Actual = append(snap.Actual, r.actual...)
		snap.Rollouts = append(snap.Rollouts, r.rollouts...)
		snap.Definitions = append(snap.Definitions, r.definitions...)
		snap.Operations = append(snap.Operations, r.operations...)
	}
	return snap
}

// readConsistently runs fn in a read-only transaction whose reads all see
// one snapshot of the database: REPEATABLE READ on Postgres and MySQL, and
// on SQLite a deferred transaction, which in WAL mode reads one snapshot
// without holding the write lock (driver.snapshotIsolation).
func (s *SQLDB) readConsistently(ctx context.Context, fn func(tx *sql.Tx) error) error {
	opts := &sql.TxOptions{ReadOnly: true, Isolation: s.driver.snapshotIsolation()}
	tx, err := s.conn.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// snapshotReader reads one part of a snapshot. Strings that repeat across
// rows (domains, cell ids, definition ids, placement errors, process guids)
// are kept once: at 250,000 rows that saves tens of megabytes.
type snapshotReader struct {
	s            *SQLDB
	desired      []convergence.DesiredSchedule
	actual       []convergence.ActualRow
	rollouts     []convergence.RolloutRow
	definitions  []convergence.DefinitionRow
	operations   []convergence.OperationRow
	cells        []convergence.CellRow
	freshDomains []string

	strings interner
	// tags caches decoded placement tags by their stored JSON; LRPs and
	// cells with equal tags share one slice.
	tags map[string][]string
	// strategies caches decoded update strategies by their stored bytes;
	// LRPs with equal strategies share one message, which the planner only
	// reads.
	strategies map[string]*models.UpdateStrategy
	// autoscalings does the same for autoscaling settings.
	autoscalings map[string]*models.Autoscaling
	// unresolved are the definitions of rows whose resources are not their
	// desired LRP's.
	unresolved map[definitionKey]struct{}
	// unreadUse is, by cell id, what the rows this reader did not read use.
	unreadUse map[string]convergence.Resources
}

func newSnapshotReader(s *SQLDB) *snapshotReader {
	return &snapshotReader{s: s, strings: interner{}, tags: map[string][]string{},
		strategies: map[string]*models.UpdateStrategy{}, autoscalings: map[string]*models.Autoscaling{},
		unresolved: map[definitionKey]struct{}{}}
}

// readLRPs reads the desired and actual rows that filters select.
func (r *snapshotReader) readLRPs(ctx context.Context, tx *sql.Tx, filters []guidFilter) error {
	if err := r.readDesired(ctx, tx, filters); err != nil {
		return err
	}
	if err := r.readActual(ctx, tx, filters); err != nil {
		return err
	}
	if err := r.resolveResources(ctx, tx); err != nil {
		return err
	}
	if err := r.readRollouts(ctx, tx, filters); err != nil {
		return err
	}
	return r.readOperations(ctx, tx, filters)
}

func (r *snapshotReader) readDesired(ctx context.Context, tx *sql.Tx, filters []guidFilter) error {
	var guid, domain, tags, definitionID, healthyID, strategy, autoscaling, autoscaler, budget, group sql.RawBytes
	var instances, memory, disk, tagIndex int64
	scan := func(rows *sql.Rows) error {
		if err := rows.Scan(&guid, &domain, &instances, &tags, &definitionID, &healthyID, &strategy, &memory, &disk,
			&tagIndex, &autoscaling, &autoscaler, &budget, &group); err != nil {
			return err
		}
		d := convergence.DesiredSchedule{
			ProcessGuid:         string(guid),
			Domain:              r.strings.get(domain),
			Instances:           int32(instances),
			ActiveDefinitionID:  r.strings.get(definitionID),
			HealthyDefinitionID: r.strings.get(healthyID),
			MemoryMB:            int32(memory),
			DiskMB:              int32(disk),
			ModificationIndex:   tagIndex,
			DisruptionBudget:    decodeDisruptionBudget(string(budget), string(group)),
		}
		var err error
		if d.PlacementTags, err = r.placementTags(tags); err != nil {
			return errInvalidRecord("desired_lrp %q: placement_tags: %v", d.ProcessGuid, err)
		}
		if d.UpdateStrategy, err = r.updateStrategy(strategy); err != nil {
			return errInvalidRecord("desired_lrp %q: update_strategy: %v", d.ProcessGuid, err)
		}
		if autoscaling != nil {
			if d.Autoscaling, err = r.autoscaling(autoscaling); err != nil {
				return errInvalidRecord("desired_lrp %q: autoscaling: %v", d.ProcessGuid, err)
			}
		}
		if autoscaler != nil {
			if d.Autoscaler, err = decodeAutoscalerStatus(autoscaler); err != nil {
				return errInvalidRecord("desired_lrp %q: autoscaler: %v", d.ProcessGuid, err)
			}
		}
		r.desired = append(r.desired, d)
		return nil
	}
	for _, f := range filters {
		if err := r.s.eachRow(ctx, tx, f.query(selectSnapshotDesired, "d.process_guid", "d.process_guid"), f.args, scan); err != nil {
			return err
		}
	}
	return nil
}

func (r *snapshotReader) readActual(ctx context.Context, tx *sql.Tx, filters []guidFilter) error {
	// Room for every desired instance and a few more: one allocation in the
	// common case instead of a dozen doublings of a 40 MB slice.
	expected := 0
	for i := range r.desired {
		expected += int(max(r.desired[i].Instances, 0))
	}
	r.actual = make([]convergence.ActualRow, 0, expected+expected/16+16)

	var guid, presence, state, domain, instanceGuid, cellID, definitionID, crashReason, placementError sql.RawBytes
	var index, crashCount, since, modIndex int64
	next := 0 // the first desired LRP whose guid is not below the row's
	scan := func(rows *sql.Rows) error {
		r.actual = append(r.actual, convergence.ActualRow{})
		row := &r.actual[len(r.actual)-1]
		err := rows.Scan(&guid, &index, &presence, &state, &domain, &instanceGuid, &cellID,
			&definitionID, &crashCount, &crashReason, &since, &placementError, &row.Routable, &row.Occupied, &row.StopRequested, &modIndex)
		if err != nil {
			return err
		}
		row.Index = int32(index)
		row.Presence = models.ActualLRP_Presence(models.ActualLRP_Presence_value[string(presence)])
		row.State = models.ActualLRP_State(models.ActualLRP_State_value[string(state)])
		row.InstanceGuid = string(instanceGuid)
		row.CrashCount = int32(crashCount)
		row.Since = since
		row.ModificationIndex = modIndex
		row.CellID = r.strings.get(cellID)
		row.PlacementError = r.strings.get(placementError)
		row.CrashReason = r.strings.get(crashReason)

		// Rows arrive in guid order, as the desired LRPs did: share the
		// desired LRP's strings, or the previous row's.
		for next < len(r.desired) && r.desired[next].ProcessGuid < string(guid) {
			next++
		}
		var d *convergence.DesiredSchedule
		var prev *convergence.ActualRow
		if next < len(r.desired) && r.desired[next].ProcessGuid == string(guid) {
			d = &r.desired[next]
		}
		if len(r.actual) > 1 {
			prev = &r.actual[len(r.actual)-2]
		}
		switch {
		case d != nil:
			row.ProcessGuid = d.ProcessGuid
		case prev != nil && prev.ProcessGuid == string(guid):
			row.ProcessGuid = prev.ProcessGuid
		default:
			row.ProcessGuid = string(guid)
		}
		if prev != nil && prev.Domain == string(domain) {
			row.Domain = prev.Domain
		} else {
			row.Domain = r.strings.get(domain)
		}
		if d != nil && d.ActiveDefinitionID == string(definitionID) {
			row.DefinitionID = d.ActiveDefinitionID
			row.MemoryMB, row.DiskMB = d.MemoryMB, d.DiskMB
		} else {
			row.DefinitionID = r.strings.get(definitionID)
			r.unresolved[definitionKey{row.ProcessGuid, row.DefinitionID}] = struct{}{}
		}
		moveIntoKeyOrder(r.actual)
		return nil
	}
	for _, f := range filters {
		query := f.query(selectSnapshotActual, "process_guid", "process_guid, instance_index, presence")
		if err := r.s.eachRow(ctx, tx, query, f.args, scan); err != nil {
			return err
		}
	}
	return nil
}

// moveIntoKeyOrder moves the last row, which SQL ordered by guid, index
// and presence name, before the rows of the same guid and index whose
// presence enum value is higher: SQL puts EVACUATING before ORDINARY and
// RETIRING before SUSPECT, the planner the other way round.
func moveIntoKeyOrder(rows []convergence.ActualRow) {
	for i := len(rows) - 1; i > 0; i-- {
		a, b := &rows[i-1], &rows[i]
		if a.Index != b.Index || a.Presence <= b.Presence || a.ProcessGuid != b.ProcessGuid {
			return
		}
		*a, *b = *b, *a
	}
}

// definitionKey names one stored definition.
type definitionKey struct {
	processGuid, definitionID string
}

// resolveResources fills in the resources of rows that do not run their
// LRP's active definition (or whose LRP is gone), from run_infos, in
// batches of at most batchSize definitions.
func (r *snapshotReader) resolveResources(ctx context.Context, tx *sql.Tx) error {
	if len(r.unresolved) == 0 {
		return nil
	}
	keys := make([]definitionKey, 0, len(r.unresolved))
	for k := range r.unresolved {
		keys = append(keys, k)
	}
	resources := make(map[definitionKey][2]int32, len(keys))
	var guid, definitionID string
	var memory, disk int64
	for batch := range slices.Chunk(keys, batchSize) {
		args := make([]any, 0, 2*len(batch))
		for _, k := range batch {
			args = append(args, k.processGuid, k.definitionID)
		}
		query, args := r.s.driver.selectByKeys(runInfoKeys, "process_guid, definition_id, memory_mb, disk_mb", args, false)
		err := r.s.eachRow(ctx, tx, query, args, func(rows *sql.Rows) error {
			if err := rows.Scan(&guid, &definitionID, &memory, &disk); err != nil {
				return err
			}
			resources[definitionKey{guid, definitionID}] = [2]int32{int32(memory), int32(disk)}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for i := range r.actual {
		row := &r.actual[i]
		if row.MemoryMB != 0 || row.DiskMB != 0 {
			continue // its desired LRP's
		}
		if res, ok := resources[definitionKey{row.ProcessGuid, row.DefinitionID}]; ok {
			row.MemoryMB, row.DiskMB = res[0], res[1]
		}
	}
	return nil
}

// readUnreadUse sums what every row naming a cell uses and takes away
// what the rows read use, leaving the other LRPs' share. It must run in
// the transaction that read the rows.
func (r *snapshotReader) readUnreadUse(ctx context.Context, tx *sql.Tx) error {
	r.unreadUse = map[string]convergence.Resources{}
	var cellID string
	var memory, disk sql.NullInt64
	var instances int64
	err := r.s.eachRow(ctx, tx, selectUsageByCell, nil, func(rows *sql.Rows) error {
		if err := rows.Scan(&cellID, &memory, &disk, &instances); err != nil {
			return err
		}
		r.unreadUse[cellID] = convergence.Resources{MemoryMB: int32(memory.Int64), DiskMB: int32(disk.Int64), Instances: int32(instances)}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range r.actual {
		row := &r.actual[i]
		if row.CellID == "" {
			continue
		}
		use := r.unreadUse[row.CellID]
		use.MemoryMB -= row.MemoryMB
		use.DiskMB -= row.DiskMB
		use.Instances--
		r.unreadUse[row.CellID] = use
	}
	return nil
}

// readRollouts reads the unsettled rollout records that filters select
// and, for their LRPs, the stored definitions. Both are few, and sorted
// here so that every dialect gives one order: records by guid as bytes,
// definitions by guid, then newest first.
func (r *snapshotReader) readRollouts(ctx context.Context, tx *sql.Tx, filters []guidFilter) error {
	for _, f := range filters {
		unsettled := f.unsettled()
		err := r.s.eachRow(ctx, tx, unsettled.query(selectSnapshotRollouts, "o.process_guid", "o.process_guid"), unsettled.args,
			func(rows *sql.Rows) error {
				rec, err := scanRollout(rows)
				if err != nil {
					return err
				}
				r.rollouts = append(r.rollouts, rec.RolloutRow)
				return nil
			})
		if err != nil {
			return err
		}
	}
	if len(r.rollouts) == 0 {
		return nil
	}
	var guid, definitionID sql.RawBytes
	var createdAt int64
	var memoryMB, diskMB int32
	for _, f := range filters {
		unsettled := f.unsettled()
		err := r.s.eachRow(ctx, tx, unsettled.query(selectSnapshotDefinitions, "o.process_guid", "r.process_guid"), unsettled.args,
			func(rows *sql.Rows) error {
				if err := rows.Scan(&guid, &definitionID, &createdAt, &memoryMB, &diskMB); err != nil {
					return err
				}
				r.definitions = append(r.definitions, convergence.DefinitionRow{
					ProcessGuid:  r.strings.get(guid),
					DefinitionID: r.strings.get(definitionID),
					CreatedAt:    createdAt,
					MemoryMB:     memoryMB,
					DiskMB:       diskMB,
				})
				return nil
			})
		if err != nil {
			return err
		}
	}
	slices.SortFunc(r.rollouts, func(a, b convergence.RolloutRow) int { return strings.Compare(a.ProcessGuid, b.ProcessGuid) })
	slices.SortFunc(r.definitions, compareDefinitionRows)
	return nil
}

// readOperations reads the operations that have not ended that filters
// select, sorted here by guid as bytes, then sequence, so that every
// dialect gives one order.
func (r *snapshotReader) readOperations(ctx context.Context, tx *sql.Tx, filters []guidFilter) error {
	var id, guid, kind, status, definitionID, storedID, leaseOwner, blocked sql.RawBytes
	scan := func(rows *sql.Rows) error {
		op := convergence.OperationRow{}
		if err := rows.Scan(&id, &guid, &op.Sequence, &kind, &status, &definitionID, &storedID, &op.MemoryMB, &op.DiskMB,
			&leaseOwner, &op.LeaseExpiresAt, &op.CreatedAt, &op.ModificationIndex, &blocked); err != nil {
			return err
		}
		op.ID = string(id)
		var err error
		if op.BlockedBy, err = decodeBlockedBy(blocked); err != nil {
			return errInvalidRecord("operation %q: blocked_by: %v", op.ID, err)
		}
		op.ProcessGuid = r.strings.get(guid)
		k, known := models.Operation_Kind_value[string(kind)]
		if !known {
			return errInvalidRecord("operation %q: unknown kind %q", op.ID, kind)
		}
		st, known := models.Operation_Status_value[string(status)]
		if !known {
			return errInvalidRecord("operation %q: unknown status %q", op.ID, status)
		}
		op.Kind, op.Status = models.Operation_Kind(k), models.Operation_Status(st)
		op.DefinitionID = r.strings.get(definitionID)
		op.DefinitionStored = len(storedID) > 0
		op.LeaseOwner = r.strings.get(leaseOwner)
		r.operations = append(r.operations, op)
		return nil
	}
	for _, f := range filters {
		unended := f.unended()
		query := unended.query(selectSnapshotOperations, "o.process_guid", "o.process_guid, o.sequence")
		if err := r.s.eachRow(ctx, tx, query, unended.args, scan); err != nil {
			return err
		}
	}
	slices.SortFunc(r.operations, func(a, b convergence.OperationRow) int {
		return cmp.Or(strings.Compare(a.ProcessGuid, b.ProcessGuid), cmp.Compare(a.Sequence, b.Sequence))
	})
	return nil
}

// compareDefinitionRows orders definitions by guid, then newest first:
// created_at descending, then definition id descending.
func compareDefinitionRows(a, b convergence.DefinitionRow) int {
	return cmp.Or(
		strings.Compare(a.ProcessGuid, b.ProcessGuid),
		cmp.Compare(b.CreatedAt, a.CreatedAt),
		strings.Compare(b.DefinitionID, a.DefinitionID),
	)
}

// readCells reads every cell and the fresh domains into r, in one
// read-only transaction.
func (s *SQLDB) readCells(ctx context.Context, r *snapshotReader) error {
	return s.readConsistently(ctx, func(tx *sql.Tx) error {
		if err := r.readCells(ctx, tx); err != nil {
			return err
		}
		return r.readFreshDomains(ctx, tx)
	})
}

func (r *snapshotReader) readCells(ctx context.Context, tx *sql.Tx) error {
	var cellID, zone, tags sql.RawBytes
	var memory, disk, instances, expiresAt, quarantinedAt, clearedAt int64
	var draining bool
	err := r.s.eachRow(ctx, tx, selectSnapshotCells, nil, func(rows *sql.Rows) error {
		if err := rows.Scan(&cellID, &zone, &memory, &disk, &instances, &tags, &expiresAt, &draining, &quarantinedAt, &clearedAt); err != nil {
			return err
		}
		c := convergence.CellRow{
			CellID:    r.strings.get(cellID),
			Zone:      r.strings.get(zone),
			Capacity:  convergence.Resources{MemoryMB: int32(memory), DiskMB: int32(disk), Instances: int32(instances)},
			ExpiresAt: expiresAt,
			Draining:  draining,

			Quarantined:         quarantinedAt != 0,
			QuarantineClearedAt: clearedAt,
		}
		var err error
		if c.PlacementTags, err = r.placementTags(tags); err != nil {
			return errInvalidRecord("cell %q: placement_tags: %v", c.CellID, err)
		}
		r.cells = append(r.cells, c)
		return nil
	})
	// Sorted here, not in SQL, so every dialect's collation gives one order.
	slices.SortFunc(r.cells, func(a, b convergence.CellRow) int { return strings.Compare(a.CellID, b.CellID) })
	return err
}

func (r *snapshotReader) readFreshDomains(ctx context.Context, tx *sql.Tx) error {
	var domain sql.RawBytes
	err := r.s.eachRow(ctx, tx, "SELECT domain FROM domains WHERE expires_at = 0 OR expires_at > ?",
		[]any{r.s.now().UnixNano()}, func(rows *sql.Rows) error {
			if err := rows.Scan(&domain); err != nil {
				return err
			}
			r.freshDomains = append(r.freshDomains, r.strings.get(domain))
			return nil
		})
	slices.Sort(r.freshDomains)
	return err
}

// placementTags decodes stored tags once per distinct value.
func (r *snapshotReader) placementTags(text sql.RawBytes) ([]string, error) {
	if tags, ok := r.tags[string(text)]; ok {
		return tags, nil
	}
	tags, err := decodePlacementTags(string(text))
	if err != nil {
		return nil, err
	}
	for i, tag := range tags {
		tags[i] = r.strings.get([]byte(tag))
	}
	r.tags[string(text)] = tags
	return tags, nil
}

// updateStrategy decodes a stored strategy once per distinct value; NULL
// is nil, every default.
func (r *snapshotReader) updateStrategy(stored sql.RawBytes) (*models.UpdateStrategy, error) {
	if stored == nil {
		return nil, nil
	}
	return decodeShared(r.strategies, stored, func(b []byte) (*models.UpdateStrategy, error) { return decodeUpdateStrategy(b, true) })
}

// autoscaling decodes stored settings (not NULL) once per distinct value.
func (r *snapshotReader) autoscaling(stored sql.RawBytes) (*models.Autoscaling, error) {
	return decodeShared(r.autoscalings, stored, decodeAutoscaling)
}

// decodeShared decodes stored once per distinct value, remembered in seen:
// LRPs with equal values share one message, which the planner only reads.
func decodeShared[M any](seen map[string]M, stored sql.RawBytes, decode func([]byte) (M, error)) (M, error) {
	if m, ok := seen[string(stored)]; ok {
		return m, nil
	}
	m, err := decode(stored)
	if err != nil {
		return m, err
	}
	seen[string(stored)] = m
	return m, nil
}
