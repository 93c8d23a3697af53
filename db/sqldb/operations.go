package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ db.OperationDB = (*SQLDB)(nil)

// Operation records (table operations, migration 0007). Every write to a
// DesiredLRP records its operation in its own transaction, after it has
// locked (or, for a desire, inserted) the LRP's desired row: writers of one
// LRP queue on that row, so the next sequence number, MAX + 1 read inside
// the transaction, is each one's own, in commit order. The unique index on
// (process_guid, sequence) is the safety net: an insert that loses a race
// anyway is errLostRace and the transaction runs again.
//
// Every change of a stored operation moves its modification_index on by one
// and is compare-and-set on it, so a write made from an operation read
// earlier (a supersede, a cancel, a convergence write) never overwrites a
// change it did not see: it runs again, or is skipped as stale.
//
// Operations outlive their LRP: a guid desired again numbers its operations
// on from the old ones.

// operationsUnended selects the operations that have not ended (table
// alias o). It is written as the operations_unfinished index's WHERE is,
// with a literal rather than a parameter, or Postgres and SQLite could not
// prove that the partial index covers the query.
const operationsUnended = "o.ended = FALSE"

// convergenceLease names the lease a board owns while it converges; it
// must equal runner.LeaseName, which db cannot import. A change of
// definition starts leased to its owner of the moment.
const convergenceLease = "convergence"

// maxOperationID is the width of an operation id (models.NewOperationID).
const maxOperationID = 24

// checkOperationID refuses what cannot be an operation id: 24 lowercase hex
// digits (models.NewOperationID).
func checkOperationID(field, id string) error {
	if err := checkRequired(field, id, maxOperationID); err != nil {
		return err
	}
	if len(id) != maxOperationID || strings.Trim(id, "0123456789abcdef") != "" {
		return errInvalid(field, fmt.Sprintf("must be %d lowercase hex digits, got %q", maxOperationID, id))
	}
	return nil
}

// operationColumnList is the columns (table alias o) in the order
// scanOperation reads them.
const operationColumnList = `o.id, o.process_guid, o.sequence, o.kind, o.status, o.reason, o.parameters,
 o.definition_id, o.requested_by, o.created_at, o.started_at, o.finished_at, o.lease_owner, o.lease_expires_at,
 o.history, o.modification_index`

var operationColumns = []string{
	"id", "process_guid", "sequence", "kind", "status", "reason", "parameters", "definition_id", "requested_by",
	"created_at", "started_at", "finished_at", "lease_owner", "lease_expires_at", "history", "ended",
	"modification_index",
}

// operationRecord is one row of operations.
type operationRecord struct {
	op *models.Operation
	// modificationIndex grows by one with every write of the row.
	modificationIndex int64
}

func (s *SQLDB) scanOperation(row rowScanner) (*operationRecord, error) {
	op := &models.Operation{}
	rec := &operationRecord{op: op}
	var kind, status string
	var parameters, history []byte
	err := row.Scan(&op.Id, &op.ProcessGuid, &op.Sequence, &kind, &status, &op.Reason, &parameters,
		&op.DefinitionId, &op.RequestedBy, &op.CreatedAt, &op.StartedAt, &op.FinishedAt, &op.LeaseOwner,
		&op.LeaseExpiresAt, &history, &rec.modificationIndex)
	if err != nil {
		return nil, err
	}
	k, known := models.Operation_Kind_value[kind]
	if !known {
		return nil, errInvalidRecord("operation %q: unknown kind %q", op.Id, kind)
	}
	st, known := models.Operation_Status_value[status]
	if !known {
		return nil, errInvalidRecord("operation %q: unknown status %q", op.Id, status)
	}
	op.Kind, op.Status = models.Operation_Kind(k), models.Operation_Status(st)
	if op.Parameters, err = s.decodeParameters(op.Id, parameters); err != nil {
		return nil, err
	}
	if len(history) > 0 {
		if history, err = unpack(history); err != nil {
			return nil, errInvalidRecord("operation %q: history: %v", op.Id, err)
		}
		var h models.OperationHistory
		if err := proto.Unmarshal(history, &h); err != nil {
			return nil, errInvalidRecord("operation %q: history: %v", op.Id, err)
		}
		op.History = h.Events
	}
	return rec, nil
}

