package sqldb_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("routes across definitions", func(b *board) {
	var (
		events *recordedEvents
		store  *sqldb.SQLDB
	)
	BeforeEach(func() {
		events = &recordedEvents{}
		store = newStore(b.conn, b.dialect, sqldb.WithClock(b.clock.Now), sqldb.WithEvents(events))
		_, err := store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
		Expect(err).NotTo(HaveOccurred())
	})

	routesTo := func(port uint32, hostnames ...string) *structpb.Struct {
		var entries []any
		for _, h := range hostnames {
			entries = append(entries, map[string]any{"hostname": h, "port": port})
		}
		routes, err := structpb.NewStruct(map[string]any{"http": entries})
		Expect(err).NotTo(HaveOccurred())
		return routes
	}
	onPort := func(id string, port uint32) *models.LRPDefinition {
		def := newDefinition(id, "/bin/web")
		def.Ports = []uint32{port}
		def.HealthCheck.Port = port
		return def
	}
	key := func(index int32) models.ActualLRPKey {
		return models.ActualLRPKey{ProcessGuid: "web", Index: index, Presence: models.ActualLRP_ORDINARY}
	}
	caller := func(index int32) models.Caller {
		return models.Caller{InstanceGuid: "ig-" + string(rune('a'+index)), CellID: "cell-1"}
	}
	// run claims and starts an UNCLAIMED row of the index placed on cell-1,
	// its container port mapped to hostPort.
	run := func(index int32, containerPort, hostPort uint32) *models.ActualLRP {
		GinkgoHelper()
		b.exec("UPDATE actual_lrps SET cell_id = 'cell-1' WHERE process_guid = 'web' AND instance_index = ?", index)
		_, err := store.ClaimActualLRP(b.ctx, key(index), caller(index))
		Expect(err).NotTo(HaveOccurred())
		net := &models.NetInfo{Address: "10.0.0.1", Ports: []*models.PortMapping{{ContainerPort: containerPort, HostPort: hostPort}}}
		running, err := store.StartActualLRP(b.ctx, key(index), caller(index), net, true)
		Expect(err).NotTo(HaveOccurred())
		return running
	}
	routePort := func(route string, container, host uint32) *models.RoutePort {
		return &models.RoutePort{Router: "http", Route: route, ContainerPort: container, HostPort: host}
	}
	// routesOf lists each instance's route ports by index.
	routesOf := func() map[int32][]*models.RoutePort {
		out := map[int32][]*models.RoutePort{}
		for _, lrp := range b.instances("web") {
			out[lrp.Index] = lrp.RoutePorts
		}
		return out
	}
	// addV2Instance adds index 1 on v2, as a rollout's replacement would be.
	addV2Instance := func() {
		b.putActual(&models.ActualLRP{ProcessGuid: "web", Index: 1, Presence: models.ActualLRP_ORDINARY, Domain: "apps",
			DefinitionId: "v2", State: models.ActualLRP_UNCLAIMED, ModificationTag: &models.ModificationTag{Epoch: "e1"}})
	}

	It("gives a started instance its definition's route ports, with host ports from its net info", func() {
		running := run(0, 8080, 61001)
		Expect(running.RoutePorts).To(ConsistOf(EqualProto(routePort("web.example.com", 8080, 61001))))
		Expect(routesOf()[0]).To(ConsistOf(EqualProto(routePort("web.example.com", 8080, 61001))))

		var started *models.ActualLRPChangedEvent
		for _, e := range events.all() {
			if c, ok := e.Payload.(*models.ActualLRPChangedEvent); ok && c.After.State == models.ActualLRP_RUNNING {
				started = c
			}
		}
		Expect(started).NotTo(BeNil())
		Expect(started.After.RoutePorts).To(ConsistOf(EqualProto(routePort("web.example.com", 8080, 61001))))
	})

	It("drops the routes of an instance that crashes, and gives them back when it starts again", func() {
		run(0, 8080, 61001)
		crashed, err := store.CrashActualLRP(b.ctx, key(0), caller(0), "exited with code 1")
		Expect(err).NotTo(HaveOccurred())
		Expect(crashed.RoutePorts).To(BeEmpty())
		Expect(routesOf()[0]).To(BeEmpty())

		b.exec("UPDATE actual_lrps SET state = 'UNCLAIMED' WHERE process_guid = 'web' AND instance_index = 0")
		run(0, 8080, 61005)
		Expect(routesOf()[0]).To(ConsistOf(EqualProto(routePort("web.example.com", 8080, 61005))))
	})

	It("refuses a definition that drops a port a route uses, unless the routes change with it", func() {
		run(0, 8080, 61001)
		before, err := store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())

		_, err = store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Definition: onPort("v2", 9090)})
		Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
		Expect(err.Error()).To(ContainSubstring("update.definition.ports"))
		Expect(err.Error()).To(ContainSubstring(`does not expose port 8080, which route "web.example.com" (http) sends to`))
		after, err := store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(EqualProto(before))
		Expect(b.count("SELECT COUNT(*) FROM run_infos WHERE process_guid = 'web'")).To(Equal(1))
	})

	It("routes each instance through its own definition's routes while a rollout moves a route to another port", func() {
		run(0, 8080, 61001)
		_, err := store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
			Definition: onPort("v2", 9090), Routes: routesTo(9090, "web.example.com"),
		})
		Expect(err).NotTo(HaveOccurred())
		addV2Instance()
		run(1, 9090, 61002)

		Expect(routesOf()[0]).To(ConsistOf(EqualProto(routePort("web.example.com", 8080, 61001))), "the v1 instance keeps port 8080")
		Expect(routesOf()[1]).To(ConsistOf(EqualProto(routePort("web.example.com", 9090, 61002))), "the v2 instance takes 9090")
	})

	It("brings a definition's routes back as the LRP's when a rollback makes it active again", func() {
		run(0, 8080, 61001)
		_, err := store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
			Definition: onPort("v2", 9090), Routes: routesTo(9090, "web.example.com"),
		})
		Expect(err).NotTo(HaveOccurred())
		lrp, err := store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(lrp.Routes).To(EqualProto(routesTo(9090, "web.example.com")))

		_, err = store.Rollback(b.ctx, "web", "v1", false)
		Expect(err).NotTo(HaveOccurred())
		lrp, err = store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(lrp.ActiveDefinitionId).To(Equal("v1"))
		Expect(lrp.Routes).To(EqualProto(routesTo(8080, "web.example.com")), "v1 serves 8080")
		Expect(routesOf()[0]).To(ConsistOf(EqualProto(routePort("web.example.com", 8080, 61001))))

		var changed *models.DesiredLRPChangedEvent
		for _, e := range events.all() {
			if c, ok := e.Payload.(*models.DesiredLRPChangedEvent); ok {
				changed = c
			}
		}
		Expect(changed.After.Routes).To(EqualProto(routesTo(8080, "web.example.com")))

		// And a definition on 8080 alone is welcome again.
		_, err = store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Definition: onPort("v3", 8080)})
		Expect(err).NotTo(HaveOccurred())
	})

	It("gives a change of routes alone to every definition that exposes their ports, and announces the instances it changed", func() {
		run(0, 8080, 61001)
		_, err := store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
			Definition: onPort("v2", 9090), Routes: routesTo(9090, "web.example.com"),
		})
		Expect(err).NotTo(HaveOccurred())
		addV2Instance()
		run(1, 9090, 61002)
		events.take()

		_, err = store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Routes: routesTo(9090, "web.example.com", "api.example.com")})
		Expect(err).NotTo(HaveOccurred())
		Expect(routesOf()[1]).To(ConsistOf(
			EqualProto(routePort("web.example.com", 9090, 61002)), EqualProto(routePort("api.example.com", 9090, 61002))))
		Expect(routesOf()[0]).To(ConsistOf(EqualProto(routePort("web.example.com", 8080, 61001))),
			"v1 does not expose 9090: it keeps its routes until its instances are gone")

		var changed []*models.ActualLRPChangedEvent
		for _, e := range events.take() {
			if c, ok := e.Payload.(*models.ActualLRPChangedEvent); ok {
				changed = append(changed, c)
			}
		}
		Expect(changed).To(HaveLen(1))
		Expect(changed[0].After.Index).To(BeEquivalentTo(1))
		Expect(changed[0].After.RoutePorts).To(HaveLen(2))
	})

	It("refuses routes alone that send a route to a port the active definition does not expose, changing nothing", func() {
		run(0, 8080, 61001)
		_, err := store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Routes: routesTo(7070, "web.example.com")})
		Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
		Expect(err.Error()).To(ContainSubstring("update.routes.http[0].port"))
		Expect(err.Error()).To(ContainSubstring("port 7070"))
		Expect(routesOf()[0]).To(ConsistOf(EqualProto(routePort("web.example.com", 8080, 61001))))
	})

	It("gives an instance that starts by its cell's report its definition's routes", func() {
		b.exec("UPDATE actual_lrps SET cell_id = 'cell-1' WHERE process_guid = 'web' AND instance_index = 0")
		_, err := store.ClaimActualLRP(b.ctx, key(0), caller(0))
		Expect(err).NotTo(HaveOccurred())
		net := &models.NetInfo{Address: "10.0.0.1", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61009}}}
		_, err = store.BulkReport(b.ctx, "cell-1", []*models.ReportedInstance{{
			ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY, InstanceGuid: caller(0).InstanceGuid,
			DefinitionId: "v1", State: models.ActualLRP_RUNNING, NetInfo: net, Routable: true,
		}})
		Expect(err).NotTo(HaveOccurred())
		Expect(routesOf()[0]).To(ConsistOf(EqualProto(routePort("web.example.com", 8080, 61009))))
	})
})
