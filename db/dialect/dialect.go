// Package dialect names the three databases the board runs on and holds
// the one thing every user of raw SQL needs from them: turning the ?
// placeholders queries are written with into the database's own. Storage
// (db/sqldb), migrations, the load tool, the test databases and the board's
// configuration all take their dialect names from here. It imports only the
// standard library so that any of them can.
package dialect

import (
	"fmt"
	"strconv"
	"strings"
)

// Name is a dialect's name, also its database/sql driver name and the
// database_driver a board is configured with.
type Name string

// The dialects. The strings are on disk (configs, the migrations' sql/<name>
// folders) and are the database/sql driver names, so they never change.
const (
	SQLite   Name = "sqlite"
	Postgres Name = "postgres"
	MySQL    Name = "mysql"
)

// all is every dialect, SQLite first: the order choices are listed in.
var all = []Name{SQLite, Postgres, MySQL}

// All returns every dialect, SQLite first.
func All() []Name { return append([]Name(nil), all...) }

// Choices lists the dialect names for a message: "sqlite, postgres or mysql".
func Choices() string {
	names := make([]string, len(all))
	for i, n := range all {
		names[i] = string(n)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Parse returns the dialect named s, or an error naming s when it is none
// of them. Names are matched exactly: "SQLite" is not a dialect.
func Parse(s string) (Name, error) {
	for _, n := range all {
		if string(n) == s {
			return n, nil
		}
	}
	return "", fmt.Errorf("unknown database dialect %q (want %s)", s, Choices())
}

// Known reports whether s names a dialect.
func Known(s string) bool {
	_, err := Parse(s)
	return err == nil
}

// Rebind rewrites the ? placeholders of query as $1, $2, … for Postgres and
// returns it unchanged for the others, which take ? as they are. Every ? is
// taken for a placeholder: queries given here never hold a literal question
// mark (in a string or a comment).
func Rebind(name Name, query string) string {
	if name != Postgres || !strings.Contains(query, "?") {
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

// NowNanos is the database's clock in Unix nanoseconds, as an SQL
// expression: what leases and lock rows are judged by (db/rowlock), so
// that boards whose clocks disagree still agree on who holds one, and what
// a board keeps its own clock on (DatabaseTime). Postgres and MySQL
// (NOW(6)) give microseconds, SQLite milliseconds: julianday is a double,
// and 'now' in whole milliseconds can come out a hair below, so it is
// rounded rather than truncated (a truncating cast would read 1 ms early).
func NowNanos(name Name) string {
	switch name {
	case Postgres:
		return "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000)::BIGINT"
	case MySQL:
		return "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000000 AS SIGNED)"
	default:
		return "(CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000000)"
	}
}