// operationValues are the row's values in operationColumns order.
func (s *SQLDB) operationValues(rec *operationRecord) ([]any, error) {
	op := rec.op
	parameters, history, err := s.encodeOperationBlobs(op)
	if err != nil {
		return nil, err
	}
	return []any{op.Id, op.ProcessGuid, op.Sequence, op.Kind.String(), op.Status.String(), op.Reason, parameters,
		op.DefinitionId, op.RequestedBy, op.CreatedAt, op.StartedAt, op.FinishedAt, op.LeaseOwner,
		op.LeaseExpiresAt, history, models.OperationEnded(op.Status), rec.modificationIndex}, nil
}

// encodeOperationBlobs encodes the operation's parameters (nil when it has
// none; sealed when encryption is configured) and history, each packed
// when that is shorter.
func (s *SQLDB) encodeOperationBlobs(op *models.Operation) (parameters, history []byte, err error) {
	if parameters, err = s.encodeParameters(op.Id, op.Parameters); err != nil {
		return nil, nil, err
	}
	history, err = encodeHistory(op.History)
	return parameters, history, err
}

// encodeHistory is what operations.history stores: the protobuf of a
// models.OperationHistory, packed when that is shorter (compress.go).
func encodeHistory(events []*models.OperationEvent) ([]byte, error) {
	b, err := encodeMessage(&models.OperationHistory{Events: events}, false)
	return pack(b), err
}

// insertOperation stores a new operation. Its sequence taken by a
// concurrent writer after all is errLostRace: the transaction runs again
// and numbers it anew.
func (s *SQLDB) insertOperation(ctx context.Context, tx *sql.Tx, rec *operationRecord) error {
	values, err := s.operationValues(rec)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, tx, insertStatement("operations", operationColumns), values...)
	if isUniqueViolation(err) {
		return errLostRace
	}
	return err
}

// updateOperation stores rec's status, reason, times, lease and history
// as the row's next version, compare-and-set on the version read.
func (s *SQLDB) updateOperation(ctx context.Context, tx *sql.Tx, rec *operationRecord) error {
	op := rec.op
	history, err := encodeHistory(op.History)
	if err != nil {
		return err
	}
	expect := rec.modificationIndex
	if err := s.execOne(ctx, tx, `UPDATE operations SET status = ?, reason = ?, started_at = ?, finished_at = ?,
 lease_owner = ?, lease_expires_at = ?, history = ?, ended = ?, modification_index = ?
 WHERE id = ? AND modification_index = ?`,
		op.Status.String(), op.Reason, op.StartedAt, op.FinishedAt, op.LeaseOwner, op.LeaseExpiresAt, history,
		models.OperationEnded(op.Status), expect+1, op.Id, expect); err != nil {
		return err
	}
	rec.modificationIndex = expect + 1
	return nil
}

