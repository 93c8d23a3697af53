package sqldb

import (
	"strconv"
	"strings"

	"github.com/corkboard/corkboard/models"
)

// Convergence reads and writes rows named by a list of keys, up to
// batchSize at a time. Each dialect gets the form its planner turns into
// one primary key lookup per key:
//
//   - Postgres joins the table with the keys as a VALUES table named v
//     (k1, k2, …), typed by its first row, which says so.
//   - SQLite joins the same v, read from one argument, the keys as a JSON
//     array (json_each: jsonKeys in driver_sqlite.go), so that the
//     text does not vary with the number of keys and is compiled once.
//     SQLite scans the whole table for "(key) IN (…)", but searches its
//     key index for the join.
//   - MySQL has no VALUES table that MariaDB and MySQL spell alike, so it
//     gets "(key) IN ((…), …)" with USE INDEX (PRIMARY): MariaDB otherwise
//     spends most of a second per statement weighing the other index that
//     starts with process_guid.
//
// Keys are bound in order, each as its columns in order (on SQLite, in
// that order inside the one argument).

// keyTable is a table whose rows convergence addresses by key.
type keyTable struct {
	name    string
	columns []string
	// pgTypes are the Postgres types of the key columns.
	pgTypes []string
}

var (
	actualLRPKeys = keyTable{
		name:    "actual_lrps",
		columns: []string{"process_guid", "instance_index", "presence"},
		pgTypes: []string{"text", "integer", "text"},
	}
	runInfoKeys = keyTable{
		name:    "run_infos",
		columns: []string{"process_guid", "definition_id"},
		pgTypes: []string{"text", "text"},
	}
)

// selectByKeys, deleteByKeys, updateByKeys and updateEachByKey are
// driver verbs (driver.go): MySQL's forms are in driver_mysql.go. Postgres
// and SQLite join the table with v, a keys table (keysTable): Postgres's
// a VALUES table (valuesKeys), SQLite's read from one JSON argument
// (jsonKeys in driver_sqlite.go).

// keysTable is v (k1, …[, value]): the WITH clause that makes it, and the
// arguments that clause binds.
type keysTable struct {
	with string
	args []any
}

// selectJoining reads columns (of t, unqualified) of the rows whose keys
// v holds, and returns the statement with its arguments in order.
func (v keysTable) selectJoining(t keyTable, columns string) (string, []any) {
	return v.with + " SELECT " + columns + " FROM v JOIN " + t.name + " ON " + t.joinV(), v.args
}

// updateJoining sets set (whose ? take setArgs) in the rows whose keys v
// holds, and returns the statement with its arguments in order.
func (v keysTable) updateJoining(t keyTable, set string, setArgs []any) (string, []any) {
	query := v.with + " UPDATE " + t.name + " SET " + set + " FROM v WHERE " + t.joinV()
	return query, append(v.args[:len(v.args):len(v.args)], setArgs...)
}

// updateEachJoining sets column (cell_id, placement_error or
// definition_id) of each actual LRP to its own value, v's value column
// (v holds valueChangeArgs), and set (whose ? take setArgs) in every row;
// the database reports one affected row per row changed.
func (v keysTable) updateEachJoining(column, set string, setArgs []any) (query string, args []any, rowsPerChange int) {
	query, args = v.updateJoining(actualLRPKeys, column+" = v.value, "+set, setArgs)
	return query, args, 1
}

// valueChange is a change to one actual_lrps row that sets one column to
// a value of the row's own; row is the row as locked, which MySQL needs.
type valueChange struct {
	row   *models.ActualLRP
	value string
}

// valueChangeArgs is each change's key, then its value.
func valueChangeArgs(changes []valueChange) []any {
	args := make([]any, 0, len(changes)*4)
	for _, c := range changes {
		args = append(args, c.row.ProcessGuid, c.row.Index, c.row.Presence.String(), c.value)
	}
	return args
}

// valuesKeys is v as Postgres's VALUES table of keyArgs (each key's
// columns, then its values extra columns, in order), the first row's
// values cast, which Postgres types v's columns by.
func valuesKeys(t keyTable, values int, keyArgs []any) keysTable {
	return keysTable{with: withKeys(t, len(keyArgs)/(len(t.columns)+values), values), args: keyArgs}
}

// withKeys is "WITH v (k1, …[, value]) AS (VALUES …)" for n keys, each
// followed by values extra columns, the first row's values cast.
func withKeys(t keyTable, n, values int) string {
	names := make([]string, len(t.columns), len(t.columns)+values)
	first := make([]string, len(t.columns), len(t.columns)+values)
	for i := range t.columns {
		names[i] = "k" + strconv.Itoa(i+1)
		first[i] = "?::" + t.pgTypes[i]
	}
	for range values {
		names = append(names, "value")
		first = append(first, "?::text")
	}
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(names)), ", ") + ")"
	var b strings.Builder
	b.Grow(n*(len(row)+2) + 64)
	b.WriteString("WITH v (" + strings.Join(names, ", ") + ") AS (VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", " + row)
		} else {
			b.WriteString("(" + strings.Join(first, ", ") + ")")
		}
	}
	b.WriteString(")")
	return b.String()
}

// keys is how many keys keyArgs holds (each its columns, in order).
func (t keyTable) keys(keyArgs []any) int { return len(keyArgs) / len(t.columns) }

// joinV matches the table's key columns with v's.
func (t keyTable) joinV() string {
	conditions := make([]string, len(t.columns))
	for i, c := range t.columns {
		conditions[i] = t.name + "." + c + " = v.k" + strconv.Itoa(i+1)
	}
	return strings.Join(conditions, " AND ")
}

// inTuples is "(key columns) IN ((?, …), …)" for n keys, and for one key
// "(c1 = ? AND c2 = ? …)": MariaDB plans a single-table UPDATE whose
// tuple list has one row as a walk of the whole primary key (EXPLAIN: type
// index, every row), locking each row it passes — every lifecycle call on
// MySQL then waited for every other, at a quarter of the rate — while it
// reaches the rows by range for two or more, and for one as equalities.
func (t keyTable) inTuples(n int) string {
	if n == 1 {
		return "(" + strings.Join(t.columns, " = ? AND ") + " = ?)"
	}
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(t.columns)), ", ") + ")"
	return "(" + strings.Join(t.columns, ", ") + ") IN (" + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ") + ")"
}

// actualKeyArgs binds keys for actualLRPKeys.
func actualKeyArgs(keys []models.ActualLRPKey) []any {
	args := make([]any, 0, 3*len(keys))
	for _, k := range keys {
		args = append(args, k.ProcessGuid, k.Index, k.Presence.String())
	}
	return args
}
