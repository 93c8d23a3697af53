package sqldb

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// checkFilterNames refuses a filter no stored name could match alike on
// every dialect (see checkName).
func checkFilterNames(filter db.ActualLRPFilter) error {
	for _, f := range []struct {
		field, value string
		max          int
	}{
		{"domain", filter.Domain, maxDomain},
		{"cell_id", filter.CellID, maxCellID},
		{"process_guid", filter.ProcessGuid, maxProcessGuid},
	} {
		if f.value == "" {
			continue
		}
		if err := checkName(f.field, f.value, f.max); err != nil {
			return err
		}
	}
	return nil
}

// allocChunk is how many ActualLRPs (and their tags) are allocated at once:
// listing 100,000 rows makes a few hundred allocations instead of 200,000.
const allocChunk = 512

// routePortsMemo decodes a list's stored route ports (decodeRoutePorts),
// once for each distinct blob in a row of the rows before: an LRP's
// instances store their definition's. The ports it returns are shared
// and must not be changed (models.InstanceRoutePorts copies them).
type routePortsMemo struct {
	last  []byte
	ports []*models.RoutePort
}

func (m *routePortsMemo) decode(blob []byte) ([]*models.RoutePort, error) {
	if m.last != nil && bytes.Equal(blob, m.last) {
		return m.ports, nil
	}
	ports, err := decodeRoutePorts(blob)
	if err != nil {
		return nil, err
	}
	m.last, m.ports = append(m.last[:0], blob...), ports
	return ports, nil
}

// ActualLRPs lists the matching instances ordered by process guid, index
// and presence name. It reads plain columns; only net_info is decoded.
func (s *SQLDB) ActualLRPs(ctx context.Context, filter db.ActualLRPFilter) ([]*models.ActualLRP, error) {
	return collect(s.EachActualLRP, ctx, filter)
}

// EachActualLRP is ActualLRPs handing each instance to fn as it is read.
func (s *SQLDB) EachActualLRP(ctx context.Context, filter db.ActualLRPFilter, fn func(*models.ActualLRP) error) error {
	if err := checkFilterNames(filter); err != nil {
		return err
	}
	query, args := actualListQuery(filter)

	var chunk []models.ActualLRP
	var tags []models.ModificationTag
	// Columns are read without copying (sql.RawBytes) and made strings
	// only as needed: consecutive rows are mostly one LRP's instances, on
	// few cells and domains, with few distinct reasons, so a list keeps
	// one copy of each such value (listStrings) rather than one a row.
	// Presence, state and net_info are only looked at, never kept.
	var guid, presence, domain, cellID, definitionID, state, netInfo, crashReason, placementError, routePorts sql.RawBytes
	// Integers are read as int64, the type every driver returns: scanning
	// into an int32 goes through a string conversion in database/sql.
	var index, crashCount, tagIndex int64
	var strs listStrings
	var ports routePortsMemo
	scan := func(rows *sql.Rows) error {
		if len(chunk) == 0 {
			chunk = make([]models.ActualLRP, allocChunk)
			tags = make([]models.ModificationTag, allocChunk)
		}
		lrp, tag := &chunk[0], &tags[0]
		chunk, tags = chunk[1:], tags[1:]
		err := rows.Scan(&guid, &index, &presence, &domain, &lrp.InstanceGuid,
			&cellID, &definitionID, &state, &netInfo, &crashCount, &crashReason,
			&lrp.Since, &placementError, &lrp.Routable, &lrp.Occupied, &lrp.StopRequested, &tag.Epoch, &tagIndex, &routePorts)
		if err != nil {
			return err
		}
		lrp.ProcessGuid, lrp.DefinitionId = strs.lrp(guid, definitionID)
		lrp.Domain, lrp.CellId = strs.shared(domain), strs.shared(cellID)
		lrp.CrashReason, lrp.PlacementError = strs.shared(crashReason), strs.shared(placementError)
		lrp.Index, lrp.CrashCount = int32(index), int32(crashCount)
		lrp.Presence = models.ActualLRP_Presence(models.ActualLRP_Presence_value[string(presence)])
		lrp.State = models.ActualLRP_State(models.ActualLRP_State_value[string(state)])
		tag.Index = uint32(tagIndex)
		lrp.ModificationTag = tag
		if netInfo != nil {
			lrp.NetInfo = &models.NetInfo{}
			if err := proto.Unmarshal(netInfo, lrp.NetInfo); err != nil {
				return errInvalidRecord("actual_lrp %q index %d: net_info: %v", lrp.ProcessGuid, lrp.Index, err)
			}
		}
		if routePorts != nil && lrp.NetInfo != nil {
			stored, err := ports.decode(routePorts)
			if err != nil {
				return errInvalidRecord("actual_lrp %q index %d: route_ports: %v", lrp.ProcessGuid, lrp.Index, err)
			}
			lrp.RoutePorts = models.InstanceRoutePorts(stored, lrp.NetInfo)
		}
		return fn(lrp)
	}
	var err error
	if filter.Limit > 0 {
		err = s.eachPageRow(ctx, query, args, scan)
	} else {
		err = s.eachRow(ctx, s.conn, query, args, scan)
	}
	return asModelError("list actual lrps", err)
}

// actualListQuery reads the instances filter matches in the list's order,
// filter.Limit of them at most (0: every one).
func actualListQuery(filter db.ActualLRPFilter) (string, []any) {
	var where []string
	var args []any
	if filter.Domain != "" {
		where = append(where, "domain = ?")
		args = append(args, filter.Domain)
	}
	if filter.CellID != "" {
		where = append(where, "cell_id = ?")
		args = append(args, filter.CellID)
	}
	if filter.ProcessGuid != "" {
		where = append(where, "process_guid = ?")
		args = append(args, filter.ProcessGuid)
	}
	if filter.Index != nil {
		where = append(where, "instance_index = ?")
		args = append(args, *filter.Index)
	}
	if after := filter.After; after != nil {
		// The leading >= lets every dialect start a range scan of the
		// primary key there; the rest picks the rows after the key.
		where = append(where, "process_guid >= ? AND (process_guid > ? OR (process_guid = ? AND (instance_index > ? OR (instance_index = ? AND presence > ?))))")
		args = append(args, after.ProcessGuid, after.ProcessGuid, after.ProcessGuid, after.Index, after.Index, after.Presence.String())
	}
	query := selectActualLRP
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	// The key's order, guids and presence names as bytes on every dialect
	// (see ConvergenceSnapshot), so that pages follow each other.
	query += " ORDER BY process_guid, instance_index, presence"
	if filter.Limit > 0 {
		query += fmt.Sprintf(" LIMIT %d", filter.Limit)
	}
	return query, args
}
