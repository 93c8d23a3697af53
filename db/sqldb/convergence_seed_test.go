package sqldb_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/db/sqldb"
)

// seeder writes board states straight into the tables with multi-row
// inserts, so a benchmark or test of 250,000 rows seeds in seconds.
type seeder struct {
	conn    *sql.DB
	dialect string
}

// seedLRP is a desired LRP with one definition whose resources the
// run_infos row carries.
type seedLRP struct {
	guid, domain string
	instances    int32
	definitionID string
	memoryMB     int32
	diskMB       int32
	tags         string // stored JSON, "[]" for none
}

// seedActual is an instance row; the zero value of every field but the key
// is what a fresh UNCLAIMED row holds.
type seedActual struct {
	guid           string
	index          int32
	presence       string
	state          string
	domain         string
	instanceGuid   string
	cellID         string
	definitionID   string
	crashCount     int32
	crashReason    string
	since          int64
	placementError string
	routable       bool
	modIndex       int64
}

type seedCell struct {
	cellID, zone                  string
	memoryMB, diskMB, maxInstance int32
	tags                          string
	expiresAt                     int64
}

var seedActualColumns = []string{
	"process_guid", "instance_index", "presence", "domain", "instance_guid", "cell_id", "definition_id",
	"state", "crash_count", "crash_reason", "since", "placement_error", "routable", "occupied",
	"modification_tag_epoch", "modification_tag_index",
}

func (s seeder) desired(ctx context.Context, lrps []seedLRP) error {
	now := time.Now().UnixNano()
	err := s.insert(ctx, "desired_lrps", []string{
		"process_guid", "domain", "instances", "placement_tags", "routes", "annotation",
		"active_definition_id", "healthy_definition_id", "modification_tag_epoch",
		"modification_tag_index", "created_at", "updated_at",
	}, len(lrps), func(i int, args []any) []any {
		l := lrps[i]
		return append(args, l.guid, l.domain, l.instances, orEmptyTags(l.tags), "", "", l.definitionID, "", "epoch", 0, now, now)
	})
	if err != nil {
		return err
	}
	return s.insert(ctx, "run_infos", []string{
		"process_guid", "definition_id", "content_hash", "memory_mb", "disk_mb", "definition", "created_at",
	}, len(lrps), func(i int, args []any) []any {
		l := lrps[i]
		return append(args, l.guid, l.definitionID, "hash", l.memoryMB, l.diskMB, []byte{}, now)
	})
}

// definition stores one more definition of an LRP, which rows may run.
func (s seeder) definition(ctx context.Context, guid, definitionID string, memoryMB, diskMB int32) error {
	return s.insert(ctx, "run_infos", []string{
		"process_guid", "definition_id", "content_hash", "memory_mb", "disk_mb", "definition", "created_at",
	}, 1, func(_ int, args []any) []any {
		return append(args, guid, definitionID, "hash-"+definitionID, memoryMB, diskMB, []byte{}, int64(0))
	})
}

func (s seeder) actual(ctx context.Context, n int, row func(i int) seedActual) error {
	return s.insert(ctx, "actual_lrps", seedActualColumns, n, func(i int, args []any) []any {
		a := row(i)
		if a.presence == "" {
			a.presence = "ORDINARY"
		}
		if a.state == "" {
			a.state = "UNCLAIMED"
		}
		return append(args, a.guid, a.index, a.presence, a.domain, a.instanceGuid, a.cellID, a.definitionID,
			a.state, a.crashCount, a.crashReason, a.since, a.placementError, a.routable, false, "epoch", a.modIndex)
	})
}

func (s seeder) cells(ctx context.Context, cells []seedCell) error {
	return s.insert(ctx, "cells", []string{
		"cell_id", "rep_url", "zone", "memory_mb", "disk_mb", "max_instances", "placement_tags", "expires_at", "registered_at",
	}, len(cells), func(i int, args []any) []any {
		c := cells[i]
		return append(args, c.cellID, "http://"+c.cellID, c.zone, c.memoryMB, c.diskMB, c.maxInstance, orEmptyTags(c.tags), c.expiresAt, int64(0))
	})
}

func (s seeder) domain(ctx context.Context, domain string, expiresAt int64) error {
	return s.insert(ctx, "domains", []string{"domain", "expires_at"}, 1, func(_ int, args []any) []any {
		return append(args, domain, expiresAt)
	})
}

// analyze refreshes the query planner's statistics of tables (by default
// the ones convergence reads), as a database that has held its rows for a
// while would have them.
func (s seeder) analyze(ctx context.Context, tables ...string) error {
	if len(tables) == 0 {
		tables = []string{"desired_lrps", "run_infos", "actual_lrps", "cells", "domains"}
	}
	for _, table := range tables {
		stmt := "ANALYZE " + table
		if s.dialect == sqldb.MySQL {
			stmt = "ANALYZE TABLE " + table
		}
		if _, err := s.conn.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// insert adds n rows in one transaction: on Postgres through COPY, elsewhere
// with multi-row inserts of as many rows as keep the parameters under
// SQLite's limit of 32,766.
func (s seeder) insert(ctx context.Context, table string, columns []string, n int, row func(i int, args []any) []any) error {
	if s.dialect == sqldb.Postgres {
		return s.copyIn(ctx, table, columns, n, row)
	}
	perStatement := min(1000, 30_000/len(columns))
	tx, err := s.conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	args := make([]any, 0, perStatement*len(columns))
	for start := 0; start < n; start += perStatement {
		end := min(n, start+perStatement)
		args = args[:0]
		for i := start; i < end; i++ {
			args = row(i, args)
		}
		if _, err := tx.ExecContext(ctx, dialect.Rebind(dialect.Name(s.dialect), multiRowInsert(table, columns, end-start)), args...); err != nil {
			return fmt.Errorf("seed %s: %w", table, err)
		}
	}
	return tx.Commit()
}

func multiRowInsert(table string, columns []string, rows int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ") + ")"
	return "INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") VALUES " +
		strings.TrimSuffix(strings.Repeat(row+", ", rows), ", ")
}

func orEmptyTags(tags string) string {
	if tags == "" {
		return "[]"
	}
	return tags
}

func (s seeder) copyIn(ctx context.Context, table string, columns []string, n int, row func(i int, args []any) []any) error {
	tx, err := s.conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, pq.CopyIn(table, columns...))
	if err != nil {
		return err
	}
	args := make([]any, 0, len(columns))
	for i := range n {
		if _, err := stmt.ExecContext(ctx, row(i, args[:0])...); err != nil {
			return fmt.Errorf("seed %s: %w", table, err)
		}
	}
	if _, err := stmt.ExecContext(ctx); err != nil {
		return fmt.Errorf("seed %s: %w", table, err)
	}
	if err := stmt.Close(); err != nil {
		return err
	}
	return tx.Commit()
}