// readOperation reads one operation, nil when there is none; lock is ""
// or the dialect's FOR UPDATE.
func (s *SQLDB) readOperation(ctx context.Context, q queryer, id, lock string) (*operationRecord, error) {
	rec, err := s.scanOperation(s.queryRow(ctx, q, "SELECT "+operationColumnList+" FROM operations o WHERE o.id = ?"+lock, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return rec, err
}

// unfinishedOperations reads the LRP's operations that have not ended, in
// sequence order, through the operations_unfinished index. Writers of the
// LRP call it holding its desired row lock, so no other writer of the LRP
// adds one meanwhile; changes made since by convergence, which writes
// operations without that lock, show as a lost compare-and-set.
func (s *SQLDB) unfinishedOperations(ctx context.Context, q queryer, processGuid string) ([]*operationRecord, error) {
	var recs []*operationRecord
	err := s.eachRow(ctx, q, "SELECT "+operationColumnList+" FROM operations o WHERE "+operationsUnended+" AND o.process_guid = ? ORDER BY o.sequence",
		[]any{processGuid}, func(rows *sql.Rows) error {
			rec, err := s.scanOperation(rows)
			recs = append(recs, rec)
			return err
		})
	return recs, err
}

// operationIDs hands out operation ids whose time part never repeats or
// goes back within this process, so that one board's ids sort in the order
// it created them even when its clock stands still (tests) or steps back.
type operationIDs struct {
	mu   sync.Mutex
	last int64
}

func (g *operationIDs) next(now int64) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now <= g.last {
		now = g.last + 1
	}
	g.last = now
	return models.NewOperationID(time.Unix(0, now))
}

// newOperation is the next operation of the LRP, not yet stored: its id,
// sequence (the LRP's highest + 1, read in tx), parameters (request wrapped
// in an Any), requested_by (from the context's db.OperationNote) and
// created_at now. The caller sets what it is and what became of it
// (setOperationStatus, addHistory) and stores it with insertOperation.
func (s *SQLDB) newOperation(ctx context.Context, tx *sql.Tx, processGuid string, kind models.Operation_Kind, request proto.Message, now int64) (*operationRecord, error) {
	var sequence int64
	err := s.queryRow(ctx, tx, "SELECT COALESCE(MAX(sequence), 0) FROM operations WHERE process_guid = ?", processGuid).Scan(&sequence)
	if err != nil {
		return nil, err
	}
	return s.nextOperation(ctx, processGuid, sequence, kind, request, now)
}

// nextOperation is newOperation for a caller that read the LRP's highest
// operation number, lastSequence, itself.
func (s *SQLDB) nextOperation(ctx context.Context, processGuid string, lastSequence int64, kind models.Operation_Kind, request proto.Message, now int64) (*operationRecord, error) {
	op, err := s.draftOperation(ctx, processGuid, kind, request, now)
	if err != nil {
		return nil, err
	}
	op.Sequence = lastSequence + 1
	return &operationRecord{op: op, modificationIndex: 1}, nil
}

// draftOperation is newOperation without the sequence, which the caller
// reads itself.
func (s *SQLDB) draftOperation(ctx context.Context, processGuid string, kind models.Operation_Kind, request proto.Message, now int64) (*models.Operation, error) {
	parameters, err := wrapRequest(request)
	if err != nil {
		return nil, err
	}
	op := &models.Operation{
		Id:          s.operationIDs.next(now),
		ProcessGuid: processGuid,
		Kind:        kind,
		Parameters:  parameters,
		CreatedAt:   now,
	}
	if note := db.OperationNoteFrom(ctx); note != nil {
		op.RequestedBy = note.RequestedBy
	}
	return op, nil
}

// wrapRequest wraps the request that made an operation in an Any, encoded
// deterministically like every stored blob, less its run definition (see
// operationParameters).
func wrapRequest(request proto.Message) (*anypb.Any, error) {
	parameters := &anypb.Any{}
	if err := anypb.MarshalFrom(parameters, operationParameters(request), deterministic); err != nil {
		return nil, errInvalid("parameters", err.Error())
	}
	return parameters, nil
}

// operationParameters is the request an operation keeps: as it came, less
// any run definition, which is stored once, in run_infos, under the
// operation's definition_id. Kept twice, it would double what a desire
// writes, and copy what users put in a definition's environment (their
// secrets) out of the one table that encryption at rest covers. Starting
// a queued or validated update puts it back (restoreDefinition).
func operationParameters(request proto.Message) proto.Message {
	switch r := request.(type) {
	case *models.DesireLRPRequest:
		if r.GetDesiredLrp().GetDefinition() != nil {
			kept := proto.Clone(r).(*models.DesireLRPRequest)
			kept.DesiredLrp.Definition = nil
			return kept
		}
	case *models.UpdateDesiredLRPRequest:
		if r.GetUpdate().GetDefinition() != nil {
			kept := proto.Clone(r).(*models.UpdateDesiredLRPRequest)
			kept.Update.Definition = nil
			return kept
		}
	}
	return request
}

// setOperationStatus moves op to status with reason and stamps the times
// that go with it: started_at when it starts, finished_at when it ends. A
// new operation done at once (FINISHED) started when it finished; one that
// ends from PENDING never started.
func setOperationStatus(op *models.Operation, status models.Operation_Status, reason string, now int64) {
	op.Status, op.Reason = status, reason
	if status == models.Operation_IN_PROGRESS || status == models.Operation_FINISHED && op.StartedAt == 0 {
		op.StartedAt = now
	}
	if models.OperationEnded(status) {
		op.FinishedAt = now
	}
}

// addHistory appends lines to op's history, stamped at.
func addHistory(op *models.Operation, at int64, lines ...string) {
	for _, line := range lines {
		op.History = append(op.History, &models.OperationEvent{At: at, Message: line})
	}
}

// leaseOfTheMoment is the convergence lease as it stands in tx: its owner
// and expiry while it runs, else "" and 0. A change of definition starts
// leased to that board, which carries it until its rollout ends.
//
// Whether it runs is judged by the database's clock, as AcquireLease
// judges it; the expiry returned is the time left added to now, the
// store's clock, which convergence renews and judges operation leases by
// (on a board, the database's time as the board measured it).
func (s *SQLDB) leaseOfTheMoment(ctx context.Context, tx *sql.Tx, now int64) (string, int64, error) {
	var owner string
	var left int64
	dbNow := s.driver.nowNanos()
	err := s.queryRow(ctx, tx, "SELECT owner, expires_at - "+dbNow+" FROM leases WHERE name = ? AND expires_at > "+dbNow,
		convergenceLease).Scan(&owner, &left)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, nil
	}
	return owner, now + left, err
}

