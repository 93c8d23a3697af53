package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/models"
)

// postgresDriver is Postgres: $n placeholders, arrays as parameters and
// data-modifying WITH, which give it one-statement forms of the hot
// writes (the fast verbs below, and desire_postgres.go and
// lifecycle_postgres.go).
type postgresDriver struct{ general }

func (postgresDriver) name() dialect.Name { return dialect.Postgres }

func (postgresDriver) dataSource(dsn string, _ time.Duration) (string, error) {
	return postgresDSN(dsn), nil
}

// openPool dials connections through deadlineDialer when there is an I/O
// timeout (io_timeout.go).
func (postgresDriver) openPool(name dialect.Name, dsn string, ioTimeout time.Duration) (*sql.DB, error) {
	if ioTimeout <= 0 {
		return sql.Open(string(name), dsn)
	}
	connector, err := pq.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	connector.Dialer(deadlineDialer{timeout: ioTimeout})
	return sql.OpenDB(connector), nil
}

// bytewise is column compared and ordered as bytes. The guid and presence
// columns are byte-collated on every dialect (see ConvergenceSnapshot);
// cells.cell_id is on SQLite (BINARY) and MySQL (utf8mb4_bin) but has the
// database's collation on Postgres, where a locale would order "B" after
// "a" and pages would disagree with the other dialects.
// preparesStatements: Postgres parses, analyses and plans a statement sent
// as text every time, and lib/pq describes it in a round trip of its own
// first.
func (postgresDriver) preparesStatements() bool { return true }

// keepsReceipts: a connection to Postgres can break during a COMMIT.
func (postgresDriver) keepsReceipts() bool { return true }

func (postgresDriver) injectedConflict() error {
	return &pq.Error{Code: postgresSerializationFailure, Message: "injected commit fault: could not serialize access"}
}

func (postgresDriver) bytewise(column string) string { return column + ` COLLATE "C"` }

// pagePlanning is the statement a page of a list runs first, in its own
// read-only transaction, or "" when the dialect needs none. A page is
// WHERE filter AND key > cursor ORDER BY key LIMIT n, and an index carries
// the key after each filter (migration 0012), so the cheap plan walks that
// index and stops after n rows. Postgres picks it only when its statistics
// say the table is large: on a freshly loaded table it guesses a few
// hundred rows and reads and sorts every row after the cursor instead
// (EXPLAIN ANALYZE of a page of 500 desired LRPs after 5,000 of 20,000
// on a fresh table: 75 ms, against 3 ms walking the index), for every
// page of a streamed list (or, through another index sorted on the
// guid alone, an incremental sort). Forbidding both sorts leaves it the
// index walk whatever the statistics; the settings are local to the
// transaction (set_config's true), so no other statement on the
// connection is planned that way. A forbidden sort that is the only plan
// (cells, below) still runs, but at a cost so high that Postgres would
// compile the query to machine code each time (tens of milliseconds):
// jit is off too. One statement, so one round trip;
// enable_incremental_sort needs Postgres 13. MySQL and SQLite walk the
// index as they are (see the list pages' plan spec; MariaDB may sort the
// instances of the one LRP a filter names, which are all it reads).
func (postgresDriver) pagePlanning() string {
	return "SELECT set_config('enable_sort', 'off', true), set_config('enable_incremental_sort', 'off', true), set_config('jit', 'off', true)"
}

func (postgresDriver) nowNanos() string { return dialect.NowNanos(dialect.Postgres) }

func (postgresDriver) blobType() string { return "BYTEA" }

// selectByKeys locks only the table's rows, not the VALUES table's.
func (postgresDriver) selectByKeys(t keyTable, columns string, keyArgs []any, lock bool) (string, []any) {
	query, args := valuesKeys(t, 0, keyArgs).selectJoining(t, columns)
	if lock {
		query += " FOR UPDATE OF " + t.name
	}
	return query, args
}

func (postgresDriver) deleteByKeys(t keyTable, keyArgs []any) (string, []any) {
	v := valuesKeys(t, 0, keyArgs)
	return v.with + " DELETE FROM " + t.name + " USING v WHERE " + t.joinV(), v.args
}

