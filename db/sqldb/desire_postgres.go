package sqldb

import (
	"context"
	"database/sql"
	"errors"

	"github.com/lib/pq"

	"github.com/corkboard/corkboard/models"
)

// desireNewPostgres is DesireLRP's fast path on Postgres, where desire
// throughput is bound by the database's CPU: the transactional path costs
// five round trips (BEGIN, three inserts, COMMIT) and three statements to
// parse and plan per desire; this statement, prepared once per connection,
// costs one round trip and, once Postgres caches its generic plan, no
// parsing or planning at all. MySQL has no data-modifying WITH, and SQLite's
// round trips are in-process, so both keep the transactional path only.
//
// The statement stores the desired row, its definition, its instances and
// the desire's operation (db.OperationDB), and appends its events to the
// log's outbox, auto-committed, but only when the guid has no stored
// definition with that id and no instance rows: then there is no content
// to compare and no left-over instance to keep, and the writes are those
// of the transactional path. Otherwise, or when the guid is already
// desired, it stores nothing and returns 0, and the caller runs the
// transactional path, which tells ResourceExists from a reusable or
// conflicting definition, and keeps an ORDINARY instance left over from a
// removed LRP at its index, as insertUnclaimed does.
//
// The definition, instance, operation and event inserts select from the
// desired insert's RETURNING, so they store nothing when it stored nothing.
// The operation is number 1, so its event can be encoded before the
// statement runs: a guid with operations (those of an earlier LRP outlive
// it, and pruning may have left only its newest, say number 7) stores
// nothing here and goes to the transactional path, which numbers it on
// from them; the unique index on (process_guid, sequence) refuses a 1
// stored meanwhile, and the transactional path takes over. A concurrent
// desire of the same guid makes ON CONFLICT wait for it and then store
// nothing. The instances are inserted without ON CONFLICT: the guid had
// none when the statement began, so a conflict means another writer
// inserted one meanwhile, and its unique violation fails the statement
// and leaves the desire to the transactional path. So a statement that
// commits has stored every instance, and its events are known before it
// runs.
//
// The events go to the outbox in the same statement, so that a desire is
// one auto-committed round trip rather than four (BEGIN, this, the outbox
// insert, COMMIT): bundled (bundle.go: $30 to $33, the rows of the LRP's
// events), by logged; $34 is the commit receipt.
// The statement answers whether it stored the LRP and the operation's
// sequence.
// $1 to $15, $35 and $36 are the desired row (desiredLRPColumns, its last
// columns, disruption_budget and budget_group, after the rest); $12 (now) is also the
// definition's created_at, the instances' since and the operation's times.
// The casts in NOT EXISTS give $1 and $7 the type of their columns, which
// Postgres would otherwise deduce as text there and as varchar in SELECT.
const desireNewPostgres = `WITH taken AS (
	SELECT 1 FROM desired_lrps WHERE process_guid = $1::varchar FOR UPDATE NOWAIT
), desired AS (
	INSERT INTO desired_lrps (process_guid, domain, instances, placement_tags, routes, annotation,
		active_definition_id, healthy_definition_id, update_strategy,
		modification_tag_epoch, modification_tag_index, created_at, updated_at, autoscaling, autoscaler, disruption_budget, budget_group)
	SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $35, $36
	WHERE NOT EXISTS (SELECT 1 FROM run_infos WHERE process_guid = $1::varchar AND definition_id = $7::varchar)
		AND NOT EXISTS (SELECT 1 FROM operations WHERE process_guid = $1::varchar)
		AND NOT EXISTS (SELECT 1 FROM actual_lrps WHERE process_guid = $1::varchar)
		AND NOT EXISTS (SELECT 1 FROM taken)
	ON CONFLICT (process_guid) DO NOTHING
	RETURNING process_guid, domain, active_definition_id
), definition AS (
	INSERT INTO run_infos (process_guid, definition_id, content_hash, memory_mb, disk_mb, definition, created_at, route_ports, routes,
		became_healthy)
	SELECT process_guid, active_definition_id, $16, $17, $18, $19, $12, $29, $5, TRUE FROM desired
), instances AS (
	INSERT INTO actual_lrps (process_guid, instance_index, presence, domain, definition_id, state,
		since, crash_reason, placement_error, modification_tag_epoch, modification_tag_index)
	SELECT d.process_guid, e.ordinality - 1, $20, d.domain, d.active_definition_id, $21,
		$12, '', '', e.epoch, 0
	FROM desired d, unnest($22::text[]) WITH ORDINALITY AS e(epoch, ordinality)
), operation AS (
	INSERT INTO operations (id, process_guid, sequence, kind, status, reason, parameters, definition_id,
		requested_by, created_at, started_at, finished_at, lease_owner, lease_expires_at, history, ended,
		modification_index)
	SELECT $23, d.process_guid,
		1,
		$24, $25, '', $26, d.active_definition_id, $27, $12, $12, $12, '', 0, $28, TRUE, 1
	FROM desired d
	RETURNING sequence
), logged AS (
	INSERT INTO event_outbox (event_type, event_key, payload, event_count)
	SELECT e.event_type, e.event_key, e.payload, e.event_count
	FROM unnest($30::text[], $31::text[], $32::bytea[], $33::smallint[]) WITH ORDINALITY AS e(event_type, event_key, payload, event_count, n)
	WHERE EXISTS (SELECT 1 FROM desired)
	ORDER BY e.n
), receipt AS (
	INSERT INTO commit_receipts (token)
	SELECT $34 FROM desired
)
SELECT (SELECT count(*) FROM desired), COALESCE((SELECT sequence FROM operation), 0)`

