package e2e_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/models"
)

// A rollout that moves the app from port 8080 to 9090 in one update (new
// definition and new routes together), with a router that follows the
// route "hello.example.test" the way route_ports describe it: each instance
// on its own definition's port for the route.
var _ = Describe("moving a route from port 8080 to 9090 during a rollout", Ordered, func() {
	const (
		guid      = "hello"
		route     = "hello.example.test"
		instances = 4
	)
	var b *board
	ctx := context.Background()
	both := []string{"cell-z1", "cell-z2"}
	slots := map[string]any{"capacity": map[string]int{"memory_mb": 1024, "disk_mb": 1024, "instances": instances}}

	BeforeAll(func() {
		b = startBoard(nil)
		b.cork("set-domain", "cork")
		startRep(b, "cell-z1", "z1", slots)
		startRep(b, "cell-z2", "z2", slots)
		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.Instances = instances
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		steady(b, guid, instances, both...)
	})

	on9090 := func(version string) *models.LRPDefinition {
		def := definitionFixture("hello-local-v2-definition.json")
		def.Ports = []uint32{9090}
		def.HealthCheck.Port = 9090
		def.Action.Env = []*models.EnvironmentVariable{{Name: "VERSION", Value: version}}
		return def
	}

	It("refuses a definition that stops exposing the route's port while the routes stay", func() {
		_, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{Definition: on9090("v2")})
		Expect(models.IsErrorType(err, models.Error_InvalidRequest)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring(`update.definition.ports: does not expose port 8080, which route "hello.example.test" (http) sends to`))
		status, err := b.client().RolloutStatus(ctx, guid)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.GetActiveDefinitionId()).To(Equal(status.GetHealthyDefinitionId()), "nothing started")
	})

	It("serves every request while old instances take the route on 8080 and new ones on 9090", func() {
		r := startRouteRouter(b, guid, route)
		Eventually(r.routable).Should(Equal(instances), "the router sees every instance on the route before the change")

		routes, err := structpb.NewStruct(map[string]any{"http": []any{map[string]any{"hostname": route, "port": 9090}}})
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		_, err = b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{Definition: on9090("v2"), Routes: routes})
		Expect(err).NotTo(HaveOccurred())
		status := waitForRollout(b, guid, 2*time.Minute, complete())
		rows := steady(b, guid, instances, both...)
		took := time.Since(start)
		Eventually(r.sent).Should(BeNumerically(">", 100))
		stats := r.stop()

		AddReportEntry("port move", fmt.Sprintf("%s; %d requests, %d failed, by container port %v, by version %v",
			took.Round(time.Millisecond), stats.Requests, len(stats.Failures), stats.Ports, stats.Versions))
		expectServedThroughout(stats, instances)
		Expect(stats.Ports).To(HaveKey(uint32(8080)), "old instances were routed on 8080 during the rollout")
		Expect(stats.Ports).To(HaveKey(uint32(9090)), "new instances were routed on 9090")
		for _, row := range rows {
			Expect(row.GetDefinitionId()).To(Equal(status.GetActiveDefinitionId()))
			Expect(row.GetRoutePorts()).To(HaveLen(1))
			Expect(row.GetRoutePorts()[0].GetRoute()).To(Equal(route))
			Expect(row.GetRoutePorts()[0].GetContainerPort()).To(BeEquivalentTo(9090))
			Expect(row.GetRoutePorts()[0].GetHostPort()).To(Equal(row.GetNetInfo().GetPorts()[0].GetHostPort()))
		}
	})
})
