package analysis_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/analysis"
	"github.com/corkboard/corkboard/models"
)

// figures answers signals per definition, as a board's collector would.
// figures are the signals of the LRP hello's definitions, by definition
// id: another LRP's definitions have none.
type figures map[string]*models.DefinitionSignals

func (f figures) Figures(processGuid, definitionID string, _ int) *models.DefinitionSignals {
	if processGuid != "hello" {
		return nil
	}
	return f[definitionID]
}

var at = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func subject() analysis.Subject {
	return analysis.Subject{
		ProcessGuid: "hello", DefinitionID: "v2", Instances: 4, BaselineDefinitionID: "v1", BaselineInstances: 4,
		During: models.AnalysisDuringRolling,
		Status: &models.RolloutStatus{ProcessGuid: "hello", State: models.RolloutStatus_PROGRESSING, ActiveDefinitionId: "v2"},
	}
}

func judge(a *analysis.Analyst, checks ...*models.AnalysisCheck) *models.AnalysisVerdict {
	return a.Judge(context.Background(), &models.RolloutAnalysis{Checks: checks}, subject())
}

// prometheus answers instant queries from answers by query text and
// records the queries it was sent.
type prometheus struct {
	mu      sync.Mutex
	answers map[string]string
	queries []string
}

func (p *prometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer GinkgoRecover()
	Expect(r.URL.Path).To(Equal("/api/v1/query"))
	q := r.URL.Query().Get("query")
	p.mu.Lock()
	p.queries = append(p.queries, q)
	answer, ok := p.answers[q]
	p.mu.Unlock()
	if !ok {
		answer = `{"status":"success","data":{"resultType":"vector","result":[]}}`
	}
	fmt.Fprint(w, answer)
}

func vector(values ...string) string {
	result := make([]map[string]any, len(values))
	for i, v := range values {
		result[i] = map[string]any{"metric": map[string]string{"i": fmt.Sprint(i)}, "value": []any{1.7e9, v}}
	}
	raw, _ := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": result}})
	return string(raw)
}

