package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strings"

	"github.com/lib/pq"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/models"
)

// updateNowPostgres is UpdateDesiredLRP's fast path on Postgres for an
// update the transactional path would finish at once: one that sends no
// definition and no routes, and asks neither to validate nor to queue
// (updatesAtOnce). The transactional path costs about seven round trips
// (BEGIN, the locked read, the operations read, the UPDATE, the operation
// insert, the events with the receipt, COMMIT), and on a small machine
// each is a context switch on both sides; this costs two, or three for a
// scale down: a read without lock or transaction, the instances a scale
// down deletes, then one prepared, auto-committed statement
// (updateNowStatement).
//
// Everything is decided in Go by the transactional path's own functions,
// from the LRP as read: the row's assignments (desiredUpdateSet), the
// instance change (models.ApplyUpdate), the LRP after (updatedRow), the
// operation (nextOperation, describeUpdate) and every event, in the
// transactional path's order. The statement then writes it all only if
// the row still carries the tag read, so what it writes is what the
// transactional path would have written had it run at that moment.
//
// It declines — returns a nil LRP for the transactional path to decide
// with what it then finds — whenever the read shows anything that path
// would not finish at once, or that this one does not restate: the LRP
// missing, a client's tag other than the stored one, an operation of the
// LRP not ended, instances asked of an autoscaled LRP, routes refused,
// the active definition missing; and whenever the statement stores
// nothing (the tag moved: a concurrent write), finds a row locked
// (lock_not_available), a sequence taken (a unique violation) or a
// conflict. A write under a lease tenure (db.WithFence) declines too: the
// fence is checked in a transaction.
func (s *SQLDB) updateNowPostgres(ctx context.Context, processGuid string, update *models.DesiredLRPUpdate, c *desiredChange,
	request *models.UpdateDesiredLRPRequest, inTx updateInTxFunc) (*models.DesiredLRP, *models.Operation, error) {
	if _, fenced := db.FenceOf(ctx); fenced {
		return nil, nil, nil
	}
	before, lastSequence, unfinished, err := s.readDesiredToUpdate(ctx, processGuid)
	if err != nil || before == nil {
		return nil, nil, err
	}
	// What the transactional path refuses, it refuses itself, with the
	// LRP as it then finds it.
	if refuseUpdate(before, update) != nil || unfinished || before.Definition == nil {
		return nil, nil, nil
	}
	// The routes' rule as checkUpdateRoutes applies it; with neither
	// routes nor a definition sent it refuses nothing, and it needs no
	// ports.
	if models.ValidateUpdateRoutes(update, before.Routes, nil) != nil {
		return nil, nil, nil
	}

	now := s.now().UnixNano()
	rec, err := s.nextOperation(ctx, processGuid, lastSequence, models.Operation_UPDATE, request, now)
	if err != nil {
		return nil, nil, err
	}
	change := models.ApplyUpdate(before, update, now)
	set, setArgs, err := desiredUpdateSet(before, update, c, change, now)
	if err != nil {
		return nil, nil, err
	}
	// No definition is sent and before carries the active one, so
	// updatedRow reads nothing: it needs no transaction.
	after, err := s.updatedRow(ctx, nil, before, update, c, change)
	if err != nil {
		return nil, nil, err
	}
	setOperationStatus(rec.op, models.Operation_FINISHED, "", now)
	addHistory(rec.op, now, describeUpdate(before, after, update, c, false))
	operation, err := s.operationValues(rec)
	if err != nil {
		return nil, nil, err
	}

	// The instances, as scale would add or delete them: up, an UNCLAIMED
	// ORDINARY instance per new index that has none (epochs); down, the
	// UNCLAIMED ORDINARY instances at indices from the new count on, as
	// read now (doomed; the statement deletes them only if it finds them
	// unchanged, and no others).
	var epochs []string
	var created, doomed []*models.ActualLRP
	doomedFrom := int32(math.MaxInt32)
	switch {
	case change.ScaleTo > change.ScaleFrom:
		for index := change.ScaleFrom; index < change.ScaleTo; index++ {
			lrp := newUnclaimed(processGuid, index, before.Domain, change.ActiveDefinitionID, newEpoch(), now)
			created = append(created, lrp)
			epochs = append(epochs, lrp.ModificationTag.Epoch)
		}
	case change.ScaleTo < change.ScaleFrom:
		doomedFrom = change.ScaleTo
		if doomed, err = s.selectActualLRPs(ctx, s.conn, scaledDownWhere, processGuid, presenceOrdinary, stateUnclaimed, doomedFrom); err != nil {
			return nil, nil, err
		}
		sortActualLRPs(doomed)
	}
	doomedIndices := make([]int32, len(doomed))
	doomedEpochs := make([]string, len(doomed))
	doomedTags := make([]int64, len(doomed))
	for i, lrp := range doomed {
		doomedIndices[i], doomedEpochs[i], doomedTags[i] = lrp.Index, lrp.ModificationTag.Epoch, int64(lrp.ModificationTag.Index)
	}

	// Every event, in the transactional path's order: a statement that
	// commits has inserted every instance.
	events := []models.Event{models.DesiredLRPChanged(before, after)}
	for _, lrp := range created {
		events = append(events, models.ActualLRPCreated(lrp))
	}
	for _, lrp := range doomed {
		events = append(events, models.ActualLRPRemoved(lrp))
	}
	encoded, err := marshalEvents(append(events, models.OperationChanged(rec.op)))
	if err != nil {
		return nil, nil, err
	}

	token := s.newReceiptToken()
	args := make([]any, 0, 40+len(setArgs))
	args = append(args, processGuid,
		processGuid, presenceOrdinary, stateUnclaimed, doomedFrom)
	args = append(args, setArgs...)
	args = append(args, processGuid, before.ModificationTag.Epoch, int64(before.ModificationTag.Index),
		int64(len(doomed)), pq.Array(doomedIndices), pq.Array(doomedEpochs), pq.Array(doomedTags), int64(len(doomed)),
		presenceOrdinary,
		change.ScaleFrom, presenceOrdinary, before.Domain, change.ActiveDefinitionID, stateUnclaimed, now, pq.Array(epochs))
	args = append(args, operation...)
	args = append(args, encoded.bundled().arrays()...)
	args = append(args, token)

	stmt, err := s.statements.get(ctx, s.conn, dialect.Rebind(dialect.Postgres, updateNowStatement(set)))
	if err != nil {
		return nil, nil, err
	}
	var updated int
	run := func(stmt *sql.Stmt) error {
		return stmt.QueryRowContext(ctx, args...).Scan(&updated)
	}
	// Coalesced, as desireNew is, with one difference: a statement that
	// stored nothing in a group's transaction — the LRP changed since it
	// was read, most likely by an earlier write of the group — leaves the
	// update to the transactional path's body in that transaction, which
	// sees the earlier write, as it would have had the update not been
	// fast. (A group's later writes of one LRP then still share its
	// commit.) The statement's locks are the body's own: same transaction.
	var inGroup struct {
		lrp *models.DesiredLRP
		op  *models.Operation
	}
	err = s.writeCoalesced(ctx, processGuid, func(tx *sql.Tx) ([]models.Event, error) {
		inGroup.lrp, inGroup.op = nil, nil
		if err := run(tx.StmtContext(ctx, stmt)); err != nil {
			return nil, err
		}
		if updated == 1 {
			return nil, nil
		}
		lrp, op, events, err := inTx(tx)
		if err != nil {
			return nil, err
		}
		inGroup.lrp, inGroup.op = lrp, op
		return events, nil
	}, func() error {
		// A group that ran the body and rolled back sends the write here.
		inGroup.lrp, inGroup.op = nil, nil
		settled, err := s.commitStatement(token, func() error { return run(stmt) })
		if settled {
			updated = 1
		}
		return err
	})
	switch {
	case err == nil && inGroup.lrp != nil:
		return inGroup.lrp, inGroup.op, nil
	case err == nil && updated == 1:
		s.eventsCommitted()
		s.fastUpdates.Add(1)
		return after, rec.op, nil
	case err == nil:
		return nil, nil, nil
	case isUniqueViolation(err) || isLockNotAvailable(err) || isRetryable(err):
		return nil, nil, nil
	default:
		return nil, nil, err
	}
}

