package e2e_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/internal/droplet"
	"github.com/corkboard/corkboard/models"
)

// Shipping new bits: hello desired from its droplet (fixtures/lrps/hello.json
// rendered against a droplet server), 6 instances on two cells, rolled to
// the v2 droplet with a router sending requests throughout. Each cell
// downloads each droplet once, however many of its instances start from
// it, at once or one after another.
var _ = Describe("a rollout from droplet v1 to v2", Ordered, func() {
	const (
		guid      = "hello"
		instances = 6
	)
	var (
		b       *board
		server  *droplet.Server
		baseURL string
		sums    map[string]string
	)
	ctx := context.Background()
	both := []string{"cell-z1", "cell-z2"}
	slots := map[string]any{"capacity": map[string]int{"memory_mb": 1024, "disk_mb": 1024, "instances": instances}}

	// rendered reads a template of fixtures/lrps with the droplets' URLs
	// and checksums filled in.
	rendered := func(name string, msg proto.Message) {
		GinkgoHelper()
		text, err := os.ReadFile(filepath.Join("..", "fixtures", "lrps", name))
		Expect(err).NotTo(HaveOccurred())
		spec, err := droplet.Render(name, text, baseURL, sums)
		Expect(err).NotTo(HaveOccurred())
		Expect(protojson.Unmarshal(spec, msg)).To(Succeed())
	}

	BeforeAll(func() {
		dir := GinkgoT().TempDir()
		var err error
		sums, err = droplet.BuildAll(ctx, "..", dir, []string{"v1", "v2"})
		Expect(err).NotTo(HaveOccurred())
		server = droplet.NewServer(dir)
		web := httptest.NewServer(server)
		DeferCleanup(web.Close)
		baseURL = web.URL

		b = startBoard(nil)
		b.cork("set-domain", "cork")
		startRep(b, "cell-z1", "z1", slots)
		startRep(b, "cell-z2", "z2", slots)
	})

	It("desires hello from its v1 droplet: every instance answers v1, one download per cell", func() {
		lrp := &models.DesiredLRP{}
		rendered("hello.json", lrp)
		lrp.Instances = instances
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		rows := steady(b, guid, instances, both...)
		expectVersion(rows, rows[0].GetDefinitionId(), "v1")
		Expect(server.Requests("hello-v1.tgz")).To(Equal(2), "one download per cell: %s", server)
	})

	It("rolls to the v2 droplet with every request served, downloading it once per cell", func() {
		r := startRouter(b, guid)
		Eventually(r.routable).Should(Equal(instances))
		def := &models.LRPDefinition{}
		rendered("hello-v2-definition.json", def)
		start := time.Now()
		_, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{Definition: def, UpdateIdentifier: "v2"})
		Expect(err).NotTo(HaveOccurred())
		waitForRollout(b, guid, 2*time.Minute, complete())
		rows := steady(b, guid, instances, both...)
		took := time.Since(start)
		Eventually(r.sent).Should(BeNumerically(">", 100))
		stats := r.stop()

		AddReportEntry("droplet rollout", fmt.Sprintf("%s; %d requests, %d failed, by version %v; downloads %s",
			took.Round(time.Millisecond), stats.Requests, len(stats.Failures), stats.Versions, server))
		expectServedThroughout(stats, instances)
		expectVersion(rows, "v2", "v2")
		Expect(stats.Versions).To(HaveKey("v1"))
		Expect(stats.Versions).To(HaveKey("v2"))
		Expect(server.Requests("hello-v2.tgz")).To(Equal(2), "one download per cell: %s", server)
		Expect(server.Requests("hello-v1.tgz")).To(Equal(2), "v1 was not fetched again")
	})
})
