package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/corkboard/corkboard/models"
)

// The lifecycle calls' one-statement forms on Postgres, where claim and
// start throughput is bound by round trips and the database's CPU.
//
// Each is an UPDATE of the row joined to itself as it was: the subquery
// old locks the row and the outer WHERE holds the call's conditions — the
// cases in which models.DecideLifecycle writes — so the statement writes
// exactly what the general path would, and RETURNING gives the row before
// (old) and after (a) for the events. It matches nothing when the decider
// would refuse the call or find it a repeat, or when the row is missing;
// the caller then takes the general path, which tells these apart. The
// oracle spec (lifecycle_oracle_test.go) holds each statement to the
// decider over generated rows and calls.
//
// Each runs in a transaction of its own with the event log's append
// (writeStatement). The lock is taken NOWAIT: a locked row fails the statement
// with lock_not_available, and the general path waits for it in a
// transaction instead and decides with what it then finds.
//
// The statements are prepared once per connection (statementCache.get), so
// Postgres soon runs them on a cached generic plan.

// fastLifecycle is one call's statement and, given the time, its
// arguments after the key ($1, $2, $3).
type fastLifecycle struct {
	query string
	args  func(now int64) []any
}

// lifecycleUpdatePostgres builds a one-statement lifecycle call that sets
// set where the row as it was (old) satisfies where.
func lifecycleUpdatePostgres(set, where string) string {
	return `UPDATE actual_lrps a SET ` + set + `, modification_tag_index = old.modification_tag_index + 1
 FROM (SELECT ` + strings.Join(actualLRPColumns, ", ") + ` FROM actual_lrps
 WHERE process_guid = $1 AND instance_index = $2 AND presence = $3 FOR UPDATE NOWAIT) old
 WHERE a.process_guid = old.process_guid AND a.instance_index = old.instance_index AND a.presence = old.presence
 AND (` + where + `)
 RETURNING ` + prefixed("old.", actualLRPColumns) + ", " + prefixed("a.", actualLRPColumns)
}

func prefixed(prefix string, columns []string) string {
	out := make([]string, len(columns))
	for i, c := range columns {
		out[i] = prefix + c
	}
	return strings.Join(out, ", ")
}

// claimPostgres: UNCLAIMED placed on the caller's cell → CLAIMED.
var claimPostgresSQL = lifecycleUpdatePostgres(
	`state = 'CLAIMED', instance_guid = $4, placement_error = '', since = $6`,
	`old.state = 'UNCLAIMED' AND old.cell_id = $5`)

func claimPostgres(caller models.Caller) *fastLifecycle {
	return &fastLifecycle{claimPostgresSQL, func(now int64) []any {
		return []any{caller.InstanceGuid, caller.CellID, now}
	}}
}

// startPostgres: UNCLAIMED placed on the caller's cell, or CLAIMED or
// RUNNING by the caller → RUNNING; not a repeat of the same start.
var startPostgresSQL = lifecycleUpdatePostgres(
	`state = 'RUNNING', instance_guid = $4, net_info = $7, routable = $8, placement_error = '',
 since = CASE WHEN old.state = 'RUNNING' THEN old.since ELSE $6 END,
 route_ports = CASE WHEN old.state = 'RUNNING' THEN old.route_ports
 ELSE (SELECT r.route_ports FROM run_infos r WHERE r.process_guid = old.process_guid AND r.definition_id = old.definition_id) END`,
	`((old.state = 'UNCLAIMED' AND old.cell_id = $5)
 OR (old.state IN ('CLAIMED', 'RUNNING') AND old.instance_guid = $4 AND old.cell_id = $5))
 AND NOT (old.state = 'RUNNING' AND old.net_info IS NOT DISTINCT FROM $7 AND old.routable = $8)`)

func startPostgres(caller models.Caller, netInfo []byte, routable bool) *fastLifecycle {
	return &fastLifecycle{startPostgresSQL, func(now int64) []any {
		return []any{caller.InstanceGuid, caller.CellID, now, netInfo, routable}
	}}
}

// crashPostgres: CLAIMED or RUNNING by the caller → CRASHED.
var crashPostgresSQL = lifecycleUpdatePostgres(
	`state = 'CRASHED', crash_count = old.crash_count + 1, crash_reason = $7, since = $6,
 instance_guid = '', cell_id = '', net_info = NULL, routable = FALSE, occupied = FALSE, placement_error = '',
 route_ports = NULL`,
	`old.state IN ('CLAIMED', 'RUNNING') AND old.instance_guid = $4 AND old.cell_id = $5`)