// scaledDownWhere is the instances a scale down deletes (scale), from
// the new count on.
const scaledDownWhere = "process_guid = ? AND presence = ? AND state = ? AND instance_index >= ?"

// readDesiredToUpdate reads the LRP with its active definition, its
// highest operation number and whether any of its operations has not
// ended, in one statement (one snapshot), without a lock: the columns of
// lockDesiredForUpdate's two statements. A missing LRP is nil.
func (s *SQLDB) readDesiredToUpdate(ctx context.Context, processGuid string) (*models.DesiredLRP, int64, bool, error) {
	var lastSequence, unfinished int64
	row := extraColumns{row: s.queryRow(ctx, s.conn, selectDesiredToUpdate, processGuid), extra: []any{&lastSequence, &unfinished}}
	lrp, err := s.scanDesiredLRP(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	return lrp, lastSequence, unfinished > 0, nil
}

const selectDesiredToUpdate = `SELECT ` + desiredRowColumns + `,
 (SELECT r.definition FROM run_infos r WHERE r.process_guid = d.process_guid AND r.definition_id = d.active_definition_id),
 (SELECT COALESCE(MAX(o.sequence), 0) FROM operations o WHERE o.process_guid = d.process_guid),
 (SELECT COUNT(*) FROM operations o WHERE o.process_guid = d.process_guid AND ` + operationsUnended + `)
 FROM desired_lrps d WHERE d.process_guid = ?`

// extraColumns scans a row's last columns into extra, after those its
// caller scans.
type extraColumns struct {
	row   rowScanner
	extra []any
}

func (e extraColumns) Scan(dest ...any) error {
	return e.row.Scan(append(dest, e.extra...)...)
}

// updateNowStatement is the statement of updateNowPostgres, with set the
// desired row's assignments (desiredUpdateSet): one text, prepared once,
// per combination of the columns an update sets (annotation, update
// strategy, instances, autoscaling, the autoscaler's state), a few dozen
// at most.
//
// Its row locks are taken NOWAIT, in the transactional path's order:
// taken locks the desired row, then doomed the instances a scale down
// deletes; a row another transaction holds fails the statement with
// lock_not_available, and the transactional path, which waits, takes
// over. (An insert that meets another transaction's uncommitted row of
// the same key — an instance, an operation number — waits for it, as the
// transactional path's would.) desired updates the row only if it still
// carries the tag read and the instances locked are exactly those read
// (same indices and tags: the events describe them); every other part
// writes only when desired did. The instances are inserted without ON
// CONFLICT: an index that has an ORDINARY instance already (one a scale
// down left to stop, say) fails the statement with a unique violation,
// and the transactional path, which keeps that instance as
// insertUnclaimed does, takes over. So a statement that commits has
// inserted every instance, and logged inserts the events as they were
// laid out before it ran, bundled (bundle.go). The receipt goes with the
// rest (commitStatement). The answer is how many desired rows were
// updated.
func updateNowStatement(set string) string {
	return `WITH taken AS (
	SELECT 1 FROM desired_lrps WHERE process_guid = ?::varchar FOR UPDATE NOWAIT
), doomed AS (
	SELECT instance_index, modification_tag_epoch, modification_tag_index FROM actual_lrps
	WHERE process_guid = ?::varchar AND presence = ?::varchar AND state = ?::varchar AND instance_index >= ?::integer
		AND EXISTS (SELECT 1 FROM taken)
	FOR UPDATE NOWAIT
), desired AS (
	UPDATE desired_lrps SET ` + set + `
	WHERE process_guid = ? AND modification_tag_epoch = ? AND modification_tag_index = ?
		AND EXISTS (SELECT 1 FROM taken)
		AND (SELECT count(*) FROM doomed) = ?::bigint
		AND (SELECT count(*) FROM doomed o
			JOIN unnest(?::integer[], ?::text[], ?::bigint[]) AS r(instance_index, epoch, tag)
			ON o.instance_index = r.instance_index AND o.modification_tag_epoch = r.epoch AND o.modification_tag_index = r.tag) = ?::bigint
	RETURNING process_guid
), removed AS (
	DELETE FROM actual_lrps a USING desired d, doomed o
	WHERE a.process_guid = d.process_guid AND a.instance_index = o.instance_index AND a.presence = ?::varchar
), instances AS (
	INSERT INTO actual_lrps (process_guid, instance_index, presence, domain, definition_id, state,
		since, crash_reason, placement_error, modification_tag_epoch, modification_tag_index)
	SELECT d.process_guid, ?::integer + e.ordinality - 1, ?, ?, ?, ?, ?, '', '', e.epoch, 0
	FROM desired d, unnest(?::text[]) WITH ORDINALITY AS e(epoch, ordinality)
), operation AS (
	INSERT INTO operations (` + strings.Join(operationColumns, ", ") + `)
	SELECT ` + strings.TrimSuffix(strings.Repeat("?, ", len(operationColumns)), ", ") + ` FROM desired
), logged AS (
	INSERT INTO event_outbox (event_type, event_key, payload, event_count)
	SELECT e.event_type, e.event_key, e.payload, e.event_count
	FROM unnest(?::text[], ?::text[], ?::bytea[], ?::smallint[]) WITH ORDINALITY AS e(event_type, event_key, payload, event_count, n)
	WHERE EXISTS (SELECT 1 FROM desired)
	ORDER BY e.n
), receipt AS (
	INSERT INTO commit_receipts (token)
	SELECT ? FROM desired
)
SELECT count(*) FROM desired`
}
