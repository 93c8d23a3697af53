package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

// Reading and writing ActualLRP rows for the writes that emit events:
// they need each row as stored, before and after.

// actualLRPColumns are the actual_lrps columns in the order scanActualLRP
// reads them (the order of selectActualLRP).
var actualLRPColumns = []string{
	"process_guid", "instance_index", "presence", "domain", "instance_guid",
	"cell_id", "definition_id", "state", "net_info", "crash_count", "crash_reason", "since", "placement_error",
	"routable", "occupied", "stop_requested", "modification_tag_epoch", "modification_tag_index", "route_ports",
}

// selectActualLRP reads actualLRPColumns; append a WHERE clause.
var selectActualLRP = "SELECT " + strings.Join(actualLRPColumns, ", ") + " FROM actual_lrps"

// scanActualLRP reads one row of actualLRPColumns.
func scanActualLRP(row rowScanner) (*models.ActualLRP, error) {
	var scan actualLRPScan
	if err := row.Scan(scan.dest()...); err != nil {
		return nil, err
	}
	return scan.lrp()
}

// actualLRPScan holds the scan destinations of one row of
// actualLRPColumns, so that a statement returning two rows side by side
// (before and after) can scan both at once.
type actualLRPScan struct {
	row                         *models.ActualLRP
	presence, state             string
	netInfo, routePorts         []byte
	index, crashCount, tagIndex int64
}

// dest allocates the row and returns where to scan it.
func (a *actualLRPScan) dest() []any {
	a.row = &models.ActualLRP{ModificationTag: &models.ModificationTag{}}
	r := a.row
	return []any{&r.ProcessGuid, &a.index, &a.presence, &r.Domain, &r.InstanceGuid,
		&r.CellId, &r.DefinitionId, &a.state, &a.netInfo, &a.crashCount, &r.CrashReason,
		&r.Since, &r.PlacementError, &r.Routable, &r.Occupied, &r.StopRequested, &r.ModificationTag.Epoch, &a.tagIndex, &a.routePorts}
}

// lrp completes the scanned row.
func (a *actualLRPScan) lrp() (*models.ActualLRP, error) {
	lrp := a.row
	lrp.Index, lrp.CrashCount = int32(a.index), int32(a.crashCount)
	lrp.ModificationTag.Index = uint32(a.tagIndex)
	lrp.Presence = models.ActualLRP_Presence(models.ActualLRP_Presence_value[a.presence])
	lrp.State = models.ActualLRP_State(models.ActualLRP_State_value[a.state])
	if a.netInfo != nil {
		lrp.NetInfo = &models.NetInfo{}
		if err := proto.Unmarshal(a.netInfo, lrp.NetInfo); err != nil {
			return nil, errInvalidRecord("actual_lrp %q index %d: net_info: %v", lrp.ProcessGuid, lrp.Index, err)
		}
	}
	routePorts, err := decodeRoutePorts(a.routePorts)
	if err != nil {
		return nil, errInvalidRecord("actual_lrp %q index %d: route_ports: %v", lrp.ProcessGuid, lrp.Index, err)
	}
	if lrp.NetInfo != nil {
		lrp.RoutePorts = models.InstanceRoutePorts(routePorts, lrp.NetInfo)
	}
	return lrp, nil
}

// selectActualLRPs reads the rows matching where, in no particular order.
func (s *SQLDB) selectActualLRPs(ctx context.Context, q queryer, where string, args ...any) ([]*models.ActualLRP, error) {
	rows, err := s.query(ctx, q, selectActualLRP+" WHERE "+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var lrps []*models.ActualLRP
	for rows.Next() {
		lrp, err := scanActualLRP(rows)
		if err != nil {
			return nil, err
		}
		lrps = append(lrps, lrp)
	}
	return lrps, rows.Err()
}

// lockActualLRP reads one row in tx, locked against concurrent writers; nil
// when there is none.
func (s *SQLDB) lockActualLRP(ctx context.Context, tx *sql.Tx, key models.ActualLRPKey) (*models.ActualLRP, error) {
	lrp, err := scanActualLRP(s.queryRow(ctx, tx, selectActualLRP+
		actualLRPByKey+s.driver.lockForUpdate(),
		key.ProcessGuid, key.Index, key.Presence.String()))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return lrp, err
}

// deleteActualLRPs deletes the rows matching where and returns an
// actual_lrp_removed event for each. The rows are read locked first, so the
// events show them as deleted; should the delete meet a row the read did
// not (one inserted in between), the transaction runs again.
func (s *SQLDB) deleteActualLRPs(ctx context.Context, tx *sql.Tx, where string, args ...any) ([]models.Event, error) {
	doomed, err := s.selectActualLRPs(ctx, tx, where+s.driver.lockForUpdate(), args...)
	if err != nil {
		return nil, err
	}
	res, err := s.exec(ctx, tx, "DELETE FROM actual_lrps WHERE "+where, args...)
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, err
	} else if int(n) != len(doomed) {
		return nil, errLostRace
	}
	sortActualLRPs(doomed)
	events := make([]models.Event, len(doomed))
	for i, lrp := range doomed {
		events[i] = models.ActualLRPRemoved(lrp)
	}
	return events, nil
}