// changesDefinition reports whether op activated a definition of lrp (nil
// when gone) and lasts while its rollout runs: canceling it rolls back.
func changesDefinition(op *models.Operation, lrp *models.DesiredLRP) bool {
	switch op.Kind {
	case models.Operation_UPDATE_DEFINITION, models.Operation_ROLLBACK, models.Operation_ABORT:
		return true
	case models.Operation_VALIDATE:
		// Once validated it carries its rollout; before, nothing changed.
		return lrp != nil && op.DefinitionId == lrp.ActiveDefinitionId
	}
	return false
}

// startDefinitionChange makes op, a new change of definition to
// definitionID, IN_PROGRESS under the convergence lease of the moment, and
// ends the LRP's operations that have not ended (unfinished, read under
// the LRP's row lock) CANCELED: it supersedes them. reasonFor, when set,
// gives the reason of one of them instead of "superseded by …" (a cancel
// names what it canceled with). It returns the operations it ended.
func (s *SQLDB) startDefinitionChange(ctx context.Context, tx *sql.Tx, op *operationRecord, definitionID string,
	unfinished []*operationRecord, reasonFor func(*models.Operation) string, now int64) ([]*models.Operation, error) {
	owner, expires, err := s.leaseOfTheMoment(ctx, tx, now)
	if err != nil {
		return nil, err
	}
	op.op.DefinitionId = definitionID
	op.op.LeaseOwner, op.op.LeaseExpiresAt = owner, expires
	setOperationStatus(op.op, models.Operation_IN_PROGRESS, "", now)
	superseded := "superseded by " + operationName(op.op)
	var ended []*models.Operation
	for _, rec := range unfinished {
		reason := superseded
		if reasonFor != nil {
			if r := reasonFor(rec.op); r != "" {
				reason = r
			}
		}
		if err := s.endOperation(ctx, tx, rec, models.Operation_CANCELED, reason, now); err != nil {
			return nil, err
		}
		ended = append(ended, rec.op)
	}
	return ended, nil
}

// endOperation ends rec with status and reason, which its history repeats.
func (s *SQLDB) endOperation(ctx context.Context, tx *sql.Tx, rec *operationRecord, status models.Operation_Status, reason string, now int64) error {
	setOperationStatus(rec.op, status, reason, now)
	addHistory(rec.op, now, reason)
	return s.updateOperation(ctx, tx, rec)
}

// operationName names an operation in another one's history or reason:
// "operation <id> (#<sequence>)".
func operationName(op *models.Operation) string {
	return fmt.Sprintf("operation %s (#%d)", op.Id, op.Sequence)
}

// operationEvents are operation_changed for each operation.
func operationEvents(ops ...*models.Operation) []models.Event {
	events := make([]models.Event, len(ops))
	for i, op := range ops {
		events[i] = models.OperationChanged(op)
	}
	return events
}

// transactOperation is transactKeyed for a write that records an
// operation of the LRP processGuid: fn returns the operation it recorded
// (nil for none) with its events, and once the transaction committed the
// context's db.OperationNote learns which operation that was.
func (s *SQLDB) transactOperation(ctx context.Context, name, processGuid string, fn func(tx *sql.Tx) (*models.Operation, []models.Event, error)) error {
	var recorded *models.Operation
	err := s.transactKeyed(ctx, name, processGuid, func(tx *sql.Tx) ([]models.Event, error) {
		var events []models.Event
		var err error
		recorded, events, err = fn(tx)
		return events, err
	})
	if err == nil {
		noteRecorded(ctx, recorded)
	}
	return err
}

