package sqldb

import (
	"context"
	"database/sql"
	"errors"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/models"
)

// Routes across definitions (see models/route_ports.go for the rules).
//
// run_infos.routes holds the routes a definition serves, and
// run_infos.route_ports the route ports they name; a definition that
// becomes active again (a rollback, an abort, an auto-revert) brings its
// routes back as the LRP's (writeDefinitionIDs).
// actual_lrps.route_ports holds those of the definition an instance runs,
// copied when it starts. Reads add host ports from the row's net info.
// A change of routes rewrites both in one transaction, for every
// definition that takes the new routes, and every instance of those
// definitions is written (actual_lrp_changed) so that a router following
// the events learns its new routes. A start racing with that change is
// safe either way: the change locks the instances' rows before it writes
// them, so it overwrites what a start that came first copied, and a start
// that comes after reads the new route ports.

// encodeRoutePorts stores route ports without host ports (they follow the
// net info); NULL for none.
func encodeRoutePorts(ports []*models.RoutePort) ([]byte, error) {
	if len(ports) == 0 {
		return nil, nil
	}
	stored := &models.RoutePorts{Ports: make([]*models.RoutePort, len(ports))}
	for i, p := range ports {
		stored.Ports[i] = &models.RoutePort{Router: p.GetRouter(), Route: p.GetRoute(), ContainerPort: p.GetContainerPort()}
	}
	return deterministic.Marshal(stored)
}

func decodeRoutePorts(blob []byte) ([]*models.RoutePort, error) {
	if blob == nil {
		return nil, nil
	}
	stored := &models.RoutePorts{}
	if err := proto.Unmarshal(blob, stored); err != nil {
		return nil, err
	}
	return stored.Ports, nil
}

// servedRoutes is how run_infos stores the routes a definition serves:
// as the LRP's routes are (protojson, "" for none), and the route ports
// they name.
type servedRoutes struct {
	routes string
	ports  []byte
}

func encodeServedRoutes(routes *structpb.Struct) (servedRoutes, error) {
	text, err := encodeRoutes(routes)
	if err != nil {
		return servedRoutes{}, errInvalid("routes", err.Error())
	}
	ports, err := encodeRoutePorts(models.RoutePortsOf(routes))
	if err != nil {
		return servedRoutes{}, errInvalid("routes", err.Error())
	}
	return servedRoutes{routes: text, ports: ports}, nil
}

// setDefinitionRoutes records that a stored definition serves routes.
func (s *SQLDB) setDefinitionRoutes(ctx context.Context, q queryer, processGuid, definitionID string, routes *structpb.Struct) error {
	served, err := encodeServedRoutes(routes)
	if err != nil {
		return err
	}
	_, err = s.exec(ctx, q, "UPDATE run_infos SET route_ports = ?, routes = ? WHERE process_guid = ? AND definition_id = ?",
		served.ports, served.routes, processGuid, definitionID)
	return err
}

// definitionRoutes reads the routes a stored definition serves; false for
// one stored before definitions kept their routes (or deleted since).
func (s *SQLDB) definitionRoutes(ctx context.Context, q queryer, processGuid, definitionID string) (*structpb.Struct, bool, error) {
	var text sql.NullString
	err := s.queryRow(ctx, q, "SELECT routes FROM run_infos WHERE process_guid = ? AND definition_id = ?",
		processGuid, definitionID).Scan(&text)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !text.Valid) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	routes, err := decodeRoutes(text.String)
	if err != nil {
		return nil, false, errInvalidRecord("definition %q of desired_lrp %q: routes: %v", definitionID, processGuid, err)
	}
	return routes, true, nil
}

// definitionRoutePorts reads the route ports a definition serves (none
// for a definition stored before they were recorded, or one since
// deleted).
func (s *SQLDB) definitionRoutePorts(ctx context.Context, q queryer, processGuid, definitionID string) ([]*models.RoutePort, error) {
	var blob []byte
	err := s.queryRow(ctx, q, "SELECT route_ports FROM run_infos WHERE process_guid = ? AND definition_id = ?",
		processGuid, definitionID).Scan(&blob)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return routePortsOfDefinition(processGuid, definitionID, blob)
}

