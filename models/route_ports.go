package models

import (
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/types/known/structpb"
)

// Routes across versions (DESIGN §5, "Ports across definitions").
//
// A DesiredLRP's routes are opaque JSON per router, with one convention
// the board reads: an entry that names a container port — "port" or
// "container_port", a number — sends its route there. The route is named
// by the entry's "hostname", each of its "hostnames" (Diego's cf-router
// shape), or else "<router>[<i>]". So
//
//	{"http": [{"hostname": "hello.example.test", "port": 8080}],
//	 "tcp":  [{"external_port": 61000, "container_port": 5222}]}
//
// names two route ports: (http, hello.example.test, 8080) and
// (tcp, tcp[0], 5222). Entries without a port are left to their router.
//
// Every definition is stored with the routes it serves: a new definition
// with the update's routes (or the LRP's, when the update leaves them), and
// each instance is routed through its own definition's routes. During a
// rollout that moves hello.example.test from 8080 to 9090, an old instance
// (definition v1, ports [8080], routes → 8080) lists
//
//	route_ports: [{router: http, route: hello.example.test, container_port: 8080, host_port: 61003}]
//
// and a new one (v2, ports [9090], routes → 9090)
//
//	route_ports: [{router: http, route: hello.example.test, container_port: 9090, host_port: 61011}]
//
// so a router sends the hostname to both, each on its own port, and the
// rollout loses no request. A change of routes alone applies to every
// definition that exposes all the ports the new routes name (adding a
// hostname reaches old instances too); a definition that does not keep
// its routes until its instances are gone.

// RoutePortsOf lists the route ports routes name, by router name, then
// entry order, then hostname order. Entries that name no port, or a port
// that is not a whole number, are skipped (ValidateRoutePorts refuses the
// latter).
func RoutePortsOf(routes *structpb.Struct) []*RoutePort {
	var out []*RoutePort
	eachRouteEntry(routes, func(router, name string, entry *structpb.Struct, port uint32, _ string) {
		if port != 0 {
			out = append(out, &RoutePort{Router: router, Route: name, ContainerPort: port})
		}
	})
	return out
}

// eachRouteEntry calls fn for every (entry, route name) of routes, with the
// port it names (0 when none or not valid) and the field path of that port.
func eachRouteEntry(routes *structpb.Struct, fn func(router, name string, entry *structpb.Struct, port uint32, portPath string)) {
	fields := routes.GetFields()
	for _, router := range slices.Sorted(maps.Keys(fields)) {
		value := fields[router]
		var entries []*structpb.Value
		switch kind := value.GetKind().(type) {
		case *structpb.Value_ListValue:
			entries = kind.ListValue.GetValues()
		case *structpb.Value_StructValue:
			entries = []*structpb.Value{value}
		}
		for i, item := range entries {
			entry := item.GetStructValue()
			if entry == nil {
				continue
			}
			entryPath := indexed(router, i)
			if _, ok := value.GetKind().(*structpb.Value_StructValue); ok {
				entryPath = router
			}
			port, portPath := entryPort(entry, entryPath)
			if portPath == "" {
				continue
			}
			for _, name := range routeNames(entry, entryPath) {
				fn(router, name, entry, port, portPath)
			}
		}
	}
}

// entryPort is the port an entry names, 0 when it is not a valid port,
// and the path of its field ("" when it names none).
func entryPort(entry *structpb.Struct, entryPath string) (uint32, string) {
	for _, key := range []string{"port", "container_port"} {
		v, ok := entry.GetFields()[key]
		if !ok {
			continue
		}
		n, isNumber := v.GetKind().(*structpb.Value_NumberValue)
		if !isNumber || n.NumberValue != float64(uint32(n.NumberValue)) || n.NumberValue < 1 || n.NumberValue > 65535 {
			return 0, child(entryPath, key)
		}
		return uint32(n.NumberValue), child(entryPath, key)
	}
	return 0, ""
}

func routeNames(entry *structpb.Struct, entryPath string) []string {
	if h := entry.GetFields()["hostname"].GetStringValue(); h != "" {
		return []string{h}
	}
	var names []string
	for _, v := range entry.GetFields()["hostnames"].GetListValue().GetValues() {
		if h := v.GetStringValue(); h != "" {
			names = append(names, h)
		}
	}
	if len(names) == 0 {
		names = []string{entryPath}
	}
	return names
}