func (postgresDriver) updateByKeys(t keyTable, set string, setArgs, keyArgs []any) (string, []any) {
	return valuesKeys(t, 0, keyArgs).updateJoining(t, set, setArgs)
}

func (postgresDriver) updateEachByKey(column, set string, setArgs []any, changes []valueChange) (string, []any, int) {
	return valuesKeys(actualLRPKeys, 1, valueChangeArgs(changes)).updateEachJoining(column, set, setArgs)
}

// The fast paths. Each is tried first; the transactional path runs when
// it declines (see driver).

func (postgresDriver) desireNew() func(*SQLDB, context.Context, *models.DesiredLRP, []any, *models.DesireLRPRequest) (*models.Operation, error) {
	return (*SQLDB).desireNew
}

func (postgresDriver) updateNow() updateNowFunc {
	return (*SQLDB).updateNowPostgres
}

func (postgresDriver) lifecycle() lifecycleFunc {
	return (*SQLDB).lifecyclePostgres
}

func (postgresDriver) appendEvents() func(*SQLDB, context.Context, *sql.Tx, outboxRows, []byte) error {
	return (*SQLDB).appendEventsPostgres
}

func (postgresDriver) moveEvents() func(*SQLDB, context.Context, *sql.Tx, int64, int) (int, int64, error) {
	return (*SQLDB).moveEventsPostgres
}

func (postgresDriver) writeActualLRPs() func(*SQLDB, context.Context, queryer, []rowWrite) error {
	return (*SQLDB).writeActualLRPsPostgres
}

func (postgresDriver) insertCreated() func([]*models.ActualLRP, int64) (string, []any) {
	return insertCreatedPostgres
}

// arrays are outbox rows as Postgres arrays of their types, keys,
// payloads and event counts, in order.
func (r outboxRows) arrays() []any {
	return []any{pq.Array(r.types), pq.Array(r.keys), pq.ByteaArray(r.payloads), pq.Array(r.counts)}
}

// appendEventsPostgres inserts the events in one statement however many
// there are, with the commit receipt, prepared once per pooled connection:
// parsing and planning it cost Postgres more than running it, on every
// write.
func (s *SQLDB) appendEventsPostgres(ctx context.Context, tx *sql.Tx, rows outboxRows, receipt []byte) error {
	query, args := appendEventsPostgresSQL, rows.arrays()
	if receipt != nil {
		query, args = appendEventsReceiptPostgresSQL, append(args, receipt)
	}
	stmt, err := s.statements.get(ctx, s.conn, query)
	if err != nil {
		return err
	}
	_, err = tx.StmtContext(ctx, stmt).ExecContext(ctx, args...)
	return err
}

// appendEventsPostgresSQL inserts outbox rows given as four arrays of one
// length (outboxRows.arrays); ORDINALITY keeps their order, and with it
// their ids'.
const appendEventsPostgresSQL = `INSERT INTO event_outbox (event_type, event_key, payload, event_count)
 SELECT e.event_type, e.event_key, e.payload, e.event_count
 FROM unnest($1::text[], $2::text[], $3::bytea[], $4::smallint[]) WITH ORDINALITY AS e(event_type, event_key, payload, event_count, n) ORDER BY e.n`

// appendEventsReceiptPostgresSQL is appendEventsPostgresSQL with the commit
// receipt ($5) inserted by the same statement.
const appendEventsReceiptPostgresSQL = `WITH receipt AS (INSERT INTO commit_receipts (token) VALUES ($5))
` + appendEventsPostgresSQL

