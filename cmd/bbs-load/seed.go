package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/db/dialect"
	"github.com/corkboard/corkboard/models"
)

// Seeding is set-up, not measurement: the scenarios that need hundreds of
// thousands of instances write them with multi-row INSERTs straight into
// desired_lrps, run_infos and actual_lrps (in the shape sqldb.DesireLRP and
// the lifecycle calls leave them) instead of 50,000 desires and 500,000
// claims and starts. Cells register through the store, as the API does.
// After seeding, one LRP is read back through the store to check that the
// rows are what the board expects.

const (
	seedDomain = "bench"
	// Every seeded instance uses this much; cells are sized in these slots.
	instanceMemoryMB = 256
	instanceDiskMB   = 512
)

// layout says which instances exist and where: lrps LRPs named
// prefix-NNNNNN with instances each, and cells cell-NNNN spread round-robin
// over zones. Counting instances LRP by LRP, instance k runs on cell
// k mod cells, so an LRP's consecutive instances land on consecutive cells
// and therefore in different zones.
type layout struct {
	prefix    string
	lrps      int
	instances int
	cells     int
	zones     int
}

func (l layout) total() int { return l.lrps * l.instances }

func (l layout) guid(lrp int) string { return fmt.Sprintf("%s-%06d", l.prefix, lrp) }

func (l layout) cellOf(lrp, index int) int { return (lrp*l.instances + index) % l.cells }

// fillCells sets the number of LRPs so that each of the cells runs
// perCell instances: 1,000 cells × 250 instances, 5 per LRP, is 50,000 LRPs.
func (l *layout) fillCells(perCell int) error {
	if l.cells*perCell%l.instances != 0 {
		return fmt.Errorf("-cells × -per-cell (%d) must be a multiple of -instances (%d)", l.cells*perCell, l.instances)
	}
	l.lrps = l.cells * perCell / l.instances
	return nil
}

func (l layout) describe() string {
	return fmt.Sprintf("%d instances = %d LRPs × %d, %d cells in %d zones", l.total(), l.lrps, l.instances, l.cells, l.zones)
}

func cellID(i int) string { return fmt.Sprintf("cell-%04d", i) }

func instanceGuid(guid string, index int) string { return fmt.Sprintf("%s-%d-ig", guid, index) }

// netInfo is where a seeded or simulated instance listens: the cell's
// address and a port unique on that cell.
func netInfo(cell, port int) *models.NetInfo {
	address := fmt.Sprintf("10.%d.%d.%d", 1+cell/65536, cell/256%256, cell%256)
	return &models.NetInfo{
		Address:         address,
		InstanceAddress: address,
		Ports:           []*models.PortMapping{{ContainerPort: 8080, HostPort: uint32(61000 + port)}},
	}
}

// benchDefinition is the definition every seeded LRP runs.
func benchDefinition() *models.LRPDefinition {
	return &models.LRPDefinition{
		Action: &models.RunAction{
			Path: "hello",
			Env:  []*models.EnvironmentVariable{{Name: "VERSION", Value: "v1"}},
		},
		Ports:       []uint32{8080},
		HealthCheck: &models.HealthCheck{Type: models.HealthCheck_HTTP, Port: 8080, Path: "/health"},
		MemoryMb:    instanceMemoryMB,
		DiskMb:      instanceDiskMB,
	}
}

// seeder writes set-up rows in bulk, through whatever pool the database
// has open.
type seeder struct {
	*database
	now time.Time
	// definition, when set, is what every seeded LRP runs instead of
	// benchDefinition(): the lists scenario pads it to give the database
	// a size.
	definition *models.LRPDefinition
}

func newSeeder(d *database) *seeder {
	return &seeder{database: d, now: time.Now()}
}

// registerCells registers cells 0..n-1 through the store, each with room
// for slots instances, present for ttl.
func (s *seeder) registerCells(ctx context.Context, n, zones, slots int, ttl time.Duration) error {
	const workers = 8
	var failed firstError
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n && failed.get() == nil; i += workers {
				if err := s.store.RegisterCell(ctx, benchCell(i, zones, slots), ttl); err != nil {
					failed.set(fmt.Errorf("register %s: %w", cellID(i), err))
				}
			}
		}()
	}
	wg.Wait()
	return failed.get()
}