// ValidateRoutePorts checks that every port routes name is a port number
// and one the definition exposes: a route to a port no instance listens on
// would send every request to a closed port. path is where routes are in
// the request ("desired_lrp.routes").
func ValidateRoutePorts(path string, routes *structpb.Struct, ports []uint32) error {
	var err error
	eachRouteEntry(routes, func(router, name string, entry *structpb.Struct, port uint32, portPath string) {
		if err != nil {
			return
		}
		switch {
		case port == 0:
			err = ErrInvalidField(child(path, portPath), "must be a port number from 1 to 65535")
		case !slices.Contains(ports, port):
			err = ErrInvalidField(child(path, portPath), fmt.Sprintf(
				"sends route %q to port %d, which the definition does not expose (its ports: %v)", name, port, ports))
		}
	})
	return err
}

// validateRoutePortNumbers checks only that the ports routes name are port
// numbers, where the definition they apply to is not known yet.
func validateRoutePortNumbers(path string, routes *structpb.Struct) error {
	var err error
	eachRouteEntry(routes, func(_, _ string, _ *structpb.Struct, port uint32, portPath string) {
		if err == nil && port == 0 {
			err = ErrInvalidField(child(path, portPath), "must be a port number from 1 to 65535")
		}
	})
	return err
}

// ValidateUpdateRoutes checks an update's routes and definition against
// the LRP as stored (its routes, and the ports of its active definition):
// the routes an update leaves must still reach a port of the new
// definition, and new routes must reach ports of the definition they will
// serve (the update's, else the active one). The checks that need nothing
// stored ran when the request was validated.
func ValidateUpdateRoutes(update *DesiredLRPUpdate, storedRoutes *structpb.Struct, activePorts []uint32) error {
	switch {
	case update.GetDefinition() != nil && update.GetRoutes() == nil:
		return ValidateDefinitionKeepsRoutes("update.definition", update.GetDefinition(), storedRoutes)
	case update.GetDefinition() == nil && update.GetRoutes() != nil:
		return ValidateRoutePorts("update.routes", update.GetRoutes(), activePorts)
	}
	return nil
}

// ValidateDefinitionKeepsRoutes refuses a new definition that no longer
// exposes a port the LRP's routes (which the update leaves as they are)
// send to: its instances would take the route and answer on no port. The
// way to move a route is to change the routes in the same update.
func ValidateDefinitionKeepsRoutes(path string, def *LRPDefinition, routes *structpb.Struct) error {
	for _, rp := range RoutePortsOf(routes) {
		if !slices.Contains(def.GetPorts(), rp.GetContainerPort()) {
			return ErrInvalidField(child(path, "ports"), fmt.Sprintf(
				"does not expose port %d, which route %q (%s) sends to; to move the route, change the routes in the same update",
				rp.GetContainerPort(), rp.GetRoute(), rp.GetRouter()))
		}
	}
	return nil
}

// ServesRoutePorts reports whether a definition with ports can take routes
// naming routePorts: it exposes every port they name.
func ServesRoutePorts(ports []uint32, routePorts []*RoutePort) bool {
	for _, rp := range routePorts {
		if !slices.Contains(ports, rp.GetContainerPort()) {
			return false
		}
	}
	return true
}

// RoutePortsAsStored are the route ports a row with net info net stores
// and reads back: none without net info (it runs nothing a route could
// reach; a start gives them back), else each at the host port net maps
// (InstanceRoutePorts).
func RoutePortsAsStored(routePorts []*RoutePort, net *NetInfo) []*RoutePort {
	if net == nil {
		return nil
	}
	return InstanceRoutePorts(routePorts, net)
}

// InstanceRoutePorts is where an instance answers each of its definition's
// route ports: the host port net info maps the container port to, or 0
// when it maps none (the instance does not run yet).
func InstanceRoutePorts(routePorts []*RoutePort, net *NetInfo) []*RoutePort {
	if len(routePorts) == 0 {
		return nil
	}
	out := make([]*RoutePort, len(routePorts))
	for i, rp := range routePorts {
		out[i] = &RoutePort{Router: rp.GetRouter(), Route: rp.GetRoute(), ContainerPort: rp.GetContainerPort()}
		for _, m := range net.GetPorts() {
			if m.GetContainerPort() == rp.GetContainerPort() {
				out[i].HostPort = m.GetHostPort()
				break
			}
		}
	}
	return out
}