// moveEventsPostgres is moveEvents in one statement that moves the rows
// inside the database: they never travel to the board and back, and the
// head's lock is held for one round trip instead of four. It is prepared:
// planning it costs Postgres about a millisecond, more than moving a few
// dozen rows. The plan reads the outbox by its index whatever the
// outbox's size: "ORDER BY id LIMIT $2" with the limit a parameter is
// planned as a tenth of the table, which the index serves best (with the
// limit a constant and the table small, Postgres would sort its heap,
// which grows with every row it ever held until it is vacuumed), and
// the range between two subquery values counts as a sliver.
func (s *SQLDB) moveEventsPostgres(ctx context.Context, tx *sql.Tx, head int64, limit int) (int, int64, error) {
	stmt, err := s.statements.get(ctx, s.conn, moveEventsPostgresSQL)
	if err != nil {
		return 0, head, err
	}
	var moved int
	var events int64
	var notified sql.NullBool
	if err := tx.StmtContext(ctx, stmt).QueryRowContext(ctx, head, limit).Scan(&moved, &events, &notified); err != nil {
		return 0, head, err
	}
	return moved, head + events, nil
}

// moveEventsPostgresSQL deletes the oldest $2 outbox rows and logs what the
// DELETE returned, in id order, each at $1 plus the events of the rows up
// to it and itself (its last event's position, bundle.go), so that exactly
// the rows deleted are logged. Every part reads the outbox with the statement's
// one snapshot, taken after the caller locked the head (no other sequencer
// deletes meanwhile), so the rows it sees with ids from the lowest to the
// highest picked are the picked ones: a row committed since is not seen,
// and one not committed yet stays for a later run, as with moveEvents.
// Example: the snapshot sees ids 7, 9, 12, 15 and $2 is 3: picked is 7, 9,
// 12; the DELETE takes 7 to 12, which it sees as 7, 9 and 12 even if 8
// commits meanwhile. A range rather than an id list: the index is walked
// once, not descended per id. The head moves only when rows moved, and
// then every listening board is notified on commit (pg_notify returns
// void, which is not NULL: the column is only there to call it).
var moveEventsPostgresSQL = `WITH picked AS (
	SELECT id FROM event_outbox ORDER BY id LIMIT $2
), moved AS (
	DELETE FROM event_outbox
	WHERE id BETWEEN (SELECT min(id) FROM picked) AND (SELECT max(id) FROM picked)
	RETURNING id, event_type, event_key, payload, event_count
), logged AS (
	INSERT INTO event_log (position, event_type, event_key, payload, event_count, created_at)
	SELECT $1 + sum(event_count) OVER (ORDER BY id), event_type, event_key, payload, event_count, ` + postgresDriver{}.nowNanos() + `
	FROM moved
), head AS (
	UPDATE event_log_head SET position = $1 + (SELECT sum(event_count) FROM moved)
	WHERE id = 1 AND EXISTS (SELECT 1 FROM moved)
)
SELECT n, events, CASE WHEN n > 0 THEN pg_notify('` + eventNotifyChannel + `', '') IS NULL END
FROM (SELECT count(*) AS n, COALESCE(sum(event_count), 0) AS events FROM moved) c`