func benchCell(i, zones, slots int) *models.Cell {
	return &models.Cell{
		CellId: cellID(i),
		RepUrl: fmt.Sprintf("http://%s.bench:1800", cellID(i)),
		Zone:   fmt.Sprintf("z%d", i%zones),
		Capacity: &models.CellCapacity{
			MemoryMb:  int32(slots * instanceMemoryMB),
			DiskMb:    int32(slots * instanceDiskMB),
			Instances: int32(slots),
		},
	}
}

// seedLRPs stores the LRPs of l with their definition, and their
// instances: RUNNING on the layout's cells when running, else UNCLAIMED
// with no cell, as DesireLRP leaves them.
func (s *seeder) seedLRPs(ctx context.Context, l layout, running bool) error {
	if err := s.store.UpsertDomain(ctx, seedDomain, 0); err != nil {
		return err
	}
	def := benchDefinition()
	if s.definition != nil {
		def = proto.CloneOf(s.definition)
	}
	def.DefinitionId = models.GenerateDefinitionID(def)
	def.CreatedAt = s.now.UnixNano()
	blob, err := proto.MarshalOptions{Deterministic: true}.Marshal(def)
	if err != nil {
		return err
	}
	hash := models.DefinitionContentHash(def)
	now := s.now.UnixNano()
	since := s.now.Add(-time.Hour).UnixNano()

	desiredColumns := []string{"process_guid", "domain", "instances", "placement_tags", "routes", "annotation",
		"active_definition_id", "healthy_definition_id", "modification_tag_epoch", "modification_tag_index",
		"created_at", "updated_at"}
	err = s.insertRows(ctx, "desired_lrps", desiredColumns, l.lrps, func(i int, args []any) []any {
		guid := l.guid(i)
		return append(args, guid, seedDomain, l.instances, "[]", "", "bbs-load",
			def.DefinitionId, def.DefinitionId, "seed-"+guid, 0, now, now)
	})
	if err != nil {
		return fmt.Errorf("seed desired_lrps: %w", err)
	}
	runInfoColumns := []string{"process_guid", "definition_id", "content_hash", "memory_mb", "disk_mb", "definition", "created_at"}
	err = s.insertRows(ctx, "run_infos", runInfoColumns, l.lrps, func(i int, args []any) []any {
		return append(args, l.guid(i), def.DefinitionId, hash, def.MemoryMb, def.DiskMb, blob, now)
	})
	if err != nil {
		return fmt.Errorf("seed run_infos: %w", err)
	}

	if !running {
		columns := []string{"process_guid", "instance_index", "presence", "domain", "definition_id", "state",
			"since", "crash_reason", "placement_error", "modification_tag_epoch", "modification_tag_index"}
		err = s.insertRows(ctx, "actual_lrps", columns, l.total(), func(k int, args []any) []any {
			lrp, index := k/l.instances, k%l.instances
			guid := l.guid(lrp)
			return append(args, guid, index, "ORDINARY", seedDomain, def.DefinitionId, "UNCLAIMED",
				now, "", "", fmt.Sprintf("seed-%s-%d", guid, index), 0)
		})
	} else {
		columns := []string{"process_guid", "instance_index", "presence", "domain", "instance_guid", "cell_id",
			"definition_id", "state", "net_info", "since", "crash_reason", "placement_error", "routable",
			"modification_tag_epoch", "modification_tag_index"}
		err = s.insertRows(ctx, "actual_lrps", columns, l.total(), func(k int, args []any) []any {
			lrp, index := k/l.instances, k%l.instances
			guid := l.guid(lrp)
			cell := l.cellOf(lrp, index)
			info, _ := proto.MarshalOptions{Deterministic: true}.Marshal(netInfo(cell, k/l.cells))
			return append(args, guid, index, "ORDINARY", seedDomain, instanceGuid(guid, index), cellID(cell),
				def.DefinitionId, "RUNNING", info, since, "", "", true, fmt.Sprintf("seed-%s-%d", guid, index), 2)
		})
	}
	if err != nil {
		return fmt.Errorf("seed actual_lrps: %w", err)
	}
	if err := s.analyze(ctx); err != nil {
		return err
	}
	return s.checkSeeded(ctx, l, running)
}