// routePortsOfDefinition decodes the route_ports column of a definition's
// row (NULL, or no row, is none).
func routePortsOfDefinition(processGuid, definitionID string, blob []byte) ([]*models.RoutePort, error) {
	ports, err := decodeRoutePorts(blob)
	if err != nil {
		return nil, errInvalidRecord("definition %q of desired_lrp %q: route_ports: %v", definitionID, processGuid, err)
	}
	return ports, nil
}

// definitionPorts reads the ports of a stored definition.
func (s *SQLDB) definitionPorts(ctx context.Context, q queryer, processGuid, definitionID string) ([]uint32, error) {
	var blob []byte
	err := s.queryRow(ctx, q, "SELECT definition FROM run_infos WHERE process_guid = ? AND definition_id = ?",
		processGuid, definitionID).Scan(&blob)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	def, err := s.decodeStoredDefinition(processGuid, definitionID, blob)
	if err != nil {
		return nil, err
	}
	return def.GetPorts(), nil
}

// applyRoutes gives routes to every stored definition of the LRP that
// exposes all the ports they name (models.ServesRoutePorts), and to those
// definitions' instances, and returns actual_lrp_changed for each
// instance whose routes changed. A definition that does not expose them
// keeps its routes until its instances are gone.
func (s *SQLDB) applyRoutes(ctx context.Context, tx *sql.Tx, processGuid string, routes *structpb.Struct) ([]models.Event, error) {
	routePorts := models.RoutePortsOf(routes)
	served, err := encodeServedRoutes(routes)
	if err != nil {
		return nil, err
	}
	var serving []any
	err = s.eachRow(ctx, tx, "SELECT definition_id, definition FROM run_infos WHERE process_guid = ?", []any{processGuid},
		func(rows *sql.Rows) error {
			var id string
			var defBlob []byte
			if err := rows.Scan(&id, &defBlob); err != nil {
				return err
			}
			def, err := s.decodeStoredDefinition(processGuid, id, defBlob)
			if err != nil {
				return err
			}
			if models.ServesRoutePorts(def.GetPorts(), routePorts) {
				serving = append(serving, id)
			}
			return nil
		})
	if err != nil || len(serving) == 0 {
		return nil, err
	}
	ids := inList(len(serving))
	args := append([]any{served.ports, served.routes, processGuid}, serving...)
	if _, err := s.exec(ctx, tx, "UPDATE run_infos SET route_ports = ?, routes = ? WHERE process_guid = ? AND definition_id IN "+ids, args...); err != nil {
		return nil, err
	}
	rows, err := s.selectActualLRPs(ctx, tx, "process_guid = ? AND definition_id IN "+ids+s.driver.lockForUpdate(),
		append([]any{processGuid}, serving...)...)
	if err != nil {
		return nil, err
	}
	sortActualLRPs(rows)
	var writes []rowWrite
	for _, row := range rows {
		if row.NetInfo == nil {
			// It takes its definition's routes when it starts.
			continue
		}
		after := models.NextVersion(row)
		after.RoutePorts = models.InstanceRoutePorts(routePorts, row.NetInfo)
		if sameRoutePorts(row.RoutePorts, after.RoutePorts) {
			continue
		}
		writes = append(writes, rowWrite{before: row, after: after})
	}
	if err := s.writeActualLRPs(ctx, tx, writes); err != nil {
		return nil, err
	}
	events := make([]models.Event, len(writes))
	for i, w := range writes {
		events[i] = models.ActualLRPChanged(w.before, w.after)
	}
	return events, nil
}

// fillRoutePorts gives each write that starts an instance (RUNNING after,
// not before) the route ports of its definition, read once per
// definition.
func (s *SQLDB) fillRoutePorts(ctx context.Context, q queryer, writes []rowWrite) error {
	type definitionKey struct{ processGuid, definitionID string }
	known := map[definitionKey][]*models.RoutePort{}
	for _, w := range writes {
		if w.after.State != models.ActualLRP_RUNNING || w.before.State == models.ActualLRP_RUNNING {
			continue
		}
		key := definitionKey{w.after.ProcessGuid, w.after.DefinitionId}
		ports, ok := known[key]
		if !ok {
			var err error
			if ports, err = s.definitionRoutePorts(ctx, q, key.processGuid, key.definitionID); err != nil {
				return err
			}
			known[key] = ports
		}
		w.after.RoutePorts = ports
	}
	return nil
}

func sameRoutePorts(a, b []*models.RoutePort) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
