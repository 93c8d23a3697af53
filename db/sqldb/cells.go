package sqldb

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ db.CellDB = (*SQLDB)(nil)

// RegisterCell is HeartbeatCell without a fresh start: it keeps the
// cell's draining flag.
func (s *SQLDB) RegisterCell(ctx context.Context, cell *models.Cell, ttl time.Duration) error {
	_, err := s.HeartbeatCell(ctx, cell, ttl, false)
	return err
}

// HeartbeatCell inserts the cell or renews it: its presence lasts until
// now + ttl. It emits cell_changed (before: nil for a new cell) when the
// cell is new, when any of its fields changed, when its presence had
// expired, or when freshStart cleared its draining flag — not for a
// heartbeat that only extends a present cell that is not draining, which
// is one UPDATE. A draining cell's heartbeat takes the transaction, which
// reads the flag to answer it; drains are rare.
//
// The event's cells carry expires_at, present and draining; free is left
// out, since computing it means adding up the cell's instances.
func (s *SQLDB) HeartbeatCell(ctx context.Context, cell *models.Cell, ttl time.Duration, freshStart bool) (bool, error) {
	if err := checkCell(cell, ttl); err != nil {
		return false, err
	}
	now := s.now().UnixNano()
	after := storedCell(cell, now+int64(ttl), now)
	tags, err := encodePlacementTags(after.PlacementTags)
	if err != nil {
		return false, errInvalid("cell.placement_tags", err.Error())
	}
	fields := []any{after.RepUrl, after.Zone, after.Capacity.MemoryMb, after.Capacity.DiskMb, after.Capacity.Instances, tags, after.Isolation}

	var renewed bool
	err = s.autocommit(ctx, "register cell", func() error {
		res, err := s.exec(ctx, s.conn, `UPDATE cells SET expires_at = ?
 WHERE cell_id = ? AND rep_url = ? AND zone = ? AND memory_mb = ? AND disk_mb = ? AND max_instances = ? AND placement_tags = ?
 AND isolation = ? AND expires_at > ? AND draining = ?`, slices.Concat([]any{after.ExpiresAt, after.CellId}, fields, []any{now, false})...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		renewed = n == 1
		return err
	})
	if err != nil || renewed {
		return false, err
	}

	err = s.transactPublishing(ctx, "register cell", func(tx *sql.Tx) ([]models.Event, error) {
		// A new cell is inserted before anything is locked: locking the
		// row of a cell that is not there yet would lock the gap it goes
		// in on MySQL, and two new cells registering in one gap would each
		// wait for the other's lock to insert (a deadlock, every time
		// several reps start at once). An insert locks only its own row.
		res, err := s.exec(ctx, tx, s.driver.insertMissing("cells", registeredCellColumns, []string{"cell_id"}, 1),
			slices.Concat(fields, []any{after.CellId, after.ExpiresAt, now, false})...)
		if err != nil {
			return nil, err
		}
		if inserted, err := res.RowsAffected(); err != nil {
			return nil, err
		} else if inserted == 1 {
			after.Draining = false
			return []models.Event{models.CellChanged(nil, after)}, nil
		}
		before, err := s.lockCell(ctx, tx, after.CellId, now)
		if err != nil {
			return nil, err
		}
		if before == nil {
			// Removed since the insert found it: run again.
			return nil, errLostRace
		}
		after.Draining = before.Draining && !freshStart
		if after.Draining {
			// The drain goes on: its start, deadline and record stay.
			after.DrainStartedAt, after.DrainDeadline, after.DrainOverdueAt = before.DrainStartedAt, before.DrainDeadline, before.DrainOverdueAt
		}
		_, err = s.exec(ctx, tx, `UPDATE cells SET rep_url = ?, zone = ?, memory_mb = ?, disk_mb = ?, max_instances = ?,
 placement_tags = ?, isolation = ?, expires_at = ?, draining = ?, drain_started_at = ?, drain_deadline = ?, drain_overdue_at = ? WHERE cell_id = ?`,
			slices.Concat(fields, []any{after.ExpiresAt, after.Draining, after.DrainStartedAt, after.DrainDeadline, after.DrainOverdueAt, after.CellId})...)
		if err != nil {
			return nil, err
		}
		if before.Present && sameCellFields(before, after) && before.Draining == after.Draining {
			// A heartbeat of a draining cell, or (MySQL counts a heartbeat
			// within the same nanosecond as no change) one that came here
			// from the UPDATE above.
			return nil, nil
		}
		return []models.Event{models.CellChanged(before, after)}, nil
	})
	if err != nil {
		return false, err
	}
	return after.Draining, nil
}

// DrainCell sets the cell's draining flag; see db.CellDB.
func (s *SQLDB) DrainCell(ctx context.Context, cellID string) error {
	return s.DrainCellBy(ctx, cellID, 0)
}

// DrainCellBy sets the cell's draining flag, its drain's start and, when
// deadline is positive, its deadline; see db.CellDB.
func (s *SQLDB) DrainCellBy(ctx context.Context, cellID string, deadline time.Duration) error {
	if deadline < 0 || deadline > models.MaxDrainDeadline {
		return errInvalid("deadline_ms", fmt.Sprintf("must be between 0 and %d (7 days), got %d", models.MaxDrainDeadline.Milliseconds(), deadline.Milliseconds()))
	}
	return s.changeCell(ctx, "drain cell", cellID, func(before *models.Cell, now int64) (*models.Cell, string, []any) {
		after := proto.Clone(before).(*models.Cell)
		if !before.Draining {
			after.Draining = true
			after.DrainStartedAt = now
			after.DrainDeadline = 0
			after.DrainOverdueAt = 0
		}
		if deadline > 0 {
			after.DrainDeadline = now + int64(deadline)
		}
		if proto.Equal(before, after) {
			return nil, "", nil
		}
		return after, "draining = ?, drain_started_at = ?, drain_deadline = ?, drain_overdue_at = ?",
			[]any{true, after.DrainStartedAt, after.DrainDeadline, after.DrainOverdueAt}
	})
}

// QuarantineCell quarantines the cell; see db.CellDB.
func (s *SQLDB) QuarantineCell(ctx context.Context, cellID, reason, by string, clearedAt int64) (bool, error) {
	reason, by = models.CutText(reason, maxQuarantineReason), models.CutText(by, maxQuarantineBy)
	changed := false
	err := s.changeCell(ctx, "quarantine cell", cellID, func(before *models.Cell, now int64) (*models.Cell, string, []any) {
		changed = false
		if before.QuarantinedAt != 0 || (clearedAt >= 0 && before.QuarantineClearedAt != clearedAt) {
			return nil, "", nil
		}
		after := proto.Clone(before).(*models.Cell)
		after.QuarantinedAt, after.QuarantinedBy, after.QuarantineReason = now, by, reason
		changed = true
		return after, "quarantined_at = ?, quarantined_by = ?, quarantine_reason = ?", []any{now, by, reason}
	})
	return changed && err == nil, err
}

// ClearCellQuarantine clears the cell's quarantine; see db.CellDB.
func (s *SQLDB) ClearCellQuarantine(ctx context.Context, cellID, by string) error {
	by = models.CutText(by, maxQuarantineBy)
	return s.changeCell(ctx, "clear cell quarantine", cellID, func(before *models.Cell, now int64) (*models.Cell, string, []any) {
		if before.QuarantinedAt == 0 {
			return nil, "", nil
		}
		after := proto.Clone(before).(*models.Cell)
		after.QuarantinedAt, after.QuarantinedBy, after.QuarantineReason = 0, "", ""
		after.QuarantineClearedAt, after.QuarantineClearedBy = now, by
		return after, "quarantined_at = 0, quarantined_by = '', quarantine_reason = '', quarantine_cleared_at = ?, quarantine_cleared_by = ?",
			[]any{now, by}
	})
}

// changeCell is an operator's change to one cell's row: it checks
// cellID, locks the row (ResourceNotFound when there is none) and asks
// change what becomes of the cell at now: nil when nothing changes, or
// the cell after, with the UPDATE's SET clause and its arguments, which
// it writes, logging cell_changed with the cell before and after.
func (s *SQLDB) changeCell(ctx context.Context, what, cellID string, change func(before *models.Cell, now int64) (after *models.Cell, set string, args []any)) error {
	if cellID == "" {
		return errInvalid("cell_id", "required")
	}
	if err := checkWidth("cell_id", cellID, maxCellID); err != nil {
		return err
	}
	return s.transactPublishing(ctx, what, func(tx *sql.Tx) ([]models.Event, error) {
		now := s.now().UnixNano()
		before, err := s.lockCell(ctx, tx, cellID, now)
		if err != nil {
			return nil, err
		}
		if before == nil {
			return nil, errNotFound("cell %q not found", cellID)
		}
		after, set, args := change(before, now)
		if after == nil {
			return nil, nil
		}
		if _, err := s.exec(ctx, tx, "UPDATE cells SET "+set+" WHERE cell_id = ?", append(args, cellID)...); err != nil {
			return nil, err
		}
		return []models.Event{models.CellChanged(before, after)}, nil
	})
}

// The widths of cells.quarantine_reason and cells.quarantined_by (and
// quarantine_cleared_by), migration 0026; the API bounds a reason tighter.
const (
	maxQuarantineReason = 1100
	maxQuarantineBy     = 256
)

func checkCell(cell *models.Cell, ttl time.Duration) error {
	switch {
	case cell == nil:
		return errInvalid("cell", "required")
	case cell.CellId == "":
		return errInvalid("cell.cell_id", "required")
	case ttl <= 0:
		return errInvalid("ttl", "must be positive")
	}
	if err := checkName("cell.cell_id", cell.CellId, maxCellID); err != nil {
		return err
	}
	if cell.Zone == "" {
		return nil
	}
	return checkName("cell.zone", cell.Zone, maxZone)
}

// maxZone is the width of cells.zone.
const maxZone = 255

// maxCellID is the width of cells.cell_id and actual_lrps.cell_id.
const maxCellID = 255

// storedCell is cell as RegisterCell stores it, present until expiresAt.
func storedCell(cell *models.Cell, expiresAt, now int64) *models.Cell {
	stored := &models.Cell{
		CellId:        cell.CellId,
		RepUrl:        cell.RepUrl,
		Zone:          cell.Zone,
		Capacity:      &models.CellCapacity{},
		PlacementTags: slices.Clone(cell.PlacementTags),
		Isolation:     cell.Isolation,
		ExpiresAt:     expiresAt,
		Present:       expiresAt > now,
	}
	if cell.Capacity != nil {
		stored.Capacity = proto.Clone(cell.Capacity).(*models.CellCapacity)
	}
	return stored
}

// sameCellFields compares what a rep registers, not the presence.
func sameCellFields(a, b *models.Cell) bool {
	return a.RepUrl == b.RepUrl && a.Zone == b.Zone && a.Isolation == b.Isolation &&
		proto.Equal(a.Capacity, b.Capacity) && slices.Equal(a.PlacementTags, b.PlacementTags)
}

const selectCell = `SELECT cell_id, rep_url, zone, memory_mb, disk_mb, max_instances, placement_tags, expires_at, draining, isolation,
 drain_started_at, drain_deadline, drain_overdue_at,
 quarantined_at, quarantined_by, quarantine_reason, quarantine_cleared_at, quarantine_cleared_by FROM cells`

// registeredCellColumns are the columns a registration inserts: the
// cell's fields (HeartbeatCell's fields), then cell_id, expires_at,
// registered_at and draining.
var registeredCellColumns = []string{"rep_url", "zone", "memory_mb", "disk_mb", "max_instances", "placement_tags", "isolation",
	"cell_id", "expires_at", "registered_at", "draining"}

// lockCell reads a cell for update; nil when it is not registered.
func (s *SQLDB) lockCell(ctx context.Context, tx *sql.Tx, cellID string, now int64) (*models.Cell, error) {
	cell, err := scanCell(s.queryRow(ctx, tx, selectCell+" WHERE cell_id = ?"+s.driver.lockForUpdate(), cellID), now)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return cell, err
}

func scanCell(row rowScanner, now int64, extra ...any) (*models.Cell, error) {
	cell := &models.Cell{Capacity: &models.CellCapacity{}}
	var tags string
	dest := []any{&cell.CellId, &cell.RepUrl, &cell.Zone, &cell.Capacity.MemoryMb, &cell.Capacity.DiskMb,
		&cell.Capacity.Instances, &tags, &cell.ExpiresAt, &cell.Draining, &cell.Isolation,
		&cell.DrainStartedAt, &cell.DrainDeadline, &cell.DrainOverdueAt,
		&cell.QuarantinedAt, &cell.QuarantinedBy, &cell.QuarantineReason, &cell.QuarantineClearedAt, &cell.QuarantineClearedBy}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	var err error
	if cell.PlacementTags, err = decodePlacementTags(tags); err != nil {
		return nil, errInvalidRecord("cell %q: placement_tags: %v", cell.CellId, err)
	}
	cell.Present = cell.ExpiresAt > now
	return cell, nil
}

// usageByCell sums, per cell, the resources of every row naming it (each
// with its own definition's memory and disk) and counts the rows. Its
// WHERE ends with a condition on a.cell_id for the caller to complete.
const usageByCell = `SELECT a.cell_id, SUM(r.memory_mb) AS memory_mb, SUM(r.disk_mb) AS disk_mb, COUNT(*) AS instances
 FROM actual_lrps a
 LEFT JOIN run_infos r ON r.process_guid = a.process_guid AND r.definition_id = a.definition_id
 WHERE a.cell_id `

// selectUsageByCell is the usage of every cell some row names.
const selectUsageByCell = usageByCell + `<> '' GROUP BY a.cell_id`

// selectCellsWithUsage adds to every cell what the instances placed on it
// use — every row naming the cell, whatever its state or presence — in one
// aggregate query; the caller completes the usage's condition (see
// cellsWithUsage).
const selectCellsWithUsage = `SELECT c.cell_id, c.rep_url, c.zone, c.memory_mb, c.disk_mb, c.max_instances,
 c.placement_tags, c.expires_at, c.draining, c.isolation, c.drain_started_at, c.drain_deadline, c.drain_overdue_at,
 c.quarantined_at, c.quarantined_by, c.quarantine_reason, c.quarantine_cleared_at, c.quarantine_cleared_by,
 COALESCE(u.memory_mb, 0), COALESCE(u.disk_mb, 0), COALESCE(u.instances, 0)
 FROM cells c LEFT JOIN (` + usageByCell

// Cells lists every registered cell, present or not, ordered by cell id,
// with its free capacity: capacity minus the memory and disk of the
// definitions of the instances placed on it, and minus their number.
// Free capacity goes negative on an overcommitted cell rather than hide it.
func (s *SQLDB) Cells(ctx context.Context) ([]*models.Cell, error) {
	cells, err := s.cellsWithUsage(ctx, nil)
	return cells, asModelError("list cells", err)
}

// CellsAfter is one page of Cells. The page's ids are read first, so that
// the usage is summed over those cells' rows only, not every instance.
func (s *SQLDB) CellsAfter(ctx context.Context, after string, limit int) ([]*models.Cell, error) {
	if limit <= 0 {
		return nil, errInvalid("limit", fmt.Sprintf("must be greater than 0, got %d", limit))
	}
	var ids []string
	err := s.eachPageRow(ctx, cellPageQuery(s.driver, limit), []any{after}, func(rows *sql.Rows) error {
		var id string
		err := rows.Scan(&id)
		ids = append(ids, id)
		return err
	})
	if err != nil || len(ids) == 0 {
		return nil, asModelError("list cells", err)
	}
	cells, err := s.cellsWithUsage(ctx, ids)
	return cells, asModelError("list cells", err)
}

// cellPageQuery reads the ids of the limit cells after a cell id, in
// byte order. On Postgres cells.cell_id has the database's collation, so
// no index gives that order and the page sorts the cells after the cursor
// (a board has thousands at most, each row small).
func cellPageQuery(d driver, limit int) string {
	cellID := d.bytewise("cell_id")
	return fmt.Sprintf("SELECT cell_id FROM cells WHERE %s > ? ORDER BY %s LIMIT %d", cellID, cellID, limit)
}

// cellsWithUsage reads the cells with these ids (every cell when ids is
// nil) with their free capacity, in cell id order (bytes).
func (s *SQLDB) cellsWithUsage(ctx context.Context, ids []string) ([]*models.Cell, error) {
	query := selectCellsWithUsage + "<> '' GROUP BY a.cell_id) u ON u.cell_id = c.cell_id"
	var args []any
	if ids != nil {
		in := inList(len(ids))
		query = selectCellsWithUsage + "IN " + in + " GROUP BY a.cell_id) u ON u.cell_id = c.cell_id WHERE c.cell_id IN " + in
		args = append(stringArgs(ids), stringArgs(ids)...)
	}
	now := s.now().UnixNano()
	var cells []*models.Cell
	err := s.eachRow(ctx, s.conn, query, args, func(rows *sql.Rows) error {
		var memory, disk, instances int64
		cell, err := scanCell(rows, now, &memory, &disk, &instances)
		if err != nil {
			return err
		}
		cell.Free = &models.CellCapacity{
			MemoryMb:  cell.Capacity.MemoryMb - int32(memory),
			DiskMb:    cell.Capacity.DiskMb - int32(disk),
			Instances: cell.Capacity.Instances - int32(instances),
		}
		cells = append(cells, cell)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Sorted here, not in SQL: cells.cell_id has the database's collation
	// on Postgres.
	slices.SortFunc(cells, func(a, b *models.Cell) int { return cmp.Compare(a.CellId, b.CellId) })
	return cells, nil
}