// checkSeeded reads the first LRP back through the store.
func (s *seeder) checkSeeded(ctx context.Context, l layout, running bool) error {
	guid := l.guid(0)
	lrp, err := s.store.DesiredLRPByProcessGuid(ctx, guid)
	if err != nil {
		return fmt.Errorf("seeded LRP %s does not read back: %w", guid, err)
	}
	if lrp.GetDefinition().GetMemoryMb() != instanceMemoryMB || int(lrp.Instances) != l.instances {
		return fmt.Errorf("seeded LRP %s reads back as %v", guid, lrp)
	}
	actual, err := s.store.ActualLRPs(ctx, db.ActualLRPFilter{ProcessGuid: guid})
	if err != nil {
		return fmt.Errorf("seeded instances of %s do not read back: %w", guid, err)
	}
	want := models.ActualLRP_UNCLAIMED
	if running {
		want = models.ActualLRP_RUNNING
	}
	if len(actual) != l.instances || actual[0].State != want {
		return fmt.Errorf("seeded instances of %s read back as %v", guid, actual)
	}
	if running && !proto.Equal(actual[0].NetInfo, netInfo(l.cellOf(0, 0), 0)) {
		return fmt.Errorf("seeded instance %s/0 reads back with net info %v", guid, actual[0].NetInfo)
	}
	return nil
}

// analyze refreshes the query planner's statistics after a bulk load, as
// autovacuum (Postgres) or the statistics auto-recalculation (MySQL) would
// on a database that has held its rows for a while. SQLite has no
// automatic statistics; its ANALYZE is what an operator would run.
func (s *seeder) analyze(ctx context.Context) error {
	for _, table := range []string{"desired_lrps", "run_infos", "actual_lrps", "cells", "domains"} {
		stmt := "ANALYZE " + table
		if s.driver == string(dialect.MySQL) {
			stmt = "ANALYZE TABLE " + table
		}
		if _, err := s.conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// clearLRPs deletes every LRP, definition and instance; cells stay.
func (s *seeder) clearLRPs(ctx context.Context) error {
	for _, table := range []string{"actual_lrps", "run_infos", "desired_lrps"} {
		if _, err := s.conn.ExecContext(ctx, "DELETE FROM "+table); err != nil {
			return fmt.Errorf("clear %s: %w", table, err)
		}
	}
	return nil
}

// maxParameters keeps one statement under SQLite's 32,766 bound
// parameters (Postgres allows 65,535).
const maxParameters = 30000

// insertRows inserts count rows, row i's values appended by row, in one
// transaction: with COPY on Postgres, multi-row INSERTs elsewhere.
func (s *seeder) insertRows(ctx context.Context, table string, columns []string, count int, row func(i int, args []any) []any) error {
	tx, err := s.conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.driver == string(dialect.Postgres) {
		if err := copyRows(ctx, tx, table, columns, count, row); err != nil {
			return err
		}
		return tx.Commit()
	}
	perStatement := min(1000, maxParameters/len(columns))
	args := make([]any, 0, perStatement*len(columns))
	for start := 0; start < count; start += perStatement {
		end := min(count, start+perStatement)
		args = args[:0]
		for i := start; i < end; i++ {
			args = row(i, args)
		}
		if _, err := tx.ExecContext(ctx, s.insertStatement(table, columns, end-start), args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func copyRows(ctx context.Context, tx *sql.Tx, table string, columns []string, count int, row func(i int, args []any) []any) error {
	stmt, err := tx.PrepareContext(ctx, pq.CopyIn(table, columns...))
	if err != nil {
		return err
	}
	defer stmt.Close()
	args := make([]any, 0, len(columns))
	for i := range count {
		if _, err := stmt.ExecContext(ctx, row(i, args[:0])...); err != nil {
			return err
		}
	}
	_, err = stmt.ExecContext(ctx)
	return err
}

func (s *seeder) insertStatement(table string, columns []string, rows int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ") + ")"
	var b strings.Builder
	b.WriteString("INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") VALUES ")
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	return dialect.Rebind(dialect.Name(s.driver), b.String())
}

// count runs a SELECT COUNT(*) query.
func (s *seeder) count(ctx context.Context, query string, args ...any) (int, error) {
	var n int
	err := s.conn.QueryRowContext(ctx, dialect.Rebind(dialect.Name(s.driver), query), args...).Scan(&n)
	return n, err
}

// verifyAllRunning fails unless every one of total instances is RUNNING;
// after says when, for the error.
func (s *seeder) verifyAllRunning(ctx context.Context, total int, after string) error {
	running, err := s.count(ctx, "SELECT COUNT(*) FROM actual_lrps WHERE state = 'RUNNING'")
	if err != nil {
		return err
	}
	if running != total {
		return fmt.Errorf("after %s %d of %d instances are RUNNING", after, running, total)
	}
	step("verified: all %d instances RUNNING", running)
	return nil
}