// desireNew runs desireNewPostgres for stored, whose definition carries its
// id and created_at, desiredRow, the desired_lrps row in desiredLRPColumns
// order, and request, the desire as asked. It returns the operation it
// recorded when it stored the LRP, nil otherwise. A unique violation or a
// transient conflict rolled the statement back and is reported as nil, for
// the transactional path to sort out.
//
// The statement commits on its own, events included. It waits for no row
// lock it can avoid: taken locks the guid's desired row NOWAIT, and a
// locked one — say, a remove in progress — fails the statement with
// lock_not_available, leaving the desire to the transactional path, which
// waits for it and decides with what it then finds. The waits left are
// ON CONFLICT's, for a concurrent desire inserting the same guid (whichever
// of the two commits, the other stores nothing and logs nothing), and an
// instance insert's, for another writer's uncommitted instance of the guid
// (its commit fails the statement, as above).
func (s *SQLDB) desireNew(ctx context.Context, stored *models.DesiredLRP, desiredRow []any, request *models.DesireLRPRequest) (*models.Operation, error) {
	def := stored.Definition
	// Sealed here, before the statement: its row (the guid and the
	// definition id) is known already.
	blob, err := s.encodeDefinition(stored.ProcessGuid, def)
	if err != nil {
		return nil, err
	}
	epochs := make([]string, stored.Instances)
	for i := range epochs {
		epochs[i] = newEpoch()
	}
	op, err := s.draftOperation(ctx, stored.ProcessGuid, models.Operation_DESIRE, request, stored.CreatedAt)
	if err != nil {
		return nil, err
	}
	op.Sequence = 1
	finishDesire(op, stored, stored.CreatedAt)
	parameters, history, err := s.encodeOperationBlobs(op)
	if err != nil {
		return nil, err
	}
	served, err := encodeServedRoutes(stored.Routes)
	if err != nil {
		return nil, err
	}
	// The desire's events, as the transactional path would publish them:
	// a statement that commits has stored every instance.
	created := make([]*models.ActualLRP, len(epochs))
	for i := range created {
		created[i] = newUnclaimed(stored.ProcessGuid, int32(i), stored.Domain, stored.ActiveDefinitionId,
			epochs[i], stored.CreatedAt)
	}
	encoded, err := marshalEvents(append(desiredEvents(stored, created), models.OperationChanged(op)))
	if err != nil {
		return nil, err
	}
	// The receipt is inserted only with the LRP: a statement that stored it
	// and lost its connection is settled as stored (commitStatement).
	token := s.newReceiptToken()
	args := make([]any, 0, len(desiredRow)+24)
	last := len(desiredRow) - 2 // disruption_budget and budget_group, $35 and $36
	args = append(args, desiredRow[:last]...)
	args = append(args, models.DefinitionContentHash(def), def.MemoryMb, def.DiskMb, blob,
		presenceOrdinary, stateUnclaimed, pq.Array(epochs),
		op.Id, op.Kind.String(), op.Status.String(), parameters, op.RequestedBy, history, served.ports)
	args = append(args, encoded.bundled().arrays()...)
	args = append(args, token, desiredRow[last], desiredRow[last+1])

	// Prepared: parsing, analysing and planning the statement cost the
	// database more than running it.
	stmt, err := s.statements.get(ctx, s.conn, desireNewPostgres)
	if err != nil {
		return nil, err
	}
	var desired int
	run := func(stmt *sql.Stmt) error {
		return stmt.QueryRowContext(ctx, args...).Scan(&desired, &op.Sequence)
	}
	// Coalesced, the statement runs in the group's transaction; one that
	// stored nothing fails the group and runs again alone, committing on
	// its own as it would have.
	err = s.writeCoalesced(ctx, stored.ProcessGuid, func(tx *sql.Tx) ([]models.Event, error) {
		if err := run(tx.StmtContext(ctx, stmt)); err != nil {
			return nil, err
		}
		if desired != 1 {
			return nil, errNotDesired
		}
		return nil, nil
	}, func() error {
		settled, err := s.commitStatement(token, func() error { return run(stmt) })
		if settled {
			desired = 1
		}
		return err
	})
	switch {
	case err == nil && desired == 1:
		s.eventsCommitted()
		s.fastDesires.Add(1)
		return op, nil
	case err == nil:
		return nil, nil
	case isUniqueViolation(err) || isLockNotAvailable(err) || isRetryable(err):
		return nil, nil
	default:
		return nil, err
	}
}

// errNotDesired is desireNewPostgres storing nothing in a coalesced group.
var errNotDesired = errors.New("desire not stored by its one statement")
