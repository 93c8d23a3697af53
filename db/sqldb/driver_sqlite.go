package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/corkboard/corkboard/db/dialect"
)

// sqliteDriver is SQLite: a file in the board's process, written by one
// transaction at a time, with no row locks.
type sqliteDriver struct{ general }

func (sqliteDriver) name() dialect.Name { return dialect.SQLite }

// dataSource: the DSN is a file path (or a "file:" URI, left as it is).
// See Open for the modes and settings.
func (sqliteDriver) dataSource(dsn string, _ time.Duration) (string, error) {
	if err := prepareSQLiteFile(dsn); err != nil {
		return "", err
	}
	return sqliteURI(dsn), nil
}

// openPool: a pool whose write transactions run on one connection of it
// (writer.go).
func (sqliteDriver) openPool(name dialect.Name, dsn string, _ time.Duration) (*sql.DB, error) {
	return openWriterPool(string(name), dsn)
}

// sizePool: one writer at a time is SQLite's rule; extra connections serve reads.
func (sqliteDriver) sizePool(conn *sql.DB) { conn.SetMaxOpenConns(8) }

// oneWriter: SQLite allows one writer at a time anyway, and waiting on a
// Go mutex is cheaper than its sleeping busy handler.
func (sqliteDriver) oneWriter() bool { return true }

func (sqliteDriver) inProcess() bool { return true }

// inStrings reads the values from one argument, a JSON array, with
// SQLite's json_each: the statement's text is then the same for any
// number of values, so it is compiled once (preparesStatements), where an
// IN list of one placeholder per value was compiled on every call — for
// the convergence passes' reads of the LRPs that changed, 2% of the
// board's CPU in bbs-load peer's desire step. SQLite still looks each
// value up in the column's index.
func (sqliteDriver) inStrings(values []string) (string, []any) {
	list, err := json.Marshal(values)
	if err != nil {
		panic("sqldb: strings that do not encode as JSON: " + err.Error())
	}
	return " IN (SELECT value FROM json_each(?))", []any{string(list)}
}

// preparesStatements: SQLite compiles a statement's text into its bytecode
// on every run, in this process; a prepared one runs its compiled program.
func (sqliteDriver) preparesStatements() bool { return true }

// keepsReceipts is false: SQLite runs in the board's process, and a COMMIT
// that fails (busy) did not apply.
func (sqliteDriver) keepsReceipts() bool { return false }

func (sqliteDriver) injectedConflict() error { return injectedSQLiteBusy{} }

// injectedSQLiteBusy is SQLITE_BUSY as modernc.org/sqlite reports it.
type injectedSQLiteBusy struct{}

func (injectedSQLiteBusy) Error() string { return "injected commit fault: database is locked (5)" }
func (injectedSQLiteBusy) Code() int     { return sqliteBusy }

// snapshotIsolation: a deferred transaction, which in WAL mode reads one
// snapshot without holding the write lock.
func (sqliteDriver) snapshotIsolation() sql.IsolationLevel { return sql.LevelDefault }

func (sqliteDriver) nowNanos() string { return dialect.NowNanos(dialect.SQLite) }

// lockForUpdate is none: SQLite has no row locks and needs none, its
// write transactions already run one at a time.
func (sqliteDriver) lockForUpdate() string { return "" }

func (sqliteDriver) blobType() string { return "BLOB" }

// SQLite's keyed statements join the table with the keys read from one
// argument, a JSON array of the keys' arrays, by json_each (jsonKeys):
// their text is then the same for any number of keys, so SQLite compiles
// each once (preparesStatements), where a VALUES table of one row of
// placeholders per key was compiled on every call — 3% of the board's
// CPU in bbs-load peer's desire step, whose convergence passes lock and
// write the instances they place this way. SQLite still searches the
// table's key index once per key.

// selectByKeys never locks: SQLite's write transactions run one at a time.
func (sqliteDriver) selectByKeys(t keyTable, columns string, keyArgs []any, _ bool) (string, []any) {
	return jsonKeys(t, 0, keyArgs).selectJoining(t, columns)
}

// deleteByKeys deletes by rowid: SQLite's DELETE takes no join.
func (sqliteDriver) deleteByKeys(t keyTable, keyArgs []any) (string, []any) {
	v := jsonKeys(t, 0, keyArgs)
	return v.with + " DELETE FROM " + t.name + " WHERE rowid IN (SELECT " + t.name +
		".rowid FROM v JOIN " + t.name + " ON " + t.joinV() + ")", v.args
}

func (sqliteDriver) updateByKeys(t keyTable, set string, setArgs, keyArgs []any) (string, []any) {
	return jsonKeys(t, 0, keyArgs).updateJoining(t, set, setArgs)
}

func (sqliteDriver) updateEachByKey(column, set string, setArgs []any, changes []valueChange) (string, []any, int) {
	return jsonKeys(actualLRPKeys, 1, valueChangeArgs(changes)).updateEachJoining(column, set, setArgs)
}

