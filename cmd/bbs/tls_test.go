package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/internal/certs"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("tls", func() {
	var dir string

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		_, _, err := certs.WriteSet(dir, certs.SetOptions{})
		Expect(err).NotTo(HaveOccurred())
	})

	path := func(name string) string { return filepath.Join(dir, name) }
	files := func(name string) certs.Files {
		return certs.Files{CACert: path("ca.crt"), Cert: path(name + ".crt"), Key: path(name + ".key")}
	}
	writeConfig := func(cfg map[string]any) string {
		GinkgoHelper()
		raw, err := json.Marshal(cfg)
		Expect(err).NotTo(HaveOccurred())
		configPath := filepath.Join(GinkgoT().TempDir(), "bbs.json")
		Expect(os.WriteFile(configPath, raw, 0o600)).To(Succeed())
		return configPath
	}
	tlsSection := func() map[string]any {
		return map[string]any{"ca_cert": path("ca.crt"), "cert": path("board.crt"), "key": path("board.key")}
	}

	It("reads the tls section", func() {
		cfg, err := buildConfig(writeConfig(map[string]any{"listen_address": "127.0.0.1:0", "data_dir": dir, "tls": tlsSection()}), false, "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(*cfg.TLS).To(Equal(files("board")))
	})

	DescribeTable("refuses to start with TLS half-configured, naming the key",
		func(change func(map[string]any), key string) {
			section := tlsSection()
			change(section)
			_, err := buildConfig(writeConfig(map[string]any{"listen_address": "127.0.0.1:0", "data_dir": dir, "tls": section}), false, "", "")
			Expect(err).To(MatchError(HavePrefix("config: " + key + ": ")))
		},
		Entry("no ca_cert", func(s map[string]any) { delete(s, "ca_cert") }, "tls.ca_cert"),
		Entry("no cert", func(s map[string]any) { delete(s, "cert") }, "tls.cert"),
		Entry("no key", func(s map[string]any) { delete(s, "key") }, "tls.key"),
		Entry("an empty section", func(s map[string]any) { clear(s) }, "tls.ca_cert"),
		Entry("a CA file that is not there", func(s map[string]any) { s["ca_cert"] = "/nonexistent/ca.crt" }, "tls.ca_cert"),
		Entry("a key file that is not there", func(s map[string]any) { s["key"] = "/nonexistent/board.key" }, "tls.key"),
		Entry("the key of another certificate", func(s map[string]any) { s["key"] = path("operator.key") }, "tls.cert"),
	)

	It("refuses an unknown key in the section", func() {
		section := tlsSection()
		section["client_ca"] = path("ca.crt")
		_, err := buildConfig(writeConfig(map[string]any{"listen_address": "127.0.0.1:0", "data_dir": dir, "tls": section}), false, "", "")
		Expect(err).To(MatchError(ContainSubstring(`unknown field "tls.client_ca"`)))
	})

	It("serves the API and /metrics over HTTPS to callers with a certificate of the CA, /metrics only to API clients and operators, and nothing to others", func() {
		board := startBoard("-config", writeConfig(map[string]any{"listen_address": "127.0.0.1:0", "data_dir": dir, "tls": tlsSection()}))
		Expect(board.url).To(HavePrefix("https://127.0.0.1:"))
		Expect(string(board.session.Out.Contents())).To(ContainSubstring(`"message":"bbs.tls"`))
		Expect(string(board.session.Out.Contents())).NotTo(ContainSubstring(`plain-http`))

		operatorTLS, err := files("operator").ClientConfig()
		Expect(err).NotTo(HaveOccurred())
		api := client.New(board.url, client.WithTLSConfig(operatorTLS))
		available, err := api.Ping(context.Background())
		Expect(err).NotTo(HaveOccurred())
		Expect(available).To(BeTrue())

		httpsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: operatorTLS}}
		resp, err := httpsClient.Get(board.url + "/metrics")
		Expect(err).NotTo(HaveOccurred())
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(ContainSubstring("corkboard_http_requests_total"))

		// A certificate of the CA whose role may not read the metrics
		// (the board's own) gets a 403 naming it, and no series.
		boardTLS, err := files("board").ClientConfig()
		Expect(err).NotTo(HaveOccurred())
		resp, err = (&http.Client{Transport: &http.Transport{TLSClientConfig: boardTLS}}).Get(board.url + "/metrics")
		Expect(err).NotTo(HaveOccurred())
		raw, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
		Expect(string(raw)).To(ContainSubstring("a board certificate may not call /metrics"))
		Expect(string(raw)).NotTo(ContainSubstring("corkboard_http_requests_total"))

		// No certificate: no handshake, so no request reaches the API.
		pool, err := certs.LoadPool(path("ca.crt"))
		Expect(err).NotTo(HaveOccurred())
		anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		_, err = anonymous.Post(board.url+models.RoutePing, "application/json", strings.NewReader(`{}`))
		Expect(err).To(MatchError(ContainSubstring("certificate required")))
		Eventually(board.session.Out).Should(gbytes.Say(`bbs\.api-server\.http-server-error.*TLS handshake error`))

		// Plain HTTP on the TLS port gets a 400 and nothing else.
		resp, err = http.Post(strings.Replace(board.url, "https://", "http://", 1)+models.RoutePing, "application/json", strings.NewReader(`{}`))
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))

		board.stop(syscall.SIGTERM)
	})

	It("says it serves plain HTTP when a config has no tls", func() {
		board := startBoard("-config", writeConfig(map[string]any{"listen_address": "127.0.0.1:0", "data_dir": dir}))
		Expect(board.url).To(HavePrefix("http://127.0.0.1:"))
		Expect(string(board.session.Out.Contents())).To(ContainSubstring(`"message":"bbs.plain-http"`))
		board.stop(syscall.SIGTERM)
	})
})
