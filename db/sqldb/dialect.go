package sqldb

import (
	"strconv"
	"strings"
)

// dialect holds the few places where the three databases speak different
// SQL. Queries elsewhere are written once, with ? placeholders.
type dialect string

// batchSize bounds the rows of one multi-row insert and the values of one IN
// list, well under every dialect's limit (Postgres 65,535 parameters, SQLite
// 32,766, MySQL's packet size) even with a dozen columns per row.
const batchSize = 1000

// rebind rewrites ? placeholders as $1, $2, … for Postgres. Queries in this
// package never contain a literal question mark, so every ? is a placeholder.
func (d dialect) rebind(query string) string {
	if d != Postgres {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] != '?' {
			b.WriteByte(query[i])
			continue
		}
		n++
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

// bytewise is column compared and ordered as bytes. The guid and presence
// columns are byte-collated on every dialect (see ConvergenceSnapshot);
// cells.cell_id is on SQLite (BINARY) and MySQL (utf8mb4_bin) but has the
// database's collation on Postgres, where a locale would order "B" after
// "a" and pages would disagree with the other dialects.
func (d dialect) bytewise(column string) string {
	if d == Postgres {
		return column + ` COLLATE "C"`
	}
	return column
}

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
func (d dialect) pagePlanning() string {
	if d == Postgres {
		return "SELECT set_config('enable_sort', 'off', true), set_config('enable_incremental_sort', 'off', true), set_config('jit', 'off', true)"
	}
	return ""
}

// nowNanos is the database's clock in Unix nanoseconds, as an SQL
// expression: what leases are judged by, so that boards whose clocks
// disagree still agree on who holds one (see AcquireLease), and what a
// board keeps its own clock on (DatabaseTime). Postgres gives
// microseconds, MySQL microseconds (NOW(6)), SQLite milliseconds.
func (d dialect) nowNanos() string {
	switch d {
	case Postgres:
		return "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000)::BIGINT"
	case MySQL:
		return "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000000 AS SIGNED)"
	}
	// julianday is a double: 'now' in whole milliseconds can come out a
	// hair below, and a truncating cast would then read 1 ms early.
	return "(CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000000)"
}

// upsert is an insert of one row that overwrites the update columns when a
// row with the same key exists.
func (d dialect) upsert(table string, columns, key, update []string) string {
	var b strings.Builder
	writeInsert(&b, table, columns, 1)
	if d == MySQL {
		b.WriteString(" ON DUPLICATE KEY UPDATE ")
		for i, c := range update {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c + " = VALUES(" + c + ")")
		}
		return b.String()
	}
	b.WriteString(" ON CONFLICT (" + strings.Join(key, ", ") + ") DO UPDATE SET ")
	for i, c := range update {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c + " = excluded." + c)
	}
	return b.String()
}

// insertMissing is a multi-row insert that skips rows whose key exists, so
// the result's RowsAffected counts only the rows it added.
func (d dialect) insertMissing(table string, columns, key []string, rows int) string {
	var b strings.Builder
	writeInsert(&b, table, columns, rows)
	if d == MySQL {
		// A no-op assignment: MySQL reports 0 affected rows for it.
		b.WriteString(" ON DUPLICATE KEY UPDATE " + key[0] + " = " + key[0])
		return b.String()
	}
	b.WriteString(" ON CONFLICT (" + strings.Join(key, ", ") + ") DO NOTHING")
	return b.String()
}

// writeInsert writes INSERT INTO table (columns) VALUES (?, …), … for rows rows.
func writeInsert(b *strings.Builder, table string, columns []string, rows int) {
	b.WriteString("INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") VALUES ")
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ") + ")"
	for i := 0; i < rows; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
}

// inList is "(?, ?, …)" with n placeholders.
func inList(n int) string {
	return "(" + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + ")"
}

// insertStatement is a plain one-row INSERT.
func insertStatement(table string, columns []string) string {
	var b strings.Builder
	writeInsert(&b, table, columns, 1)
	return b.String()
}

// lockForUpdate ends a SELECT of rows the transaction is about to change,
// so concurrent writers queue on them instead of racing. SQLite has no row
// locks and needs none: its write transactions already run one at a time.
func (d dialect) lockForUpdate() string {
	if d == SQLite {
		return ""
	}
	return " FOR UPDATE"
}

// joinsStatements reports whether two statements sent as one, separated by
// a semicolon, run one after the other in one round trip, stopping at the
// first that fails: MySQL with multiStatements (which Open requires). On
// the others a round trip is cheap (SQLite runs in process) or a write
// has a single-statement path of its own (Postgres).
func (d dialect) joinsStatements() bool {
	return d == MySQL
}

// dataModifyingWith reports whether the dialect takes arrays as statement
// parameters and INSERT, UPDATE or DELETE … RETURNING inside WITH, so that
// one statement can write many rows from one set of parameters or move
// rows from one table to another without them leaving the database:
// Postgres. The others write and move rows with plain statements.
func (d dialect) dataModifyingWith() bool {
	return d == Postgres
}
