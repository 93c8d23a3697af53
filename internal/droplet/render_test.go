package droplet_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/internal/droplet"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Render", func() {
	sums := map[string]string{
		"hello-v1.tgz": strings.Repeat("a", 64),
		"hello-v2.tgz": strings.Repeat("b", 64),
	}

	It("fills in the URL and checksum of each named droplet", func() {
		out, err := droplet.Render("t.json",
			[]byte(`{"url": "{{asset_url "hello-v2.tgz"}}", "sha256": "{{asset_sha256 "hello-v2.tgz"}}"}`),
			"http://127.0.0.1:8890/", sums)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(Equal(`{"url": "http://127.0.0.1:8890/hello-v2.tgz", "sha256": "` + strings.Repeat("b", 64) + `"}`))
	})

	It("makes file URLs from a file base URL", func() {
		out, err := droplet.Render("t", []byte(`{{asset_url "hello-v1.tgz"}}`), "file:///srv/droplets", sums)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(Equal("file:///srv/droplets/hello-v1.tgz"))
		out, err = droplet.Render("t", []byte(`{{asset_url "hello-v1.tgz"}}`), "file:///", sums)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(Equal("file:///hello-v1.tgz"))
	})

	It("passes a file without placeholders through unchanged", func() {
		text := []byte("{\n  \"action\": {\"path\": \"./hello\"}\n}\n")
		out, err := droplet.Render("t", text, "http://h", sums)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(text))
	})

	It("fails on a droplet that was not built, naming those that were", func() {
		_, err := droplet.Render("hello.json", []byte(`{{asset_sha256 "hello-v7.tgz"}}`), "http://h", sums)
		Expect(err).To(MatchError(And(
			ContainSubstring("hello.json"),
			ContainSubstring(`no droplet "hello-v7.tgz"`),
			ContainSubstring("hello-v1.tgz, hello-v2.tgz"))))
	})

	It("refuses base URLs that are not http, https or absolute file URLs", func() {
		for _, bad := range []string{"", "ftp://h/x", "file://rel", "http://", `http://h/"x`, "http://h/a b"} {
			_, err := droplet.Render("t", []byte("x"), bad, sums)
			Expect(err).To(HaveOccurred(), "base URL %q", bad)
		}
	})
})

var _ = Describe("the droplet specs of fixtures/lrps", func() {
	var (
		out      string
		rendered []string
	)

	BeforeEach(func() {
		dir := GinkgoT().TempDir()
		// The specs name v1, v2 and v3; their sums need not come from real
		// builds here (v2 does, for the look of it).
		sums := map[string]string{
			"hello-v1.tgz": strings.Repeat("1", 64),
			"hello-v2.tgz": droplet.SHA256(v2),
			"hello-v3.tgz": strings.Repeat("3", 64),
		}
		out = filepath.Join(dir, "lrps")
		var err error
		rendered, err = droplet.RenderDir(filepath.Join(moduleRoot, "fixtures", "lrps"), out, "http://127.0.0.1:8890", sums)
		Expect(err).NotTo(HaveOccurred())
	})

	decode := func(name string, msg proto.Message) {
		GinkgoHelper()
		raw, err := os.ReadFile(filepath.Join(out, name))
		Expect(err).NotTo(HaveOccurred())
		Expect(protojson.Unmarshal(raw, msg)).To(Succeed(), "%s:\n%s", name, raw)
	}

	It("renders every spec, the droplet ones into valid requests", func() {
		Expect(rendered).To(ContainElements("hello.json", "hello-v2-definition.json", "hello-v3-definition.json",
			"hello-port-9090-definition.json", "hello-port-9090-routes.json", "hello-local.json", "minimal.json"))

		lrp := &models.DesiredLRP{}
		decode("hello.json", lrp)
		Expect((&models.DesireLRPRequest{DesiredLrp: lrp}).Validate()).To(Succeed())
		def := lrp.GetDefinition()
		Expect(def.GetAssets()).To(HaveLen(1))
		Expect(def.GetAssets()[0].GetUrl()).To(Equal("http://127.0.0.1:8890/hello-v1.tgz"))
		Expect(def.GetAssets()[0].GetSha256()).To(Equal(strings.Repeat("1", 64)))
		Expect(def.GetAssets()[0].GetDestination()).To(Equal("."))
		Expect(def.GetAction().GetPath()).To(Equal("./hello"))
		Expect(def.GetAction().GetEnv()).To(BeEmpty(), "the droplet's built-in version answers")

		for version, name := range map[string]string{"v2": "hello-v2-definition.json", "v3": "hello-v3-definition.json"} {
			d := &models.LRPDefinition{}
			decode(name, d)
			Expect((&models.UpdateDesiredLRPRequest{ProcessGuid: "hello", Update: &models.DesiredLRPUpdate{
				Definition: d, UpdateIdentifier: version,
			}}).Validate()).To(Succeed(), name)
			Expect(d.GetAssets()[0].GetUrl()).To(Equal("http://127.0.0.1:8890/hello-" + version + ".tgz"))
			Expect(d.GetPorts()).To(Equal([]uint32{8080}))
		}
		Expect(filepath.Join(out, "hello-v2-definition.json")).To(BeAnExistingFile())
	})

	It("renders a port move: a 9090 definition with the routes that go with it", func() {
		d := &models.LRPDefinition{}
		decode("hello-port-9090-definition.json", d)
		Expect(d.GetPorts()).To(Equal([]uint32{9090}))
		Expect(d.GetHealthCheck().GetPort()).To(Equal(uint32(9090)))
		Expect(d.GetAssets()[0].GetSha256()).To(Equal(droplet.SHA256(v2)))

		routes := &structpb.Struct{}
		decode("hello-port-9090-routes.json", routes)
		Expect((&models.UpdateDesiredLRPRequest{ProcessGuid: "hello", Update: &models.DesiredLRPUpdate{
			Definition: d, UpdateIdentifier: "port-9090", Routes: routes,
		}}).Validate()).To(Succeed())
	})

	It("renders the local specs unchanged", func() {
		for _, name := range []string{"hello-local.json", "hello-local-v2-definition.json", "minimal.json"} {
			want, err := os.ReadFile(filepath.Join(moduleRoot, "fixtures", "lrps", name))
			Expect(err).NotTo(HaveOccurred())
			Expect(os.ReadFile(filepath.Join(out, name))).To(Equal(want))
		}
	})
})

var _ = Describe("BuildAll", func() {
	It("writes hello-<version>.tgz for each version and returns their checksums", func() {
		out := filepath.Join(GinkgoT().TempDir(), "droplets")
		sums, err := droplet.BuildAll(context.Background(), moduleRoot, out, []string{"v2"})
		Expect(err).NotTo(HaveOccurred())
		Expect(sums).To(Equal(map[string]string{"hello-v2.tgz": droplet.SHA256(v2)}))
		Expect(os.ReadFile(filepath.Join(out, "hello-v2.tgz"))).To(Equal(v2))
		entries, err := os.ReadDir(out)
		Expect(err).NotTo(HaveOccurred())
		Expect(entries).To(HaveLen(1), "no temporary files left behind")
	})
})
