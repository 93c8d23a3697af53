package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/internal/certs"
)

var _ = Describe("rep -config with tls", func() {
	var dir string

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		_, _, err := certs.WriteSet(dir, certs.SetOptions{Cells: []string{"cell-z1"}})
		Expect(err).NotTo(HaveOccurred())
	})

	path := func(name string) string { return filepath.Join(dir, name) }
	tlsConfig := func() map[string]any {
		return map[string]any{
			"cell_id":        "cell-z1",
			"zone":           "z1",
			"capacity":       map[string]any{"memory_mb": 1024, "disk_mb": 1024, "instances": 8},
			"board_url":      "https://127.0.0.1:1",
			"listen_address": "127.0.0.1:0",
			"data_dir":       GinkgoT().TempDir(),
			"tls":            map[string]any{"ca_cert": path("ca.crt"), "cert": path("cell-z1.crt"), "key": path("cell-z1.key")},
		}
	}
	start := func(cfg map[string]any) *gexec.Session {
		GinkgoHelper()
		raw, err := json.Marshal(cfg)
		Expect(err).NotTo(HaveOccurred())
		configPath := filepath.Join(GinkgoT().TempDir(), "rep.json")
		Expect(os.WriteFile(configPath, raw, 0o600)).To(Succeed())
		session, err := gexec.Start(exec.Command(repPath, "-config", configPath), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { session.Kill().Wait(time.Minute) })
		return session
	}

	DescribeTable("refuses TLS half-configured, or a URL in the clear beside it, with exit 2 naming the key",
		func(change func(map[string]any), want string) {
			cfg := tlsConfig()
			change(cfg)
			session := start(cfg)
			Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(2))
			Expect(string(session.Err.Contents())).To(HavePrefix("rep: config: " + want))
		},
		Entry("no ca_cert", func(c map[string]any) { delete(c["tls"].(map[string]any), "ca_cert") },
			"tls.ca_cert: required when tls is set: tls needs ca_cert, cert and key"),
		Entry("no cert", func(c map[string]any) { delete(c["tls"].(map[string]any), "cert") }, "tls.cert: required"),
		Entry("no key", func(c map[string]any) { delete(c["tls"].(map[string]any), "key") }, "tls.key: required"),
		Entry("a key that is not there", func(c map[string]any) { c["tls"].(map[string]any)["key"] = "/nonexistent/cell.key" }, "tls.key: "),
		Entry("an http board_url", func(c map[string]any) { c["board_url"] = "http://127.0.0.1:8889" },
			`board_url: "http://127.0.0.1:8889" must be https:// when tls is set`),
		Entry("an http rep_url", func(c map[string]any) { c["rep_url"] = "http://127.0.0.1:1800" },
			`rep_url: "http://127.0.0.1:1800" must be https:// as the rep serves HTTPS with tls`),
		Entry("an https board_url without tls", func(c map[string]any) { delete(c, "tls") },
			`tls: required for an https board_url ("https://127.0.0.1:1")`),
	)

	It("serves HTTPS, the instance endpoint on plain HTTP on loopback, calls the board over TLS, and exits 0 on SIGINT", func() {
		session := start(tlsConfig())
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`"rep_url":"https://127\.0\.0\.1:\d+"`))
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`rep\.server\.listening.*"url":"https://127\.0\.0\.1:\d+"`))
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`rep\.instance-server\.listening.*"url":"http://127\.0\.0\.1:\d+"`))
		Eventually(session.Out).WithTimeout(time.Minute).Should(gbytes.Say(`rep\.agent\.heartbeat-failed.*https://127\.0\.0\.1:1`))
		session.Interrupt()
		Eventually(session).WithTimeout(time.Minute).Should(gexec.Exit(0))
	})
})
