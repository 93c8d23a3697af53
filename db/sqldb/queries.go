package sqldb

import (
	"context"
	"database/sql"
	"slices"
	"strings"
)

// queryer is what *sql.DB and *sql.Tx share, so reads run inside or outside
// a transaction alike.
type queryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Every statement goes through these three, so each is rebound for its dialect.

func (s *SQLDB) exec(ctx context.Context, q queryer, query string, args ...any) (sql.Result, error) {
	query = s.rebound(query)
	if stmt := s.statement(ctx, q, query, len(args)); stmt != nil {
		return stmt.ExecContext(ctx, args...)
	}
	return q.ExecContext(ctx, query, args...)
}

// execOne runs a compare-and-set write: it must change exactly one row,
// and one that changes none (another writer moved the row on) is
// errLostRace.
func (s *SQLDB) execOne(ctx context.Context, q queryer, query string, args ...any) error {
	res, err := s.exec(ctx, q, query, args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		return errLostRace
	}
	return nil
}

func (s *SQLDB) query(ctx context.Context, q queryer, query string, args ...any) (*sql.Rows, error) {
	query = s.rebound(query)
	if stmt := s.statement(ctx, q, query, len(args)); stmt != nil {
		return stmt.QueryContext(ctx, args...)
	}
	return q.QueryContext(ctx, query, args...)
}

func (s *SQLDB) queryRow(ctx context.Context, q queryer, query string, args ...any) *sql.Row {
	query = s.rebound(query)
	if stmt := s.statement(ctx, q, query, len(args)); stmt != nil {
		return stmt.QueryRowContext(ctx, args...)
	}
	return q.QueryRowContext(ctx, query, args...)
}

// Table columns written by inserts, in the order their values are passed.
var (
	desiredLRPColumns = []string{
		"process_guid", "domain", "instances", "placement_tags", "routes", "annotation",
		"active_definition_id", "healthy_definition_id", "update_strategy",
		"modification_tag_epoch", "modification_tag_index", "created_at", "updated_at",
		"autoscaling", "autoscaler", "disruption_budget", "budget_group",
	}
	runInfoColumns = []string{
		"process_guid", "definition_id", "content_hash", "memory_mb", "disk_mb", "definition", "created_at", "route_ports", "routes",
		"became_healthy",
	}
	runInfoKey = []string{"process_guid", "definition_id"}

	// The remaining actual_lrps columns keep their defaults ('', 0, false, NULL).
	unclaimedActualLRPColumns = []string{
		"process_guid", "instance_index", "presence", "domain", "definition_id", "state",
		"since", "crash_reason", "placement_error", "modification_tag_epoch", "modification_tag_index",
	}
	actualLRPKey = []string{"process_guid", "instance_index", "presence"}
)

// batches splits values into runs of at most batchSize, for IN lists.
func batches(values []string) [][]string {
	var out [][]string
	for chunk := range slices.Chunk(values, batchSize) {
		out = append(out, chunk)
	}
	return out
}

// uniqueStrings drops repeats, keeping the first occurrence's order.
func uniqueStrings(values []string) []string {
	seen := make(map[string]struct{}, len(values))
	out := make([]string, 0, len(values))
	for _, v := range values {
		if _, ok := seen[v]; !ok {
			seen[v] = struct{}{}
			out = append(out, v)
		}
	}
	return out
}

func stringArgs(values []string) []any {
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return args
}

// batchSize bounds the rows of one multi-row insert and the values of one IN
// list, well under every dialect's limit (Postgres 65,535 parameters, SQLite
// 32,766, MySQL's packet size) even with a dozen columns per row.
const batchSize = 1000

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