// actualLRPMutableColumns are the columns a lifecycle write sets; the key,
// domain, definition and tag epoch never change in place, and neither does
// stop_requested, which only convergence sets (on a RETIRING row): a rep's
// write keeps it.
var actualLRPMutableColumns = []string{
	"instance_guid", "cell_id", "state", "net_info", "crash_count", "crash_reason", "since",
	"placement_error", "routable", "occupied", "modification_tag_index", "route_ports",
}

// The parts of a row's reads and writes: actualLRPByKey is the row by
// its key, actualLRPTagIs its tag (a write's compare-and-set),
// actualLRPAssignments its mutable columns. updateActualLRP and
// deleteActualLRPSQL are made of them, and the MySQL batch's writes
// (lifecycle_mysql.go). A write's arguments (actualLRPWriteArgs,
// actualLRPDeleteArgs) end with the key's three and the tag's two.
var (
	actualLRPByKey       = " WHERE process_guid = ? AND instance_index = ? AND presence = ?"
	actualLRPTagIs       = " AND modification_tag_epoch = ? AND modification_tag_index = ?"
	actualLRPAssignments = strings.Join(actualLRPMutableColumns, " = ?, ") + " = ?"
	updateActualLRP      = "UPDATE actual_lrps SET " + actualLRPAssignments + actualLRPByKey + actualLRPTagIs
)

// writeActualLRP stores after over before, compare-and-set on before's
// modification tag; after must carry before's tag index plus one. A row
// that changed since before was read is errLostRace. Only a RUNNING
// instance is ever stored occupied (see storedOccupied).
func (s *SQLDB) writeActualLRP(ctx context.Context, q queryer, before, after *models.ActualLRP) error {
	args, err := actualLRPWriteArgs(before, after)
	if err != nil {
		return err
	}
	return s.execOne(ctx, q, updateActualLRP, args...)
}

// actualLRPWriteArgs are updateActualLRP's arguments for storing after
// over before. after is set as a read will return it (storedRoutePorts,
// storedOccupied), so that events made of it show the row as stored.
func actualLRPWriteArgs(before, after *models.ActualLRP) ([]any, error) {
	netInfo, err := encodeNetInfo(after.NetInfo)
	if err != nil {
		return nil, errInvalid("net_info", err.Error())
	}
	routePorts, err := storedRoutePorts(after)
	if err != nil {
		return nil, err
	}
	return []any{after.InstanceGuid, after.CellId, after.State.String(), netInfo, after.CrashCount, after.CrashReason,
		after.Since, after.PlacementError, after.Routable, storedOccupied(after), int64(after.ModificationTag.Index), routePorts,
		before.ProcessGuid, before.Index, before.Presence.String(),
		before.ModificationTag.Epoch, int64(before.ModificationTag.Index)}, nil
}

// storedOccupied is what a write stores as occupied: an instance that is
// not RUNNING serves nobody, whatever the row it came from said, so that
// autoscaling never counts demand from a stopped or starting instance.
func storedOccupied(lrp *models.ActualLRP) bool {
	lrp.Occupied = lrp.Occupied && lrp.State == models.ActualLRP_RUNNING
	return lrp.Occupied
}

// storedRoutePorts is how a write stores the instance's route ports:
// without host ports, which follow its net info. A row without net info
// runs nothing a route could reach and keeps none (a start gives them
// back). It sets lrp's route ports as a read will return them, so that
// the row in an event is the row a read returns.
func storedRoutePorts(lrp *models.ActualLRP) ([]byte, error) {
	lrp.RoutePorts = models.RoutePortsAsStored(lrp.RoutePorts, lrp.NetInfo)
	blob, err := encodeRoutePorts(lrp.RoutePorts)
	if err != nil {
		return nil, errInvalid("route_ports", err.Error())
	}
	return blob, nil
}

func sortActualLRPs(lrps []*models.ActualLRP) {
	slices.SortFunc(lrps, compareActualLRPs)
}

// compareActualLRPs orders rows by key.
func compareActualLRPs(a, b *models.ActualLRP) int {
	return models.CompareActualLRPKeys(a, b)
}

// rowWrite is one row's next version over the version it was read at.
type rowWrite struct {
	before, after *models.ActualLRP
}

// writeActualLRPs stores each write's after over its before, like
// writeActualLRP, or in statements of many rows where the driver has a
// batched write (Postgres). Any row that changed since it was read makes
// it errLostRace.
func (s *SQLDB) writeActualLRPs(ctx context.Context, q queryer, writes []rowWrite) error {
	batched := s.driver.writeActualLRPs()
	if batched == nil {
		for _, w := range writes {
			if err := s.writeActualLRP(ctx, q, w.before, w.after); err != nil {
				return err
			}
		}
		return nil
	}
	for batch := range slices.Chunk(writes, batchSize/2) {
		if err := batched(s, ctx, q, batch); err != nil {
			return err
		}
	}
	return nil
}
