package sqldb

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/corkboard/corkboard/db/dialect"
)

// mysqlDriver is MySQL and MariaDB: ON DUPLICATE KEY instead of ON
// CONFLICT, no VALUES table both spell alike, and several statements in
// one round trip (multiStatements, which Open requires), which give the
// lifecycle calls a one-batch write (batch_mysql.go, lifecycle_mysql.go).
type mysqlDriver struct{ general }

func (mysqlDriver) name() dialect.Name { return dialect.MySQL }

func (mysqlDriver) dataSource(dsn string, ioTimeout time.Duration) (string, error) {
	if strings.Contains(dsn, "clientFoundRows=true") {
		// Affected-row counts must mean rows changed, not rows matched:
		// insertMissing relies on it.
		return "", fmt.Errorf("mysql: clientFoundRows=true is not supported")
	}
	if strings.Contains(dsn, "multiStatements=false") {
		// Some writes send two statements in one round trip
		// (joinsStatements).
		return "", fmt.Errorf("mysql: multiStatements=false is not supported")
	}
	return mysqlDSN(dsn, ioTimeout), nil
}

// openPool opens connections that bound how long the server keeps a
// transaction its board left idle (idleTransactionBound).
func (mysqlDriver) openPool(_ dialect.Name, dsn string, _ time.Duration) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	if _, set := cfg.Params[mariadbIdleTransaction]; set {
		// The operator's own choice, which the driver sets at connect.
		return sql.OpenDB(connector), nil
	}
	return sql.OpenDB(idleTransactionBound{connector}), nil
}

// mariadbIdleTransaction is MariaDB's idle_transaction_timeout: the server
// closes a connection that has been idle inside a transaction for that
// many seconds, which rolls the transaction back and releases its locks.
const mariadbIdleTransaction = "idle_transaction_timeout"

// idleTransactionBound sets idle_transaction_timeout to idleTransactionLimit
// on every new connection. A board's transaction never waits on the board
// for long, so one idle that long belongs to a board cut off from the
// database. Nothing else ends it: a proxy in front of the database (HAProxy
// in the Galera topology) keeps the server side of a connection whose
// client vanished open for as long as its own timeout, an hour in
// docs/ha-galera.md, and the transaction's row locks with it — every write
// of the LRP the cut board was converging would wait on them, through the
// board that took the lease over too. MySQL has no such setting: there the
// SET fails with "unknown system variable" and the connection is used as
// it is (Postgres: idle_in_transaction_session_timeout, postgresDSN).
type idleTransactionBound struct{ sqldriver.Connector }