// noteRecorded tells the context's note, if any, the operation a write
// recorded.
func noteRecorded(ctx context.Context, op *models.Operation) {
	if note := db.OperationNoteFrom(ctx); note != nil && op != nil {
		note.Operation = op
	}
}

// Operations lists operations newest first, so that a page costs its own
// rows whatever the table holds: all of them by id (which sorts by creation
// time) through the primary key; one LRP's by sequence through
// operations_sequence, the cursor standing for its sequence number there.
// Each operation comes whole; its parameters are decoded as an Any envelope
// only.
func (s *SQLDB) Operations(ctx context.Context, filter db.OperationFilter) ([]*models.Operation, string, error) {
	limit := filter.Limit
	switch {
	case limit == 0:
		limit = models.DefaultOperationsPage
	case limit < 0 || limit > models.MaxOperationsPage:
		return nil, "", errInvalid("limit", fmt.Sprintf("must be between 0 (the default, %d) and %d, got %d",
			models.DefaultOperationsPage, models.MaxOperationsPage, limit))
	}
	if err := checkWidth("process_guid", filter.ProcessGuid, maxProcessGuid); err != nil {
		return nil, "", err
	}
	if filter.Cursor != "" {
		if err := checkOperationID("cursor", filter.Cursor); err != nil {
			return nil, "", err
		}
	}
	var where []string
	var args []any
	order := "o.id DESC"
	if filter.ProcessGuid != "" {
		where, args = append(where, "o.process_guid = ?"), append(args, filter.ProcessGuid)
		order = "o.sequence DESC"
	}
	if filter.Status != models.Operation_STATUS_UNKNOWN {
		where, args = append(where, "o.status = ?"), append(args, filter.Status.String())
		if !models.OperationEnded(filter.Status) {
			// The few operations under way are in operations_unfinished.
			where = append(where, operationsUnended)
		}
	}
	if filter.Kind != models.Operation_KIND_UNKNOWN {
		where, args = append(where, "o.kind = ?"), append(args, filter.Kind.String())
	}
	if filter.Cursor != "" {
		condition, arg, err := s.operationsAfter(ctx, filter)
		if err != nil {
			return nil, "", err
		}
		where, args = append(where, condition), append(args, arg)
	}
	query := "SELECT " + operationColumnList + " FROM operations o"
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	// One row more than the page tells whether there is a next page.
	query += fmt.Sprintf(" ORDER BY %s LIMIT %d", order, limit+1)
	ops := make([]*models.Operation, 0, min(limit+1, 128))
	err := s.eachRow(ctx, s.conn, query, args, func(rows *sql.Rows) error {
		rec, err := s.scanOperation(rows)
		if err != nil {
			return err
		}
		ops = append(ops, rec.op)
		return nil
	})
	if err == nil {
		err = s.addBlockedBy(ctx, ops)
	}
	if err != nil {
		return nil, "", asModelError("list operations", err)
	}
	if len(ops) <= limit {
		return ops, "", nil
	}
	ops = ops[:limit]
	return ops, ops[limit-1].Id, nil
}

// operationsAfter is the condition (table alias o) and its argument that
// start a listing's page after its cursor: the operations older than the
// cursor's. Across LRPs that is a smaller id; within one LRP a smaller
// sequence number, which the cursor's row gives. A cursor of another LRP,
// or of an operation deleted since (retention), is refused: the listing
// starts again from its first page.
func (s *SQLDB) operationsAfter(ctx context.Context, filter db.OperationFilter) (string, any, error) {
	if filter.ProcessGuid == "" {
		return "o.id < ?", filter.Cursor, nil
	}
	var sequence int64
	err := s.queryRow(ctx, s.conn, "SELECT sequence FROM operations WHERE id = ? AND process_guid = ?",
		filter.Cursor, filter.ProcessGuid).Scan(&sequence)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, errInvalid("cursor", fmt.Sprintf(
			"operation %q is not one of %q's operations (any more): list again from the first page",
			filter.Cursor, filter.ProcessGuid))
	}
	if err != nil {
		return "", nil, asModelError("list operations", err)
	}
	return "o.sequence < ?", sequence, nil
}

