package deploy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
	"go.yaml.in/yaml/v3"

	"github.com/corkboard/corkboard/client"
)

const (
	rulesFile     = "prometheus/corkboard-rules.yml"
	rulesTestFile = "prometheus/corkboard-rules.test.yml"
	dashboardFile = "grafana/corkboard.json"
)

// promtool finds promtool, failing (never skipping) without it.
func promtool() string {
	GinkgoHelper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		Fail("promtool is missing: apt-get install prometheus (Debian's package has promtool)")
	}
	return path
}

type rule struct {
	Record      string            `yaml:"record"`
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func loadRules() []rule {
	GinkgoHelper()
	var file struct {
		Groups []struct {
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	raw, err := os.ReadFile(rulesFile)
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.Unmarshal(raw, &file)).To(Succeed())
	var rules []rule
	for _, g := range file.Groups {
		rules = append(rules, g.Rules...)
	}
	Expect(rules).NotTo(BeEmpty())
	return rules
}

type dashboard struct {
	SchemaVersion int `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Query      any    `json:"query"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Title      string          `json:"title"`
		Type       string          `json:"type"`
		Datasource json.RawMessage `json:"datasource"`
		Targets    []struct {
			Expr       string          `json:"expr"`
			Datasource json.RawMessage `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
}

func loadDashboard() dashboard {
	GinkgoHelper()
	raw, err := os.ReadFile(dashboardFile)
	Expect(err).NotTo(HaveOccurred())
	var d dashboard
	Expect(json.Unmarshal(raw, &d)).To(Succeed())
	return d
}

var (
	// quoted are PromQL strings (label values, regexes): never names.
	quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	// labelLists are where PromQL names labels: matchers, grouping and
	// matching lists, and label_values' label.
	labelLists = regexp.MustCompile(`\{[^}]*\}|\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)|,\s*[a-zA-Z_]\w*\s*\)`)
	// identifier is a PromQL name: metric, label, function or keyword.
	identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	// exported are the prefixes of names a board exports; any other
	// identifier is a function, label, keyword or Prometheus' own "up".
	exported = []string{"corkboard_", "go_", "process_"}
)

// metricNames are the names of exported series that expr reads, and the
// recording rules (names with a colon) it reads.
func metricNames(expr string) (metrics, records []string) {
	for _, name := range identifier.FindAllString(labelLists.ReplaceAllString(quoted.ReplaceAllString(expr, `""`), " "), -1) {
		switch {
		case strings.Contains(name, ":"):
			records = append(records, name)
		case slices.ContainsFunc(exported, func(p string) bool { return strings.HasPrefix(name, p) }):
			metrics = append(metrics, name)
		}
	}
	return metrics, records
}

var _ = Describe("The Prometheus rules", func() {
	It("pass promtool check rules", func() {
		out, err := exec.Command(promtool(), "check", "rules", rulesFile).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	})

	It("pass their promtool unit tests", func() {
		cmd := exec.Command(promtool(), "test", "rules", filepath.Base(rulesTestFile))
		cmd.Dir = filepath.Dir(rulesTestFile)
		out, err := cmd.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
	})

	It("give every alert a for, a severity, a summary and a description", func() {
		for _, r := range loadRules() {
			if r.Alert == "" {
				continue
			}
			Expect(r.For).NotTo(BeEmpty(), r.Alert)
			Expect(r.Labels["severity"]).To(BeElementOf("critical", "warning"), r.Alert)
			Expect(r.Annotations["summary"]).NotTo(BeEmpty(), r.Alert)
			Expect(r.Annotations["description"]).NotTo(BeEmpty(), r.Alert)
		}
	})

	It("are unit-tested firing and not firing, every alert and every recording rule", func() {
		var tests struct {
			Tests []struct {
				Alerts []struct {
					Name   string `yaml:"alertname"`
					Expect []any  `yaml:"exp_alerts"`
				} `yaml:"alert_rule_test"`
				Exprs []struct {
					Expr string `yaml:"expr"`
				} `yaml:"promql_expr_test"`
			} `yaml:"tests"`
		}
		raw, err := os.ReadFile(rulesTestFile)
		Expect(err).NotTo(HaveOccurred())
		Expect(yaml.Unmarshal(raw, &tests)).To(Succeed())
		firing, quiet, evaluated := map[string]bool{}, map[string]bool{}, map[string]bool{}
		for _, t := range tests.Tests {
			for _, a := range t.Alerts {
				if len(a.Expect) > 0 {
					firing[a.Name] = true
				} else {
					quiet[a.Name] = true
				}
			}
			for _, e := range t.Exprs {
				evaluated[strings.TrimSpace(e.Expr)] = true
			}
		}
		for _, r := range loadRules() {
			if r.Alert != "" {
				Expect(firing).To(HaveKey(r.Alert), "a test where it fires")
				Expect(quiet).To(HaveKey(r.Alert), "a test where it does not")
				continue
			}
			Expect(evaluated).To(HaveKey(r.Record), "a promql_expr_test of the recording rule")
		}
	})
})

var _ = Describe("The Grafana dashboard", func() {
	It("is dashboard JSON with a schema version and a Prometheus datasource variable every panel uses", func() {
		d := loadDashboard()
		Expect(d.SchemaVersion).To(BeNumerically(">", 0))
		var datasource bool
		for _, v := range d.Templating.List {
			if v.Name == "datasource" {
				Expect(v.Type).To(Equal("datasource"))
				Expect(v.Query).To(Equal("prometheus"))
				datasource = true
			}
		}
		Expect(datasource).To(BeTrue(), "a datasource variable")
		for _, p := range d.Panels {
			if p.Type == "row" {
				continue
			}
			Expect(string(p.Datasource)).To(ContainSubstring(`"${datasource}"`), p.Title)
			Expect(p.Targets).NotTo(BeEmpty(), p.Title)
			for _, t := range p.Targets {
				Expect(t.Expr).NotTo(BeEmpty(), p.Title)
				Expect(string(t.Datasource)).To(ContainSubstring(`"${datasource}"`), p.Title)
			}
		}
	})
})

// eventual are the series a board exports only after something happened
// that a board just started has not seen; each must still be named in the
// board's code (checked below), so a typo here fails.
var eventual = map[string]string{
	// signals/collector.go: per definition, once the board has seen one
	// of its instances' events.
	"corkboard_definition_crashes":                    "signals/collector.go",
	"corkboard_definition_time_to_ready_seconds":      "signals/collector.go",
	"corkboard_definition_health_checks":              "signals/collector.go",
	"corkboard_definition_health_check_failures":      "signals/collector.go",
	"corkboard_definition_health_latency_p99_seconds": "signals/collector.go",
	"corkboard_definition_memory_p99_bytes":           "signals/collector.go",
	"corkboard_definition_signal_window_seconds":      "signals/collector.go",
	// convergence/runner/metrics.go: per autoscaled LRP, once a pass
	// covered one.
	"corkboard_autoscaler_occupied_instances": "convergence/runner/metrics.go",
	"corkboard_autoscaler_wanted_instances":   "convergence/runner/metrics.go",
	"corkboard_autoscaler_current_instances":  "convergence/runner/metrics.go",
	"corkboard_autoscaler_max_instances":      "convergence/runner/metrics.go",
	// handlers/metrics.go: by route or limit, once a request was refused.
	"corkboard_http_unauthorized_total":     "handlers/metrics.go",
	"corkboard_http_limit_rejections_total": "handlers/metrics.go",
}

var _ = Describe("The metric names of the rules and the dashboard", func() {
	It("are all on a real board's /metrics", func() {
		bbs, err := gexec.Build("github.com/corkboard/corkboard/cmd/bbs")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
		session, err := gexec.Start(exec.Command(bbs, "-dev", "-data-dir", GinkgoT().TempDir(), "-listen", "127.0.0.1:0"), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			session.Signal(syscall.SIGTERM)
			Eventually(session).WithTimeout(10 * time.Second).Should(gexec.Exit(0))
		})
		Eventually(session.Out).WithTimeout(20 * time.Second).Should(gbytes.Say(`bbs\.api-server\.listening`))
		match := regexp.MustCompile(`"message":"bbs\.api-server\.listening".*"url":"(http://[^"]+)"`).FindSubmatch(session.Out.Contents())
		Expect(match).NotTo(BeNil())
		url := string(match[1])
		// A request puts the API's series up; the first full pass on
		// taking the lease puts up the counts.
		_, err = client.New(url).Ping(context.Background())
		Expect(err).NotTo(HaveOccurred())
		var exported map[string]bool
		Eventually(func() map[string]bool {
			exported = scrape(url)
			return exported
		}).WithTimeout(20 * time.Second).Should(And(HaveKey("corkboard_lrps_desired"), HaveKey("corkboard_http_requests_total")))

		used := map[string]string{}
		records := map[string]bool{}
		for _, r := range loadRules() {
			if r.Record != "" {
				records[r.Record] = true
			}
		}
		note := func(where, expr string) {
			metrics, recs := metricNames(expr)
			for _, m := range metrics {
				used[m] = where
			}
			for _, r := range recs {
				Expect(records).To(HaveKey(r), "%s reads a recording rule the rules do not define", where)
			}
		}
		for _, r := range loadRules() {
			note(rulesFile+" "+r.Alert+r.Record, r.Expr)
		}
		d := loadDashboard()
		for _, p := range d.Panels {
			for _, t := range p.Targets {
				note(dashboardFile+" "+p.Title, t.Expr)
			}
		}
		for _, v := range d.Templating.List {
			note(dashboardFile+" variable "+v.Name, v.Definition)
		}
		Expect(used).To(HaveKey("corkboard_convergence_lease_held"), "names are found at all")

		names := make([]string, 0, len(used))
		for name := range used {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if file, ok := eventual[name]; ok {
				source, err := os.ReadFile(filepath.Join("..", file))
				Expect(err).NotTo(HaveOccurred())
				Expect(string(source)).To(ContainSubstring(`"`+name+`"`), "allowed to be missing from a fresh board, so its code must name it")
				continue
			}
			Expect(exported).To(HaveKey(name), "%s reads %s, which the board does not export", used[name], name)
		}
	})
})

// scrape reads the board's /metrics and returns the series names it
// exports: each family's name, and a histogram's _bucket, _sum and _count.
func scrape(url string) map[string]bool {
	GinkgoHelper()
	resp, err := http.Get(url + "/metrics")
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	names := map[string]bool{}
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) != 4 || fields[0] != "#" || fields[1] != "TYPE" {
			continue
		}
		names[fields[2]] = true
		switch fields[3] {
		case "histogram", "summary":
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				names[fields[2]+suffix] = true
			}
		}
	}
	Expect(lines.Err()).NotTo(HaveOccurred())
	return names
}