var _ = Describe("Analyst", func() {
	now := func() time.Time { return at }

	It("judges the board's signals of the definition, absolute and against the baseline's", func() {
		a := analysis.New(analysis.Config{Now: now, Signals: figures{
			"v2": {CrashRate: 0.4, Readied: 4, TimeToReadyP50Ms: 1500},
			"v1": {CrashRate: 0.0, Readied: 4, TimeToReadyP50Ms: 1000},
		}})
		v := judge(a,
			&models.AnalysisCheck{Name: "crashes", Provider: "board", Signal: "crash_rate", Max: proto.Float64(0.1)},
			&models.AnalysisCheck{Name: "ready", Provider: "board", Signal: "time_to_ready_p50_ms", Max: proto.Float64(2), Relative: true})
		Expect(v.GetOutcome()).To(Equal(models.AnalysisOutcome_FAIL))
		Expect(v.GetAt()).To(Equal(at.UnixNano()))
		Expect(v.GetDefinitionId()).To(Equal("v2"))
		Expect(v.GetBaselineDefinitionId()).To(Equal("v1"))
		Expect(v.GetChecks()[0].GetReason()).To(Equal("crashes 0.4 > max 0.1 (by 300%, margin 10%)"))
		Expect(v.GetChecks()[1].GetOutcome()).To(Equal(models.AnalysisOutcome_PASS))
		Expect(v.GetChecks()[1].GetMax()).To(Equal(2000.0), "2 × the baseline's 1000 ms")
	})

	It("holds a relative check whose baseline has no value now to the baseline its latest verdict measured", func() {
		a := analysis.New(analysis.Config{Now: now, Signals: figures{"v2": {Readied: 4, TimeToReadyP50Ms: 2500}}})
		s := subject()
		s.During = models.AnalysisDuringBaking
		earlier := at.Add(-30 * time.Second)
		s.Judgement = (&models.RolloutJudgement{}).WithVerdict(&models.AnalysisVerdict{At: earlier.UnixNano(), Checks: []*models.AnalysisCheckResult{
			{Name: "ready", Baseline: proto.Float64(1000)},
		}})
		check := &models.AnalysisCheck{Name: "ready", Provider: "board", Signal: "time_to_ready_p50_ms", Max: proto.Float64(2), Relative: true}
		v := a.Judge(context.Background(), &models.RolloutAnalysis{Checks: []*models.AnalysisCheck{check}}, s)
		Expect(v.GetOutcome()).To(Equal(models.AnalysisOutcome_FAIL))
		Expect(v.GetChecks()[0].GetBaseline()).To(Equal(1000.0))
		Expect(v.GetChecks()[0].GetReason()).To(Equal("ready 2500 > max 2000 (2 × baseline 1000) (by 25%, margin 10%) (baseline as measured at 11:59:30)"))

		s.Judgement = nil
		v = a.Judge(context.Background(), &models.RolloutAnalysis{Checks: []*models.AnalysisCheck{check}}, s)
		Expect(v.GetOutcome()).To(Equal(models.AnalysisOutcome_MARGINAL), "never measured: no baseline value")
	})

	It("has no value for a time to ready before any instance became ready", func() {
		a := analysis.New(analysis.Config{Now: now, Signals: figures{"v2": {CrashRate: 0}}})
		v := judge(a, &models.AnalysisCheck{Name: "ready", Provider: "board", Signal: "time_to_ready_p99_ms", Max: proto.Float64(5000)})
		Expect(v.GetOutcome()).To(Equal(models.AnalysisOutcome_MARGINAL))
		Expect(v.GetChecks()[0].GetReason()).To(Equal("ready: no value"))
	})

	Describe("a prometheus check", func() {
		var p *prometheus
		var a *analysis.Analyst
		BeforeEach(func() {
			p = &prometheus{answers: map[string]string{}}
			server := httptest.NewServer(p)
			DeferCleanup(server.Close)
			a = analysis.New(analysis.Config{Now: now, PrometheusURL: server.URL + "/"})
		})
		errors := func(def string) string { return `sum(rate(errors{definition_id="` + def + `",lrp="hello"}[30s]))` }
		check := func() *models.AnalysisCheck {
			return &models.AnalysisCheck{Name: "errors", Provider: "prometheus",
				Query: `sum(rate(errors{definition_id="{{definition_id}}",lrp="{{process_guid}}"}[30s]))`, Max: proto.Float64(1.5), Relative: true}
		}

		It("queries the definition and the baseline with the placeholders filled in, and judges one against the other", func() {
			p.answers[errors("v2")] = vector("0.05")
			p.answers[errors("v1")] = vector("0.01")
			v := judge(a, check())
			Expect(v.GetOutcome()).To(Equal(models.AnalysisOutcome_FAIL))
			Expect(v.GetChecks()[0].GetReason()).To(Equal("errors 0.05 > max 0.015 (1.5 × baseline 0.01) (by 233%, margin 10%)"))
			Expect(p.queries).To(ConsistOf(errors("v2"), errors("v1")))

			p.answers[errors("v2")] = vector("0.011")
			Expect(judge(a, check()).GetOutcome()).To(Equal(models.AnalysisOutcome_PASS))
		})

		It("reads a scalar", func() {
			p.answers["vector(1) > 0"] = `{"status":"success","data":{"resultType":"scalar","result":[1.7e9,"7"]}}`
			v := judge(a, &models.AnalysisCheck{Name: "s", Provider: "prometheus", Query: "vector(1) > 0", Max: proto.Float64(5)})
			Expect(v.GetChecks()[0].GetValue()).To(Equal(7.0))
			Expect(v.GetOutcome()).To(Equal(models.AnalysisOutcome_FAIL))
		})

		DescribeTable("has no value, and says why, when the answer is not one number",
			func(answer, reason string) {
				p.answers["q"] = answer
				v := judge(a, &models.AnalysisCheck{Name: "q", Provider: "prometheus", Query: "q", Max: proto.Float64(1)})
				Expect(v.GetOutcome()).To(Equal(models.AnalysisOutcome_MARGINAL))
				Expect(v.GetChecks()[0].Value).To(BeNil())
				Expect(v.GetChecks()[0].GetReason()).To(Equal(reason))
			},
			Entry("no series", vector(), "q: no value"),
			Entry("NaN (a rate over no requests)", vector("NaN"), "q: no value"),
			Entry("two series", vector("1", "2"), "q: no value: prometheus: the query returned 2 series, not one (sum or max them)"),
			Entry("an error", `{"status":"error","errorType":"bad_data","error":"parse error at char 3"}`, "q: no value: prometheus: parse error at char 3"),
			Entry("a matrix", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, "q: no value: prometheus: the query returned a matrix, not a number"),
			Entry("not Prometheus", `<html>`, "q: no value: prometheus answered 200 OK, not its API's JSON"),
		)

		It("has no value where the board knows no Prometheus", func() {
			v := judge(analysis.New(analysis.Config{Now: now}), check())
			Expect(v.GetOutcome()).To(Equal(models.AnalysisOutcome_MARGINAL))
			Expect(v.GetChecks()[0].GetReason()).To(Equal("errors: no value: the board has no prometheus_url"))
		})
	})

	Describe("a webhook check", func() {
		It("POSTs the rollout's status and passes on a 2xx, fails on anything else", func() {
			var got *models.RolloutStatus
			var header http.Header
			code := http.StatusNoContent
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer GinkgoRecover()
				Expect(r.Method).To(Equal(http.MethodPost))
				raw, _ := io.ReadAll(r.Body)
				got = &models.RolloutStatus{}
				Expect(protojson.Unmarshal(raw, got)).To(Succeed())
				header = r.Header
				w.WriteHeader(code)
				if code >= 300 {
					fmt.Fprint(w, "  error budget spent\n")
				}
			}))
			DeferCleanup(server.Close)
			a := analysis.New(analysis.Config{Now: now})
			gate := &models.AnalysisCheck{Name: "gate", Provider: "webhook", Url: server.URL + "/gate"}

			v := judge(a, gate)
			Expect(v.GetOutcome()).To(Equal(models.AnalysisOutcome_PASS))
			Expect(v.GetChecks()[0].GetReason()).To(Equal("gate: webhook answered 204 No Content"))
			Expect(proto.Equal(got, subject().Status)).To(BeTrue())
			Expect(header.Get("Corkboard-Definition-Id")).To(Equal("v2"))
			Expect(header.Get("Corkboard-Baseline-Definition-Id")).To(Equal("v1"))

			code = http.StatusServiceUnavailable
			v = judge(a, gate)
			Expect(v.GetOutcome()).To(Equal(models.AnalysisOutcome_FAIL))
			Expect(v.GetChecks()[0].GetReason()).To(Equal(`gate: webhook answered 503 Service Unavailable: "error budget spent"`))
		})

		It("fails a webhook that does not answer within its timeout", func() {
			release := make(chan struct{})
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
			DeferCleanup(server.Close)
			DeferCleanup(func() { close(release) })
			started := time.Now()
			v := judge(analysis.New(analysis.Config{Now: now}),
				&models.AnalysisCheck{Name: "slow", Provider: "webhook", Url: server.URL, TimeoutMs: 300})
			Expect(v.GetOutcome()).To(Equal(models.AnalysisOutcome_FAIL))
			Expect(v.GetChecks()[0].GetReason()).To(ContainSubstring("context deadline exceeded"))
			Expect(time.Since(started)).To(BeNumerically("<", 5*time.Second))
		})

		It("never calls a cloud metadata address, unless the board allows it", func() {
			v := judge(analysis.New(analysis.Config{Now: now}),
				&models.AnalysisCheck{Name: "meta", Provider: "webhook", Url: "http://169.254.169.254/latest/meta-data/", TimeoutMs: 2000})
			Expect(v.GetOutcome()).To(Equal(models.AnalysisOutcome_FAIL))
			Expect(v.GetChecks()[0].GetReason()).To(ContainSubstring("refusing to call a link-local or cloud metadata address"))
		})
	})

	It("gives the verdict of the worst check", func() {
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		DeferCleanup(server.Close)
		a := analysis.New(analysis.Config{Now: now, Signals: figures{"v2": {CrashRate: 0.105}}})
		v := judge(a,
			&models.AnalysisCheck{Name: "gate", Provider: "webhook", Url: server.URL},
			&models.AnalysisCheck{Name: "crashes", Provider: "board", Signal: "crash_rate", Max: proto.Float64(0.1)})
		Expect(v.GetOutcome()).To(Equal(models.AnalysisOutcome_MARGINAL))
		Expect(models.VerdictLine(v)).To(Equal("MARGINAL at 12:00:00 (rolling, v2 against v1): crashes 0.105 > max 0.1 (by 5%, margin 10%)"))
	})
})