// jsonKeys is v as "WITH v (k1, …[, value]) AS (SELECT value->>0, … FROM
// json_each(?))" for t's keys, each followed by values extra columns,
// bound to keyArgs (each key's columns, then its extra values, in order)
// as a JSON array of one array per key. JSON strings are UTF-8: the keys
// are (process guids and definition ids are ASCII by the models'
// validation, presences enum names); an extra value that is not (a
// placement error, which the board writes itself) would be stored with
// U+FFFD for each byte that is not.
func jsonKeys(t keyTable, values int, keyArgs []any) keysTable {
	width := len(t.columns) + values
	names := make([]string, 0, width)
	fields := make([]string, 0, width)
	for i := range t.columns {
		names = append(names, "k"+strconv.Itoa(i+1))
	}
	for range values {
		names = append(names, "value")
	}
	for i := range width {
		fields = append(fields, "value->>"+strconv.Itoa(i))
	}
	rows := make([][]any, 0, len(keyArgs)/width)
	for row := range slices.Chunk(keyArgs, width) {
		rows = append(rows, row)
	}
	list, err := json.Marshal(rows)
	if err != nil {
		panic("sqldb: keys that do not encode as JSON: " + err.Error())
	}
	return keysTable{
		with: "WITH v (" + strings.Join(names, ", ") + ") AS (SELECT " + strings.Join(fields, ", ") + " FROM json_each(?))",
		args: []any{string(list)},
	}
}

func (sqliteDriver) moveEvents() func(*SQLDB, context.Context, *sql.Tx, int64, int) (int, int64, error) {
	return (*SQLDB).moveEventsSQLite
}

// moveEventsSQLite is moveEvents in four statements of fixed text, which
// the store keeps prepared, that copy the rows inside SQLite: the general
// path reads the rows into the board and writes them back with an INSERT
// and a DELETE whose text grows with the batch, so SQLite compiled both
// anew on every move (under an annotation-update load, 5% of the board's
// CPU: moving was 6%, compiling most of it).
//
// The picked rows are the outbox's lowest limit ids, and they are exactly
// the rows with ids up to the highest picked one: tx holds SQLite's write
// lock (every write transaction begins IMMEDIATE), so no row is added or
// committed between the statements. Example: the outbox holds ids 7, 9,
// 12 and 15 and limit is 3: the count is 3 and the highest id 12; ids 7,
// 9 and 12, one event each, are logged at head+1, head+2 and head+3 in id
// order, deleted, and the head moves to head+3 (had 9 been a bundle of
// two, at head+1, head+3 and head+4, and the head would move to head+4);
// 15 stays for the next move.
func (s *SQLDB) moveEventsSQLite(ctx context.Context, tx *sql.Tx, head int64, limit int) (int, int64, error) {
	var picked int
	var last, events sql.NullInt64
	err := s.queryRow(ctx, tx, "SELECT COUNT(*), MAX(id), SUM(event_count) FROM (SELECT id, event_count FROM event_outbox ORDER BY id LIMIT ?)", limit).Scan(&picked, &last, &events)
	if err != nil || picked == 0 {
		return 0, head, err
	}
	if _, err := s.exec(ctx, tx, moveEventsSQLiteSQL, head, last.Int64); err != nil {
		return 0, head, err
	}
	if _, err := s.exec(ctx, tx, "DELETE FROM event_outbox WHERE id <= ?", last.Int64); err != nil {
		return 0, head, err
	}
	newHead := head + events.Int64
	if _, err := s.exec(ctx, tx, advanceLogHead, newHead); err != nil {
		return 0, head, err
	}
	return picked, newHead, nil
}

// moveEventsSQLiteSQL logs the outbox rows with ids up to its second
// argument after its first (the head), in id order, each at its last
// event's position (bundle.go), with the receipts they carry.
var moveEventsSQLiteSQL = insertIntoEventLog + `
 SELECT ? + SUM(event_count) OVER (ORDER BY id), event_type, event_key, payload, receipt, event_count, ` + dialect.NowNanos(dialect.SQLite) + `
 FROM event_outbox WHERE id <= ? ORDER BY id`

// prepareSQLiteFile makes the folder of a SQLite file path (0700) and the
// file (0600), or tightens the modes of the file and its -wal and -shm
// files to 0600 when they are looser. A "file:" URI or ":memory:" is left
// to SQLite.
func prepareSQLiteFile(path string) error {
	if strings.HasPrefix(path, "file:") || path == ":memory:" || path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		info, err := os.Stat(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if info.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(name, 0o600); err != nil {
				return fmt.Errorf("make %s 0600: %w", name, err)
			}
		}
	}
	return nil
}

func sqliteURI(path string) string {
	if strings.HasPrefix(path, "file:") {
		return path
	}
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(FULL)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}