// Operation returns one operation.
func (s *SQLDB) Operation(ctx context.Context, id string) (*models.Operation, error) {
	if err := checkOperationID("id", id); err != nil {
		return nil, err
	}
	rec, err := s.readOperation(ctx, s.conn, id, "")
	if err != nil {
		return nil, asModelError("get operation", err)
	}
	if rec == nil {
		return nil, errNotFound("operation %q not found", id)
	}
	if err := s.addBlockedBy(ctx, []*models.Operation{rec.op}); err != nil {
		return nil, asModelError("get operation", err)
	}
	return rec.op, nil
}

// addBlockedBy gives each IN_PROGRESS operation of ops what holds it:
// the blocked_by of the LRP's rollout record it started
// (rollouts.operation_id), what the planner found holding the rollout;
// or, for a VALIDATE operation that started no rollout yet (it is
// validating), the blocked_by the planner stored with it
// (operations.blocked_by). An operation that ended has none.
func (s *SQLDB) addBlockedBy(ctx context.Context, ops []*models.Operation) error {
	for _, op := range ops {
		if op.Status != models.Operation_IN_PROGRESS {
			continue
		}
		var blocked []byte
		where := "rollout of desired_lrp"
		err := s.queryRow(ctx, s.conn, "SELECT blocked_by FROM rollouts WHERE process_guid = ? AND operation_id = ?",
			op.ProcessGuid, op.Id).Scan(&blocked)
		if errors.Is(err, sql.ErrNoRows) && op.Kind == models.Operation_VALIDATE {
			where = "validation of desired_lrp"
			err = s.queryRow(ctx, s.conn, "SELECT blocked_by FROM operations WHERE id = ?", op.Id).Scan(&blocked)
		}
		if errors.Is(err, sql.ErrNoRows) || err == nil && blocked == nil {
			continue
		}
		if err != nil {
			return err
		}
		if op.BlockedBy, err = decodeBlockedBy(blocked); err != nil {
			return errInvalidRecord("%s %q: blocked_by: %v", where, op.ProcessGuid, err)
		}
	}
	return nil
}

// CancelOperation cancels an operation that has not ended (see
// db.OperationDB). It locks the LRP's desired row first, as every writer
// of the LRP does, then the operation.
//
// Canceling an IN_PROGRESS change of definition is an abort, recorded as
// an ABORT operation through AbortRollout's path (its parameters the
// CancelOperationRequest) that supersedes every operation of the LRP that
// has not ended; the canceled one's reason names the ABORT operation. The
// context's note learns the ABORT operation; the canceled operation is
// returned. When the LRP has no healthy definition to go back to other
// than the active one, or is gone, the operation just ends CANCELED.
func (s *SQLDB) CancelOperation(ctx context.Context, id string) (*models.Operation, error) {
	if err := checkOperationID("id", id); err != nil {
		return nil, err
	}
	var processGuid string
	err := s.queryRow(ctx, s.conn, "SELECT process_guid FROM operations WHERE id = ?", id).Scan(&processGuid)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errNotFound("operation %q not found", id)
	}
	if err != nil {
		return nil, asModelError("cancel operation", err)
	}
	var canceled *models.Operation
	err = s.transactOperation(ctx, "cancel operation", processGuid, func(tx *sql.Tx) (*models.Operation, []models.Event, error) {
		before, err := s.lockDesiredLRP(ctx, tx, processGuid)
		if models.IsErrorType(err, models.Error_ResourceNotFound) {
			before, err = nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		rec, err := s.readOperation(ctx, tx, id, s.driver.lockForUpdate())
		if err != nil {
			return nil, nil, err
		}
		if rec == nil {
			return nil, nil, errNotFound("operation %q not found", id)
		}
		if err := models.CheckOperationTransition(rec.op.Status, models.Operation_CANCELED); err != nil {
			var transition *models.Error
			errors.As(err, &transition)
			return nil, nil, models.NewError(models.Error_InvalidStateTransition, "operation %q: %s", id, transition.GetMessage())
		}
		canceled = rec.op
		now := s.now().UnixNano()
		who := ""
		if note := db.OperationNoteFrom(ctx); note != nil && note.RequestedBy != "" {
			who = " by " + note.RequestedBy
		}
		changing := changesDefinition(rec.op, before)
		abort := rec.op.Status == models.Operation_IN_PROGRESS && changing &&
			models.Abortable(before.GetActiveDefinitionId(), before.GetHealthyDefinitionId())
		if !abort {
			reason := "canceled" + who
			switch {
			case rec.op.Status != models.Operation_IN_PROGRESS:
			case rec.op.Kind == models.Operation_VALIDATE && !changing:
				reason += ": its validation stops, and nothing was changed"
			default:
				reason += ": nothing to roll back, the LRP's healthy definition is active"
			}
			if err := s.endOperation(ctx, tx, rec, models.Operation_CANCELED, reason, now); err != nil {
				return nil, nil, err
			}
			return nil, operationEvents(rec.op), nil
		}
		kept, err := s.keptDefinitions(ctx, tx, before.ProcessGuid)
		if err != nil {
			return nil, nil, err
		}
		healthy, err := models.AbortTarget(before, kept)
		if err != nil {
			return nil, nil, err
		}
		request := &models.CancelOperationRequest{Id: id}
		line := fmt.Sprintf("canceling %s: rolling back from %s to %s", operationName(rec.op), before.ActiveDefinitionId, healthy)
		cancelReason := func(abort *models.Operation) func(*models.Operation) string {
			return func(op *models.Operation) string {
				if op.Id == id {
					return fmt.Sprintf("canceled%s: %s rolls the LRP back to %s", who, operationName(abort), healthy)
				}
				return ""
			}
		}
		recorded, _, events, err := s.rollBackTo(ctx, tx, before, healthy, models.Operation_ABORT, request, line, cancelReason, false, now)
		if err != nil {
			return nil, nil, err
		}
		// The ABORT ended it: read it back as it ended.
		if rec, err = s.readOperation(ctx, tx, id, ""); err != nil {
			return nil, nil, err
		}
		canceled = rec.op
		return recorded, events, nil
	})
	if err != nil {
		return nil, err
	}
	return canceled, nil
}

