package models_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/models"
)

func routesJSON(fields map[string]any) *structpb.Struct {
	routes, err := structpb.NewStruct(fields)
	Expect(err).NotTo(HaveOccurred())
	return routes
}

var _ = Describe("Route ports", func() {
	It("reads the port each route entry names, by router, entry and hostname", func() {
		routes := routesJSON(map[string]any{
			"http": []any{
				map[string]any{"hostname": "hello.example.test", "port": 8080},
				map[string]any{"hostnames": []any{"a.example", "b.example"}, "port": 9090},
				map[string]any{"hostname": "no-port.example"},
			},
			"tcp": []any{map[string]any{"external_port": 61000, "container_port": 5222}},
		})
		Expect(models.RoutePortsOf(routes)).To(Equal([]*models.RoutePort{
			{Router: "http", Route: "hello.example.test", ContainerPort: 8080},
			{Router: "http", Route: "a.example", ContainerPort: 9090},
			{Router: "http", Route: "b.example", ContainerPort: 9090},
			{Router: "tcp", Route: "tcp[0]", ContainerPort: 5222},
		}))
	})

	It("maps an instance's route ports to the host ports of its net info", func() {
		ports := []*models.RoutePort{{Router: "http", Route: "h", ContainerPort: 8080}, {Router: "tcp", Route: "t", ContainerPort: 5222}}
		net := &models.NetInfo{Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}
		Expect(models.InstanceRoutePorts(ports, net)).To(Equal([]*models.RoutePort{
			{Router: "http", Route: "h", ContainerPort: 8080, HostPort: 61001},
			{Router: "tcp", Route: "t", ContainerPort: 5222, HostPort: 0},
		}))
	})

	DescribeTable("an update checked against the stored routes and the active definition's ports",
		func(update *models.DesiredLRPUpdate, want string) {
			stored := routesJSON(map[string]any{"http": []any{map[string]any{"hostname": "hello.example.test", "port": 8080}}})
			err := models.ValidateUpdateRoutes(update, stored, []uint32{8080})
			if want == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(models.IsErrorType(err, models.Error_InvalidRequest)).To(BeTrue(), "got %v", err)
			Expect(models.ConvertError(err).GetMessage()).To(Equal(want))
		},
		Entry("a definition that keeps the port", &models.DesiredLRPUpdate{Definition: &models.LRPDefinition{Ports: []uint32{8080, 9090}}}, ""),
		Entry("a definition that drops the port, routes left alone",
			&models.DesiredLRPUpdate{Definition: &models.LRPDefinition{Ports: []uint32{9090}}},
			`update.definition.ports: does not expose port 8080, which route "hello.example.test" (http) sends to; to move the route, change the routes in the same update`),
		Entry("a definition and routes that move together (checked with the request)", &models.DesiredLRPUpdate{
			Definition: &models.LRPDefinition{Ports: []uint32{9090}},
			Routes:     routesJSON(map[string]any{"http": []any{map[string]any{"hostname": "hello.example.test", "port": 9090}}}),
		}, ""),
		Entry("routes alone to a port of the active definition", &models.DesiredLRPUpdate{
			Routes: routesJSON(map[string]any{"http": []any{map[string]any{"hostname": "x.example", "port": 8080}}}),
		}, ""),
		Entry("routes alone to a port the active definition does not expose", &models.DesiredLRPUpdate{
			Routes: routesJSON(map[string]any{"http": []any{map[string]any{"hostname": "x.example", "port": 9090}}}),
		}, `update.routes.http[0].port: sends route "x.example" to port 9090, which the definition does not expose (its ports: [8080])`),
	)

	DescribeTable("requests",
		func(message validator, want string) { expectValidation(message, want) },
		Entry("a desire whose route names a port the definition does not expose", func() validator {
			lrp := validDesiredLRP()
			lrp.Routes = routesJSON(map[string]any{"http": []any{map[string]any{"hostname": "web.example", "port": 7070}}})
			return &models.DesireLRPRequest{DesiredLrp: lrp}
		}(), `desired_lrp.routes.http[0].port: sends route "web.example" to port 7070, which the definition does not expose (its ports: [8080 9090])`),
		Entry("a desire whose route port is not a port number", func() validator {
			lrp := validDesiredLRP()
			lrp.Routes = routesJSON(map[string]any{"http": []any{map[string]any{"hostname": "web.example", "port": 80.5}}})
			return &models.DesireLRPRequest{DesiredLrp: lrp}
		}(), `desired_lrp.routes.http[0].port: must be a port number from 1 to 65535`),
		Entry("an update moving a route to a port its new definition does not expose", &models.UpdateDesiredLRPRequest{
			ProcessGuid: "web",
			Update: &models.DesiredLRPUpdate{
				Definition: validDefinition(),
				Routes:     routesJSON(map[string]any{"http": []any{map[string]any{"hostname": "web.example", "port": 7070}}}),
			},
		}, `update.routes.http[0].port: sends route "web.example" to port 7070, which the definition does not expose (its ports: [8080 9090])`),
	)
})
