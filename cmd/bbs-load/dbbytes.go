package main

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/corkboard/corkboard/db/dialect"
)

// tableBytes is what one table of the board takes on disk, its indexes
// (and on Postgres its TOAST) included.
type tableBytes struct {
	table string
	bytes int64
}

// databaseBytes measures every table of d's database, largest first, and
// says how the dialect measured it. The database holds only the board's
// tables (the scenarios create it fresh), so every table counts.
//
//   - Postgres: pg_total_relation_size of each table after VACUUM ANALYZE
//     (exact pages: heap, TOAST and indexes, dead tuples' space included);
//   - MySQL/MariaDB: information_schema.TABLES data_length + index_length
//     after ANALYZE TABLE; InnoDB's figures come from sampled statistics
//     and whole extents, so they are approximate;
//   - SQLite: the dbstat table's pages per table and index, which add up
//     to page_count × page_size less the freelist.
func databaseBytes(ctx context.Context, conn *sql.DB, driver string) ([]tableBytes, string, error) {
	var tables []tableBytes
	var how string
	var err error
	switch dialect.Name(driver) {
	case dialect.Postgres:
		tables, err = postgresBytes(ctx, conn)
		how = "pg_total_relation_size after VACUUM ANALYZE"
	case dialect.MySQL:
		tables, err = mysqlBytes(ctx, conn)
		how = "data_length + index_length after ANALYZE TABLE, approximate (InnoDB statistics)"
	default:
		tables, how, err = sqliteBytes(ctx, conn)
	}
	if err != nil {
		return nil, "", err
	}
	sort.Slice(tables, func(i, j int) bool {
		if tables[i].bytes != tables[j].bytes {
			return tables[i].bytes > tables[j].bytes
		}
		return tables[i].table < tables[j].table
	})
	return tables, how, nil
}

func postgresBytes(ctx context.Context, conn *sql.DB) ([]tableBytes, error) {
	if _, err := conn.ExecContext(ctx, "VACUUM ANALYZE"); err != nil {
		return nil, fmt.Errorf("vacuum: %w", err)
	}
	return queryTableBytes(ctx, conn, `SELECT c.relname, pg_total_relation_size(c.oid)
 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema()`)
}

func mysqlBytes(ctx context.Context, conn *sql.DB) ([]tableBytes, error) {
	// One connection: the session setting below must hold for the query.
	c, err := conn.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var names []string
	rows, err := c.QueryContext(ctx, "SELECT table_name FROM information_schema.TABLES WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, err
		}
		names = append(names, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(names) > 0 {
		// ANALYZE TABLE answers with a result set of its own.
		analyzed, err := c.QueryContext(ctx, "ANALYZE TABLE `"+strings.Join(names, "`, `")+"`")
		if err != nil {
			return nil, fmt.Errorf("analyze: %w", err)
		}
		for analyzed.Next() {
		}
		analyzed.Close()
	}
	// MySQL 8 caches these statistics for a day unless told not to;
	// MariaDB has no such setting and reads them fresh.
	c.ExecContext(ctx, "SET SESSION information_schema_stats_expiry = 0")
	return queryTableBytes(ctx, c, `SELECT table_name, COALESCE(data_length, 0) + COALESCE(index_length, 0)
 FROM information_schema.TABLES WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'`)
}

func sqliteBytes(ctx context.Context, conn *sql.DB) ([]tableBytes, string, error) {
	var pageSize, pageCount, freelist int64
	for _, p := range []struct {
		pragma string
		into   *int64
	}{{"page_size", &pageSize}, {"page_count", &pageCount}, {"freelist_count", &freelist}} {
		if err := conn.QueryRowContext(ctx, "PRAGMA "+p.pragma).Scan(p.into); err != nil {
			return nil, "", fmt.Errorf("pragma %s: %w", p.pragma, err)
		}
	}
	file := (pageCount - freelist) * pageSize
	// Each index's pages count to its table; the schema's own pages to
	// sqlite_schema.
	tables, err := queryTableBytes(ctx, conn, `SELECT COALESCE(m.tbl_name, s.name), SUM(s.pgsize)
 FROM dbstat s LEFT JOIN sqlite_schema m ON m.name = s.name GROUP BY 1`)
	if err != nil {
		// A build of SQLite without dbstat: the whole file, no breakdown.
		return []tableBytes{{"all tables", file}}, "page_count × page_size less the freelist (no dbstat)", nil
	}
	return tables, "dbstat pages per table and index, page_count × page_size less the freelist", nil
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func queryTableBytes(ctx context.Context, q queryer, query string) ([]tableBytes, error) {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []tableBytes
	for rows.Next() {
		var t tableBytes
		if err := rows.Scan(&t.table, &t.bytes); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// describeBytes is the figure's value: bytes per LRP over every table,
// then each table's bytes per LRP, largest first; tables under one byte
// per LRP are summed as "others".
func describeBytes(tables []tableBytes, lrps int) string {
	var total int64
	for _, t := range tables {
		total += t.bytes
	}
	var parts []string
	var others int64
	for _, t := range tables {
		if t.bytes < int64(lrps) {
			others += t.bytes
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d", t.table, t.bytes/int64(lrps)))
	}
	if others > 0 {
		parts = append(parts, fmt.Sprintf("others %.1f", float64(others)/float64(lrps)))
	}
	return fmt.Sprintf("%d bytes per LRP (%.1f MB in %d tables; per LRP: %s)",
		total/int64(lrps), float64(total)/1e6, len(tables), strings.Join(parts, ", "))
}

// describeTables is the database's size and each table's, in MB, largest
// first; tables under 0.1 MB are summed as "others".
func describeTables(tables []tableBytes) string {
	var total, others int64
	var parts []string
	for _, t := range tables {
		total += t.bytes
		if t.bytes < 100_000 {
			others += t.bytes
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1f", t.table, float64(t.bytes)/1e6))
	}
	if others > 0 {
		parts = append(parts, fmt.Sprintf("others %.1f", float64(others)/1e6))
	}
	return fmt.Sprintf("%.1f MB in %d tables (MB: %s)", float64(total)/1e6, len(tables), strings.Join(parts, ", "))
}