func (b idleTransactionBound) Connect(ctx context.Context) (sqldriver.Conn, error) {
	conn, err := b.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	set := fmt.Sprintf("SET SESSION %s = %d", mariadbIdleTransaction, int(idleTransactionLimit/time.Second))
	_, err = conn.(sqldriver.ExecerContext).ExecContext(ctx, set, nil)
	var mysqlErr *mysql.MySQLError
	if err != nil && !(errors.As(err, &mysqlErr) && mysqlErr.Number == mysqlUnknownSystemVariable) {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// mysqlUnknownSystemVariable is ER_UNKNOWN_SYSTEM_VARIABLE.
const mysqlUnknownSystemVariable = 1193

func (mysqlDriver) nowNanos() string { return dialect.NowNanos(dialect.MySQL) }

func (mysqlDriver) upsert(table string, columns, key, update []string) string {
	var b strings.Builder
	writeInsert(&b, table, columns, 1)
	b.WriteString(" ON DUPLICATE KEY UPDATE ")
	for i, c := range update {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c + " = VALUES(" + c + ")")
	}
	return b.String()
}

func (mysqlDriver) insertMissing(table string, columns, key []string, rows int) string {
	var b strings.Builder
	writeInsert(&b, table, columns, rows)
	// A no-op assignment: MySQL reports 0 affected rows for it.
	b.WriteString(" ON DUPLICATE KEY UPDATE " + key[0] + " = " + key[0])
	return b.String()
}

// joinsStatements reports whether two statements sent as one, separated by
// a semicolon, run one after the other in one round trip, stopping at the
// first that fails: MySQL with multiStatements (which Open requires). On
// the others a round trip is cheap (SQLite runs in process) or a write
// has a single-statement path of its own (Postgres).
func (mysqlDriver) joinsStatements() bool { return true }

func (mysqlDriver) lifecycle() lifecycleFunc {
	return (*SQLDB).lifecycleMySQL
}

// keepsReceipts: a connection to MySQL can break during a COMMIT, and a
// Galera cluster's failover breaks every connection to the old writer.
func (mysqlDriver) keepsReceipts() bool { return true }

// receiptOnEvents: a receipt of its own costs MySQL a statement and a row
// of another table, then the prune's delete and InnoDB's purge of it,
// some 28µs of the server's CPU per write measured (docs/perf-writes.md);
// on an outbox row the transaction inserts anyway it costs 16 bytes.
func (mysqlDriver) receiptOnEvents() bool { return true }

func (mysqlDriver) injectedConflict() error {
	return &mysql.MySQLError{Number: mysqlDeadlock, Message: "injected commit fault: Deadlock found when trying to get lock; try restarting transaction"}
}

func (mysqlDriver) blobType() string { return "BINARY" }

// selectByKeys, deleteByKeys and updateByKeys name the keys as
// "(key) IN ((…), …)" with USE INDEX (PRIMARY): MariaDB otherwise spends
// most of a second per statement weighing the other index that starts
// with process_guid (see convergence_sql.go).
func (mysqlDriver) selectByKeys(t keyTable, columns string, keyArgs []any, lock bool) (string, []any) {
	query := "SELECT " + columns + " FROM " + t.name + " USE INDEX (PRIMARY) WHERE " + t.inTuples(t.keys(keyArgs))
	if lock {
		query += " FOR UPDATE"
	}
	return query, keyArgs
}

func (mysqlDriver) deleteByKeys(t keyTable, keyArgs []any) (string, []any) {
	return "DELETE " + t.name + " FROM " + t.name + " USE INDEX (PRIMARY) WHERE " + t.inTuples(t.keys(keyArgs)), keyArgs
}

func (mysqlDriver) updateByKeys(t keyTable, set string, setArgs, keyArgs []any) (string, []any) {
	query := "UPDATE " + t.name + " USE INDEX (PRIMARY) SET " + set + " WHERE " + t.inTuples(t.keys(keyArgs))
	return query, append(setArgs[:len(setArgs):len(setArgs)], keyArgs...)
}

// updateEachByKey sets column (cell_id, placement_error or definition_id) to each row's
// own value, and set (whose ? take setArgs) in every row. rowsPerChange is how many affected rows the
// database reports for each row changed.
//
// MySQL does it as an insert of the rows that all exist (they are locked)
// and so all update: a join with a UNION ALL of a thousand SELECTs takes
// ten times longer.
func (mysqlDriver) updateEachByKey(column, set string, setArgs []any, changes []valueChange) (query string, args []any, rowsPerChange int) {
	t := actualLRPKeys
	columns := []string{
		"process_guid", "instance_index", "presence", "domain", "definition_id", "state",
		"crash_reason", "since", "modification_tag_epoch", "cell_id", "placement_error",
	}
	args = make([]any, 0, len(changes)*len(columns)+len(setArgs))
	for _, c := range changes {
		r := c.row
		cellID, placementError, definitionID := r.CellId, r.PlacementError, r.DefinitionId
		switch column {
		case "cell_id":
			cellID = c.value
		case "placement_error":
			placementError = c.value
		case "definition_id":
			definitionID = c.value
		}
		args = append(args, r.ProcessGuid, r.Index, r.Presence.String(), r.Domain, definitionID, r.State.String(),
			r.CrashReason, r.Since, r.GetModificationTag().GetEpoch(), cellID, placementError)
	}
	var b strings.Builder
	writeInsert(&b, t.name, columns, len(changes))
	b.WriteString(" ON DUPLICATE KEY UPDATE " + column + " = VALUES(" + column + "), " + set)
	// MySQL counts an insert that updates an existing row twice.
	return b.String(), append(args, setArgs...), 2
}

// mysqlDSN adds the parameters the board relies on unless the operator set them.
// interpolateParams sends a statement with its arguments in one round trip
// instead of three (prepare, execute, close); the driver refuses it for
// character sets where client-side escaping would be unsafe.
//
// An I/O timeout becomes the driver's readTimeout and writeTimeout (per
// read and write, as WithIOTimeout means) and its dial timeout, unless the
// DSN sets them.
func mysqlDSN(dsn string, ioTimeout time.Duration) string {
	params := []string{"multiStatements=true", "parseTime=false", "interpolateParams=true"}
	if ioTimeout > 0 {
		for _, name := range []string{"readTimeout", "writeTimeout", "timeout"} {
			params = append(params, name+"="+ioTimeout.String())
		}
	}
	for _, p := range params {
		if !strings.Contains(dsn, strings.SplitN(p, "=", 2)[0]+"=") {
			if strings.Contains(dsn, "?") {
				dsn += "&" + p
			} else {
				dsn += "?" + p
			}
		}
	}
	return dsn
}
