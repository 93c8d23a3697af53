package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/models"
)

// prometheusPath is Debian's prometheus package's server. The spec installs
// nothing: .ci/run installs the package when it is missing.
const prometheusPath = "/usr/bin/prometheus"

// A real Prometheus that finds the hello app's instances through the
// board's GET /prometheus/targets (http_sd_configs) and scrapes their
// /metrics.
var _ = Describe("Prometheus scraping the instances the board lists", Label("prometheus"), Ordered, func() {
	const guid = "hello-prom"
	var (
		b    *board
		prom *prometheusServer
		rows []*models.ActualLRP
	)
	ctx := context.Background()
	both := []string{"cell-z1", "cell-z2"}

	BeforeAll(func() {
		if _, err := os.Stat(prometheusPath); err != nil {
			Fail(fmt.Sprintf("this spec needs a Prometheus server at %s (%v): apt-get install prometheus", prometheusPath, err))
		}
		b = startBoard(nil)
		b.cork("set-domain", "cork")
		startRep(b, "cell-z1", "z1")
		startRep(b, "cell-z2", "z2")
		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.ProcessGuid = guid
		lrp.Instances = 3
		_, err := b.client().DesireLRP(ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		rows = steady(b, guid, 3, both...)
		prom = startPrometheus(b.url+models.PrometheusTargetsPath, "")
	})

	It("scrapes every instance, labelled with its index, definition, cell and zone", func() {
		zones := map[string]string{"cell-z1": "z1", "cell-z2": "z2"}
		want := map[string]map[string]string{}
		for _, row := range rows {
			want[strconv.Itoa(int(row.GetIndex()))] = map[string]string{
				"definition_id": row.GetDefinitionId(), "cell": row.GetCellId(), "zone": zones[row.GetCellId()], "domain": "cork", "baseline": "false",
			}
		}
		started := time.Now()
		Eventually(func(g Gomega) {
			series := prom.query(g, `up{process_guid="`+guid+`"}`)
			g.Expect(series).To(HaveLen(3))
			got := map[string]map[string]string{}
			for _, s := range series {
				g.Expect(s.value()).To(Equal("1"), "up of %v", s.Metric)
				got[s.Metric["index"]] = map[string]string{
					"definition_id": s.Metric["definition_id"], "cell": s.Metric["cell"], "zone": s.Metric["zone"], "domain": s.Metric["domain"], "baseline": s.Metric["baseline"],
				}
			}
			g.Expect(got).To(Equal(want))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		AddReportEntry("prometheus: every instance up", time.Since(started).Round(time.Millisecond).String())
	})

	It("reads the app's own metrics: hello_requests_total counts the requests made", func() {
		const perInstance = 5
		for _, row := range rows {
			for range perInstance {
				Expect(answers(row)).To(BeTrue())
			}
		}
		Eventually(func(g Gomega) {
			series := prom.query(g, `sum(hello_requests_total{process_guid="`+guid+`", code="200"})`)
			g.Expect(series).To(HaveLen(1))
			count, err := strconv.ParseFloat(series[0].value(), 64)
			g.Expect(err).NotTo(HaveOccurred())
			// steady's own requests count too.
			g.Expect(count).To(BeNumerically(">=", perInstance*len(rows)))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		series := prom.query(Default, `hello_request_duration_seconds_count{process_guid="`+guid+`"}`)
		Expect(series).To(HaveLen(3), "one histogram per instance")
	})

	It("lists fewer targets once the LRP scales down", func() {
		one := int32(1)
		_, err := b.client().UpdateDesiredLRP(ctx, guid, &models.DesiredLRPUpdate{Instances: &one})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			resp, err := httpClient.Get(b.url + models.PrometheusTargetsPath)
			g.Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
			var groups []models.PrometheusTargetGroup
			g.Expect(json.NewDecoder(resp.Body).Decode(&groups)).To(Succeed())
			g.Expect(groups).To(HaveLen(1))
			g.Expect(groups[0].Labels).To(HaveKeyWithValue("process_guid", guid))
			g.Expect(groups[0].Labels).To(HaveKeyWithValue("index", "0"))
		}).Should(Succeed())
		// Prometheus follows: one target left for the LRP.
		Eventually(func(g Gomega) {
			g.Expect(prom.activeTargets(g, guid)).To(Equal(1))
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})
})

// The same over mutual TLS: Prometheus reads the targets with an
// api-client certificate, as docs/prometheus.md shows, and a cell's
// certificate is refused by the board binary.
var _ = Describe("Prometheus reading the targets of a board with mutual TLS", Label("prometheus"), func() {
	It("reads them with an api-client certificate; a cell's certificate gets a 403", func() {
		if _, err := os.Stat(prometheusPath); err != nil {
			Fail(fmt.Sprintf("this spec needs a Prometheus server at %s (%v): apt-get install prometheus", prometheusPath, err))
		}
		const guid = "hello-prom-tls"
		cluster := newTLSCluster()
		b := cluster.startBoard()
		b.cork("set-domain", "cork")
		cluster.startRep(b, "cell-z1", "z1")
		lrp := &models.DesiredLRP{}
		readFixture("hello-local.json", lrp)
		lrp.ProcessGuid = guid
		lrp.Instances = 1
		_, err := b.client().DesireLRP(context.Background(), lrp)
		Expect(err).NotTo(HaveOccurred())
		rows := steady(b, guid, 1, "cell-z1")

		resp, err := cluster.httpClient("cell-z1").Get(b.url + models.PrometheusTargetsPath)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusForbidden))

		prom := startPrometheus(b.url+models.PrometheusTargetsPath, cluster.dir)
		Eventually(func(g Gomega) {
			series := prom.query(g, `up{process_guid="`+guid+`"}`)
			g.Expect(series).To(HaveLen(1))
			g.Expect(series[0].value()).To(Equal("1"))
			g.Expect(series[0].Metric).To(HaveKeyWithValue("cell", "cell-z1"))
			g.Expect(series[0].Metric).To(HaveKeyWithValue("definition_id", rows[0].GetDefinitionId()))
		}).WithTimeout(20 * time.Second).Should(Succeed())
	})
})

// prometheusServer is a private Prometheus on a loopback port.
type prometheusServer struct {
	url     string
	session *gexec.Session
}

// startPrometheus runs Prometheus with its data in a temp dir, scraping
// every second the targets sdURL lists (refreshed every second), and
// waits until it is ready. With certDir, it reads the targets with the
// api-client certificate there (client.crt, as corkboard-certs names
// it). It is stopped when the spec's container ends.
func startPrometheus(sdURL, certDir string) *prometheusServer {
	GinkgoHelper()
	return startPrometheusAt("127.0.0.1:"+strconv.Itoa(freePort()), sdURL, certDir)
}

// startPrometheusAt is startPrometheus listening on address (host:port),
// for a board started before it that must know where to query it.
func startPrometheusAt(address, sdURL, certDir string) *prometheusServer {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: corkboard
    http_sd_configs:
      - url: %q
        refresh_interval: 1s
`, sdURL)
	if certDir != "" {
		config += fmt.Sprintf(`        tls_config:
          ca_file: %q
          cert_file: %q
          key_file: %q
`, filepath.Join(certDir, "ca.crt"), filepath.Join(certDir, "client.crt"), filepath.Join(certDir, "client.key"))
	}
	configPath := filepath.Join(dir, "prometheus.yml")
	Expect(os.WriteFile(configPath, []byte(config), 0o600)).To(Succeed())
	cmd := exec.Command(prometheusPath,
		"--config.file="+configPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+address,
	)
	session, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { stopProcess(session, syscall.SIGTERM) })
	p := &prometheusServer{url: "http://" + address, session: session}
	Eventually(func() int {
		resp, err := httpClient.Get(p.url + "/-/ready")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}).WithTimeout(30 * time.Second).Should(Equal(http.StatusOK))
	return p
}

// promSeries is one series of a query's answer.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
}

// value is the sample's value as Prometheus writes it ("1", "0.5").
func (s promSeries) value() string {
	if len(s.Value) != 2 {
		return ""
	}
	v, _ := s.Value[1].(string)
	return v
}

// query runs an instant query through the HTTP API.
func (p *prometheusServer) query(g Gomega, promQL string) []promSeries {
	resp, err := httpClient.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(promQL))
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string       `json:"resultType"`
			Result     []promSeries `json:"result"`
		} `json:"data"`
	}
	g.Expect(json.NewDecoder(resp.Body).Decode(&answer)).To(Succeed())
	g.Expect(answer.Status).To(Equal("success"), "query %s: %s", promQL, answer.Error)
	g.Expect(answer.Data.ResultType).To(Equal("vector"))
	return answer.Data.Result
}

// activeTargets counts the targets Prometheus scrapes for guid now.
func (p *prometheusServer) activeTargets(g Gomega, guid string) int {
	resp, err := httpClient.Get(p.url + "/api/v1/targets?state=active")
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var answer struct {
		Data struct {
			ActiveTargets []struct {
				Labels map[string]string `json:"labels"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	g.Expect(json.NewDecoder(resp.Body).Decode(&answer)).To(Succeed())
	n := 0
	for _, t := range answer.Data.ActiveTargets {
		if t.Labels["process_guid"] == guid {
			n++
		}
	}
	return n
}