// writeActualLRPsPostgres is one UPDATE of many rows, joined to the new
// values; the first row of VALUES gives the columns their types.
func (s *SQLDB) writeActualLRPsPostgres(ctx context.Context, q queryer, writes []rowWrite) error {
	const first = `(?::varchar, ?::integer, ?::varchar, ?::varchar, ?::bigint, ?::varchar, ?::varchar, ?::varchar,
 ?::bytea, ?::integer, ?::text, ?::bigint, ?::text, ?::boolean, ?::boolean, ?::bigint, ?::bytea)`
	const more = `, (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	var query strings.Builder
	query.WriteString(`UPDATE actual_lrps a SET instance_guid = v.instance_guid, cell_id = v.cell_id, state = v.state,
 net_info = v.net_info, crash_count = v.crash_count, crash_reason = v.crash_reason, since = v.since,
 placement_error = v.placement_error, routable = v.routable, occupied = v.occupied, modification_tag_index = v.new_index,
 route_ports = v.route_ports
 FROM (VALUES ` + first)
	query.WriteString(strings.Repeat(more, len(writes)-1))
	query.WriteString(`) AS v(process_guid, instance_index, presence, epoch, old_index, instance_guid, cell_id, state,
 net_info, crash_count, crash_reason, since, placement_error, routable, occupied, new_index, route_ports)
 WHERE a.process_guid = v.process_guid AND a.instance_index = v.instance_index AND a.presence = v.presence
 AND a.modification_tag_epoch = v.epoch AND a.modification_tag_index = v.old_index`)
	args := make([]any, 0, 17*len(writes))
	for _, w := range writes {
		netInfo, err := encodeNetInfo(w.after.NetInfo)
		if err != nil {
			return errInvalid("net_info", err.Error())
		}
		before, after := w.before, w.after
		routePorts, err := storedRoutePorts(after)
		if err != nil {
			return err
		}
		args = append(args, before.ProcessGuid, before.Index, before.Presence.String(),
			before.ModificationTag.Epoch, int64(before.ModificationTag.Index),
			after.InstanceGuid, after.CellId, after.State.String(), netInfo, after.CrashCount, after.CrashReason,
			after.Since, after.PlacementError, after.Routable, storedOccupied(after), int64(after.ModificationTag.Index), routePorts)
	}
	res, err := s.exec(ctx, q, query.String(), args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if int(n) != len(writes) {
		return errLostRace
	}
	return nil
}

// insertCreatedPostgres binds one array per column instead of twelve
// parameters per row: Postgres then parses and plans a short statement
// rather than a thousand-row VALUES list, which makes a batch of creates
// several times faster.
func insertCreatedPostgres(rows []*models.ActualLRP, now int64) (string, []any) {
	n := len(rows)
	guids, domains, cells, definitions, placementErrors, epochs := make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	indices := make([]int64, n)
	for i, lrp := range rows {
		guids[i], indices[i], domains[i], cells[i] = lrp.ProcessGuid, int64(lrp.Index), lrp.Domain, lrp.CellId
		definitions[i], placementErrors[i], epochs[i] = lrp.DefinitionId, lrp.PlacementError, lrp.ModificationTag.Epoch
	}
	const insert = `INSERT INTO actual_lrps (process_guid, instance_index, presence, domain, cell_id,
 definition_id, state, since, crash_reason, placement_error, modification_tag_epoch, modification_tag_index)
 SELECT process_guid, instance_index, $1, domain, cell_id, definition_id, $2, $3, '', placement_error, epoch, 0
 FROM unnest($4::text[], $5::integer[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
 AS created (process_guid, instance_index, domain, cell_id, definition_id, placement_error, epoch)
 ON CONFLICT (process_guid, instance_index, presence) DO NOTHING`
	return insert, []any{presenceOrdinary, stateUnclaimed, now, pq.Array(guids), pq.Array(indices),
		pq.Array(domains), pq.Array(cells), pq.Array(definitions), pq.Array(placementErrors), pq.Array(epochs)}
}

// postgresDSN adds the parameters the board relies on unless the operator
// set them. DSNs come as URLs or as keyword=value lists.
//
// binary_parameters: lib/pq then sends a statement with its arguments in
// one round trip instead of two, and bytea arguments as raw bytes.
//
// idle_in_transaction_session_timeout (a server setting lib/pq passes on
// at connect): a board's transaction never waits on the board for long,
// so one idle for idleTransactionLimit belongs to a board cut off from
// the database. Postgres then ends it, and its row locks — the lease
// row's share lock among them (rowlock.Check) — no longer hold up the
// board that took over.
func postgresDSN(dsn string) string {
	idle := strconv.FormatInt(idleTransactionLimit.Milliseconds(), 10)
	for _, p := range []string{"binary_parameters=yes", "idle_in_transaction_session_timeout=" + idle} {
		if strings.Contains(dsn, strings.SplitN(p, "=", 2)[0]+"=") {
			continue
		}
		switch {
		case !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://"):
			dsn = strings.TrimSpace(dsn + " " + p)
		case strings.Contains(dsn, "?"):
			dsn += "&" + p
		default:
			dsn += "?" + p
		}
	}
	return dsn
}

// postgresLockNotAvailable is what FOR UPDATE NOWAIT fails with (the
// desire and update fast paths take their locks NOWAIT).
const postgresLockNotAvailable = "55P03"

func isLockNotAvailable(err error) bool {
	var pgErr sqlStateError
	return errors.As(err, &pgErr) && pgErr.SQLState() == postgresLockNotAvailable
}