// PruneOperations deletes old ended operations (see db.OperationDB), the
// oldest created first, through the primary key, in batches of at most
// batchSize: an operation that finished before before was created before
// it, so the candidates are the ids below models.OperationIDFloor(before),
// and one call reads each of them at most once. An operation is kept while its LRP has
// fewer than keepPerLRP operations with a higher sequence number: sequence
// numbers are MAX + 1 and only pruning deletes, so the newest keepPerLRP
// operations of an LRP are those with the top keepPerLRP numbers. Below 1,
// keepPerLRP counts as 1: an LRP's newest operation is what numbers its
// next one, so it is never deleted.
func (s *SQLDB) PruneOperations(ctx context.Context, before time.Time, keepPerLRP, limit int) (int, error) {
	keep := max(keepPerLRP, 1)
	deleted := 0
	// from is the lowest id the next batch may read: past the ones read.
	from := ""
	for deleted < limit {
		n := min(limit-deleted, batchSize)
		var ids []string
		err := s.eachRow(ctx, s.conn, `SELECT o.id FROM operations o WHERE o.id < ? AND o.id > ?
 AND o.ended = TRUE AND o.finished_at < ?
 AND o.sequence <= (SELECT MAX(n.sequence) FROM operations n WHERE n.process_guid = o.process_guid) - ?
 ORDER BY o.id LIMIT `+fmt.Sprint(n),
			[]any{models.OperationIDFloor(before), from, before.UnixNano(), keep}, func(rows *sql.Rows) error {
				var id string
				if err := rows.Scan(&id); err != nil {
					return err
				}
				ids = append(ids, id)
				return nil
			})
		if err != nil {
			return deleted, asModelError("prune operations", err)
		}
		if len(ids) == 0 {
			break
		}
		from = ids[len(ids)-1]
		var removed int64
		err = s.transact(ctx, "prune operations", func(tx *sql.Tx) error {
			res, err := s.exec(ctx, tx, "DELETE FROM operations WHERE ended = ? AND id IN "+inList(len(ids)),
				append([]any{true}, stringArgs(ids)...)...)
			if err != nil {
				return err
			}
			removed, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return deleted, err
		}
		deleted += int(removed)
		if len(ids) < n {
			break
		}
	}
	return deleted, nil
}