func crashPostgres(caller models.Caller, reason string) *fastLifecycle {
	return &fastLifecycle{crashPostgresSQL, func(now int64) []any {
		return []any{caller.InstanceGuid, caller.CellID, now, reason}
	}}
}

// failPostgres: UNCLAIMED placed on the cell → no cell, placement error.
var failPostgresSQL = lifecycleUpdatePostgres(
	`cell_id = '', instance_guid = '', placement_error = $6, since = $5`,
	`old.state = 'UNCLAIMED' AND old.cell_id = $4`)

func failPostgres(cellID, placementError string) *fastLifecycle {
	return &fastLifecycle{failPostgresSQL, func(now int64) []any {
		return []any{cellID, now, placementError}
	}}
}

// lifecyclePostgres runs op's one-statement form. It returns the row after
// the write, or nil (and no error) when the general path must decide.
func (s *SQLDB) lifecyclePostgres(ctx context.Context, op lifecycleOp) (*models.ActualLRP, error) {
	stmt, err := s.statements.get(ctx, s.conn, op.fast.query)
	if err != nil {
		return nil, err
	}
	args := append([]any{op.key.ProcessGuid, op.key.Index, op.key.Presence.String()},
		op.fast.args(s.now().UnixNano())...)
	var after *models.ActualLRP
	err = s.writeStatement(ctx, op.key.ProcessGuid, func(tx *sql.Tx) ([]models.Event, error) {
		var old, updated actualLRPScan
		err := tx.StmtContext(ctx, stmt).QueryRowContext(ctx, args...).Scan(append(old.dest(), updated.dest()...)...)
		if err != nil {
			return nil, err
		}
		before, err := old.lrp()
		if err != nil {
			return nil, err
		}
		if after, err = updated.lrp(); err != nil {
			return nil, err
		}
		if op.call.Verb == models.LifecycleCrash {
			if err := s.recordCrash(ctx, tx, before, after.Since); err != nil {
				return nil, err
			}
		}
		return op.call.Verb.Events(before, after), nil
	})
	switch {
	case err == nil:
		return after, nil
	case errors.Is(err, sql.ErrNoRows) || isLockNotAvailable(err) || isRetryable(err):
		return nil, nil
	default:
		return nil, err
	}
}

// removePostgres deletes the caller's row in one statement. It reports
// false when the general path must decide: no such row, not the caller's,
// or locked.
func (s *SQLDB) removePostgres(ctx context.Context, key models.ActualLRPKey, caller models.Caller) (bool, error) {
	stmt, err := s.statements.get(ctx, s.conn, removePostgresSQL)
	if err != nil {
		return false, err
	}
	err = s.writeStatement(ctx, key.ProcessGuid, func(tx *sql.Tx) ([]models.Event, error) {
		before, err := scanActualLRP(tx.StmtContext(ctx, stmt).QueryRowContext(ctx,
			key.ProcessGuid, key.Index, key.Presence.String(), caller.InstanceGuid, caller.CellID))
		if err != nil {
			return nil, err
		}
		return models.LifecycleRemove.Events(before, nil), nil
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, sql.ErrNoRows) || isLockNotAvailable(err) || isRetryable(err):
		return false, nil
	default:
		return false, err
	}
}

var removePostgresSQL = `DELETE FROM actual_lrps a
 USING (SELECT process_guid, instance_index, presence FROM actual_lrps
 WHERE process_guid = $1 AND instance_index = $2 AND presence = $3 FOR UPDATE NOWAIT) old
 WHERE a.process_guid = old.process_guid AND a.instance_index = old.instance_index AND a.presence = old.presence
 AND a.instance_guid = $4 AND a.cell_id = $5
 RETURNING ` + prefixed("a.", actualLRPColumns)

// postgresLockNotAvailable is what FOR UPDATE NOWAIT fails with.
const postgresLockNotAvailable = "55P03"

func isLockNotAvailable(err error) bool {
	var pgErr sqlStateError
	return errors.As(err, &pgErr) && pgErr.SQLState() == postgresLockNotAvailable
}
