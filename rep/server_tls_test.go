package rep_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/internal/certs"
	"github.com/corkboard/corkboard/models"
	"github.com/corkboard/corkboard/rep"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

// The rep's API with TLS: who may call what, by the identity in the
// client certificate, and the instance endpoint apart on plain HTTP.
var _ = Describe("the rep's HTTP server with TLS", func() {
	var (
		dir       string
		apiURL    string
		localURL  string
		endpoint  *rep.InstanceEndpoint
		callAs    func(name, method, path, body string) (int, string)
		plainCall func(url, method, path, body string) (int, string)
	)

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		_, _, err := certs.WriteSet(dir, certs.SetOptions{Cells: []string{"cell-a", "cell-b"}})
		Expect(err).NotTo(HaveOccurred())
		files := func(name string) certs.Files {
			return certs.Files{CACert: filepath.Join(dir, "ca.crt"), Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key")}
		}

		exe := reptest.StartExecutor(newConfig())
		board := "https://127.0.0.1:1"
		agent, err := rep.NewAgent(rep.AgentConfig{
			Cell:       &models.Cell{CellId: "cell-a"},
			Board:      client.New(board),
			CellClient: client.NewCellClient(board, "cell-a"),
			Executor:   exe,
		})
		Expect(err).NotTo(HaveOccurred())
		logger := lagertest.NewTestLogger("rep")

		serverConfig, err := files("cell-a").ServerConfig()
		Expect(err).NotTo(HaveOccurred())
		api := httptest.NewUnstartedServer(rep.NewTLSServer(logger, agent, exe))
		api.TLS = serverConfig
		api.StartTLS()
		DeferCleanup(api.Close)
		apiURL = api.URL

		endpoint = rep.NewInstanceEndpoint("", []byte("0123456789abcdef0123456789abcdef"))
		local := httptest.NewServer(rep.NewInstanceServer(logger, agent, endpoint))
		DeferCleanup(local.Close)
		localURL = local.URL

		do := func(httpClient *http.Client, url, method, path, body string) (int, string) {
			GinkgoHelper()
			req, err := http.NewRequest(method, url+path, strings.NewReader(body))
			Expect(err).NotTo(HaveOccurred())
			resp, err := httpClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			answer, err := io.ReadAll(resp.Body)
			Expect(err).NotTo(HaveOccurred())
			return resp.StatusCode, string(answer)
		}
		callAs = func(name, method, path, body string) (int, string) {
			GinkgoHelper()
			config, err := files(name).ClientConfig()
			Expect(err).NotTo(HaveOccurred())
			return do(&http.Client{Transport: &http.Transport{TLSClientConfig: config}}, apiURL, method, path, body)
		}
		plainCall = func(url, method, path, body string) (int, string) {
			GinkgoHelper()
			return do(http.DefaultClient, url, method, path, body)
		}
	})

	It("lets operators and API clients read, and not the board, which has no use for an instance's log", func() {
		for _, name := range []string{"operator", "client"} {
			code, body := callAs(name, http.MethodGet, "/v1/instances", "")
			Expect(code).To(Equal(http.StatusOK), name)
			Expect(strings.TrimSpace(body)).To(Equal("[]"))
			code, _ = callAs(name, http.MethodGet, "/v1/logs?instance_guid=ig-none", "")
			Expect(code).To(Equal(http.StatusNotFound), name)
		}
		for _, path := range []string{"/v1/instances", "/v1/logs?instance_guid=ig-none"} {
			code, body := callAs("board", http.MethodGet, path, "")
			Expect(code).To(Equal(http.StatusForbidden), path)
			Expect(body).To(ContainSubstring("forbidden: a board certificate may not GET"))
		}
	})

	It("lets the board and operators drain, and refuses API clients", func() {
		code, body := callAs("client", http.MethodPost, "/v1/drain", "")
		Expect(code).To(Equal(http.StatusForbidden))
		Expect(body).To(ContainSubstring("forbidden: an api-client certificate may not POST /v1/drain on this rep; board, operator may"))
		code, _ = callAs("operator", http.MethodPost, "/v1/drain", "")
		Expect(code).To(Equal(http.StatusAccepted))
		code, _ = callAs("board", http.MethodPost, "/v1/drain", "")
		Expect(code).To(Equal(http.StatusAccepted))
	})

	It("refuses every cell, its own and others", func() {
		for _, name := range []string{"cell-a", "cell-b"} {
			code, body := callAs(name, http.MethodGet, "/v1/instances", "")
			Expect(code).To(Equal(http.StatusForbidden), name)
			Expect(body).To(ContainSubstring(`cell "` + name + `" may not GET /v1/instances`))
			code, _ = callAs(name, http.MethodPost, "/v1/drain", "")
			Expect(code).To(Equal(http.StatusForbidden), name)
		}
	})

	It("refuses a caller without a certificate before any route", func() {
		pool, err := certs.LoadPool(filepath.Join(dir, "ca.crt"))
		Expect(err).NotTo(HaveOccurred())
		anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		_, err = anonymous.Get(apiURL + "/v1/instances")
		Expect(err).To(MatchError(ContainSubstring("certificate required")))
	})

	It("serves the instance endpoint on its own plain listener, and only there", func() {
		code, body := plainCall(localURL, http.MethodPost, endpoint.URL("ig-9")+"/occupancy", `{"occupied":true}`)
		Expect(code).To(Equal(http.StatusNotFound))
		Expect(body).To(ContainSubstring("instance ig-9 does not run on this cell"))
		for _, route := range [][2]string{{http.MethodGet, "/v1/instances"}, {http.MethodGet, "/v1/logs?instance_guid=x"}, {http.MethodPost, "/v1/drain"}} {
			code, _ := plainCall(localURL, route[0], route[1], "")
			Expect(code).To(Equal(http.StatusNotFound), route[1])
		}

		// The TLS listener has no such route: not even looked up.
		code, body = callAs("operator", http.MethodPost, endpoint.URL("ig-9")+"/occupancy", `{"occupied":true}`)
		Expect(code).To(Equal(http.StatusNotFound))
		Expect(body).NotTo(ContainSubstring("does not run"))
	})
})
