package models_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("JudgeCheck (its worked examples)", func() {
	v := func(f float64) *float64 { return &f }
	DescribeTable("a value held to its bounds",
		func(c *models.AnalysisCheck, value, baseline *float64, want models.AnalysisOutcome, reason string) {
			r := models.JudgeCheck(c, value, baseline)
			Expect(r.GetOutcome()).To(Equal(want))
			Expect(r.GetReason()).To(Equal(reason))
			Expect(r.GetName()).To(Equal(c.GetName()))
		},
		Entry("1. within max", &models.AnalysisCheck{Name: "crashes", Max: v(0.1)}, v(0.05), nil,
			models.AnalysisOutcome_PASS, "crashes 0.05 within bounds"),
		Entry("2. past max by 5%, within the 10% margin", &models.AnalysisCheck{Name: "crashes", Max: v(0.1)}, v(0.105), nil,
			models.AnalysisOutcome_MARGINAL, "crashes 0.105 > max 0.1 (by 5%, margin 10%)"),
		Entry("3. past max by 300%", &models.AnalysisCheck{Name: "crashes", Max: v(0.1)}, v(0.4), nil,
			models.AnalysisOutcome_FAIL, "crashes 0.4 > max 0.1 (by 300%, margin 10%)"),
		Entry("4. relative: 5% errors against a baseline of 1%", &models.AnalysisCheck{Name: "errors", Max: v(1.5), Relative: true}, v(0.05), v(0.01),
			models.AnalysisOutcome_FAIL, "errors 0.05 > max 0.015 (1.5 × baseline 0.01) (by 233%, margin 10%)"),
		Entry("4. relative: a clean version", &models.AnalysisCheck{Name: "errors", Max: v(1.5), Relative: true}, v(0.012), v(0.01),
			models.AnalysisOutcome_PASS, "errors 0.012 within bounds"),
		Entry("5. under min by 2%, margin 5%", &models.AnalysisCheck{Name: "success", Min: v(0.99), Margin: 0.05}, v(0.97), nil,
			models.AnalysisOutcome_MARGINAL, "success 0.97 < min 0.99 (by 2.02%, margin 5%)"),
		Entry("6. a bound of 0 has no margin", &models.AnalysisCheck{Name: "crashes", Max: v(0)}, v(0.01), nil,
			models.AnalysisOutcome_FAIL, "crashes 0.01 > max 0 (by ∞, margin 10%)"),
		Entry("7. no value", &models.AnalysisCheck{Name: "errors", Max: v(0.01)}, nil, nil,
			models.AnalysisOutcome_MARGINAL, "errors: no value"),
		Entry("relative without a baseline value", &models.AnalysisCheck{Name: "errors", Max: v(2), Relative: true}, v(0.01), nil,
			models.AnalysisOutcome_MARGINAL, "errors 0.01: no baseline value"),
		Entry("within min and max", &models.AnalysisCheck{Name: "p50", Min: v(10), Max: v(20)}, v(15), nil,
			models.AnalysisOutcome_PASS, "p50 15 within bounds"),
	)

	It("records the numbers and the bounds it applied", func() {
		r := models.JudgeCheck(&models.AnalysisCheck{Name: "errors", Max: v(1.5), Relative: true}, v(0.05), v(0.01))
		Expect(r.GetValue()).To(Equal(0.05))
		Expect(r.GetBaseline()).To(Equal(0.01))
		Expect(r.GetMax()).To(BeNumerically("~", 0.015, 1e-12))
		Expect(r.Min).To(BeNil())
	})

	It("gives a verdict its worst check's outcome", func() {
		pass := &models.AnalysisCheckResult{Outcome: models.AnalysisOutcome_PASS}
		marginal := &models.AnalysisCheckResult{Outcome: models.AnalysisOutcome_MARGINAL}
		fail := &models.AnalysisCheckResult{Outcome: models.AnalysisOutcome_FAIL}
		Expect(models.Verdict([]*models.AnalysisCheckResult{pass, pass})).To(Equal(models.AnalysisOutcome_PASS))
		Expect(models.Verdict([]*models.AnalysisCheckResult{pass, marginal})).To(Equal(models.AnalysisOutcome_MARGINAL))
		Expect(models.Verdict([]*models.AnalysisCheckResult{fail, marginal, pass})).To(Equal(models.AnalysisOutcome_FAIL))
	})
})

var _ = Describe("FailureAction and VerdictAction (their worked examples)", func() {
	DescribeTable("what a failing rollout does",
		func(onFailure string, autoRevert, canRevert bool, want models.RolloutAction) {
			Expect(models.FailureAction(onFailure, autoRevert, canRevert)).To(Equal(want))
		},
		Entry("1. no policy, auto_revert: revert", "", true, true, models.Revert),
		Entry("2. no policy, no auto_revert: fail", "", false, true, models.Fail),
		Entry("3. hold", "hold", true, true, models.Hold),
		Entry("3. fail, auto_revert or not", "fail", true, true, models.Fail),
		Entry("revert without auto_revert", "revert", false, true, models.Revert),
		Entry("4. revert with nothing to revert to", "revert", false, false, models.Fail),
		Entry("no policy, auto_revert, nothing to revert to", "", true, false, models.Fail),
	)
	DescribeTable("what a verdict does",
		func(outcome models.AnalysisOutcome, onFailure, onMarginal string, want models.RolloutAction) {
			j := &models.RolloutJudgement{OnFailure: onFailure, OnMarginal: onMarginal}
			Expect(models.VerdictAction(outcome, j, false, true)).To(Equal(want))
		},
		Entry("a pass continues", models.AnalysisOutcome_PASS, "hold", "hold", models.Continue),
		Entry("a failure follows on_failure", models.AnalysisOutcome_FAIL, "hold", "", models.Hold),
		Entry("a failure without a policy or auto_revert fails", models.AnalysisOutcome_FAIL, "", "", models.Fail),
		Entry("a marginal verdict continues by default", models.AnalysisOutcome_MARGINAL, "revert", "", models.Continue),
		Entry("a marginal verdict holds under on_marginal hold", models.AnalysisOutcome_MARGINAL, "revert", "hold", models.Hold),
	)
})

var _ = Describe("TakesVerdictOf", func() {
	judged := &models.RolloutJudgement{Analysis: &models.RolloutAnalysis{}}
	DescribeTable("whether a verdict of a definition is kept",
		func(state models.RolloutStatus_State, record, active, of string, j *models.RolloutJudgement, want bool) {
			Expect(models.TakesVerdictOf(state, record, active, of, j)).To(Equal(want))
		},
		Entry("the rollout to it, judged", models.RolloutStatus_PROGRESSING, "v2", "v2", "v2", judged, true),
		Entry("a newer update made v3 active", models.RolloutStatus_PROGRESSING, "v3", "v3", "v2", judged, false),
		Entry("the record is of another definition than the active one", models.RolloutStatus_PROGRESSING, "v2", "v3", "v2", judged, false),
		Entry("HELD: not judged", models.RolloutStatus_HELD, "v2", "v2", "v2", judged, false),
		Entry("no analysis", models.RolloutStatus_PROGRESSING, "v2", "v2", "v2", &models.RolloutJudgement{OnFailure: "hold"}, false),
	)
})

var _ = Describe("BaselineWanted (its worked examples)", func() {
	judged := &models.RolloutJudgement{Baseline: true, Analysis: &models.RolloutAnalysis{}}
	DescribeTable("baseline instances beside the canaries",
		func(state models.RolloutStatus_State, j *models.RolloutJudgement, canaries, want int32) {
			Expect(models.BaselineWanted(state, j, canaries)).To(Equal(want))
		},
		Entry("1. rolling, 3 on v2", models.RolloutStatus_PROGRESSING, judged, int32(3), int32(3)),
		Entry("2. every index on v2, baking: the bound", models.RolloutStatus_PROGRESSING, judged, int32(12), models.MaxBaselineInstances),
		Entry("3. HELD", models.RolloutStatus_HELD, judged, int32(3), int32(0)),
		Entry("3. COMPLETE", models.RolloutStatus_COMPLETE, judged, int32(3), int32(0)),
		Entry("3. REVERTED", models.RolloutStatus_REVERTED, judged, int32(3), int32(0)),
		Entry("a staged phase at its target", models.RolloutStatus_HOLDING, judged, int32(2), int32(2)),
		Entry("not asked for", models.RolloutStatus_PROGRESSING, &models.RolloutJudgement{Analysis: &models.RolloutAnalysis{}}, int32(3), int32(0)),
		Entry("no judgement", models.RolloutStatus_PROGRESSING, nil, int32(3), int32(0)),
	)
	It("puts them at indices of their own, above every LRP's and the validation instance's", func() {
		Expect(models.IsBaselineIndex(models.BaselineIndexBase)).To(BeTrue())
		Expect(models.IsBaselineIndex(models.BaselineIndexBase + models.MaxBaselineInstances - 1)).To(BeTrue())
		Expect(models.IsBaselineIndex(models.BaselineIndexBase + models.MaxBaselineInstances)).To(BeFalse())
		Expect(models.IsBaselineIndex(models.ValidationIndex)).To(BeFalse())
		Expect(models.IsBaselineIndex(models.MaxInstances - 1)).To(BeFalse())
	})
})

var _ = Describe("RolloutJudgement", func() {
	It("is due a verdict once an interval passed since its last, and keeps the latest 20", func() {
		j := &models.RolloutJudgement{Analysis: &models.RolloutAnalysis{IntervalMs: 2000}}
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).UnixNano()
		Expect(j.AnalysisDue(models.RolloutStatus_PROGRESSING, now)).To(BeTrue(), "no verdict yet")
		for i := range 25 {
			j = j.WithVerdict(&models.AnalysisVerdict{At: now + int64(i)})
		}
		Expect(j.GetVerdicts()).To(HaveLen(models.KeptAnalysisVerdicts))
		Expect(j.LastVerdict().GetAt()).To(Equal(now + 24))
		Expect(j.GetVerdicts()[0].GetAt()).To(Equal(now + 5))
		Expect(j.AnalysisDue(models.RolloutStatus_PROGRESSING, now+24+int64(1999*time.Millisecond))).To(BeFalse())
		Expect(j.AnalysisDue(models.RolloutStatus_PROGRESSING, now+24+int64(2*time.Second))).To(BeTrue())
		Expect((&models.RolloutJudgement{OnFailure: "hold"}).AnalysisDue(models.RolloutStatus_PROGRESSING, now)).To(BeFalse(), "a policy alone has nothing to run")
		Expect(j.AnalysisDue(models.RolloutStatus_HOLDING, now+int64(time.Hour))).To(BeTrue(), "a staged phase at its target is judged")
		for _, state := range []models.RolloutStatus_State{models.RolloutStatus_HELD, models.RolloutStatus_FAILED, models.RolloutStatus_REVERTED, models.RolloutStatus_COMPLETE} {
			Expect(j.AnalysisDue(state, now+int64(time.Hour))).To(BeFalse(), "%s is not judged", state)
		}
		Expect(j.GetVerdicts()[0].GetAt()).To(Equal(now+5), "appending leaves the judgement it was given alone")
	})

	It("acts on its latest verdict only when made for the definition since verdicts_from", func() {
		j := &models.RolloutJudgement{VerdictsFrom: 100}
		Expect(j.ActingVerdict("v2")).To(BeNil(), "no verdict yet")
		j = j.WithVerdict(&models.AnalysisVerdict{At: 99, DefinitionId: "v2"})
		Expect(j.ActingVerdict("v2")).To(BeNil(), "made before a resume")
		j = j.WithVerdict(&models.AnalysisVerdict{At: 100, DefinitionId: "v2"})
		Expect(j.ActingVerdict("v2").GetAt()).To(Equal(int64(100)))
		Expect(j.ActingVerdict("v3")).To(BeNil(), "made for another definition")
	})

	It("is nil for an update that asks for no analysis, policy or bake", func() {
		Expect(models.NewRolloutJudgement(&models.DesiredLRPUpdate{Definition: &models.LRPDefinition{}}, 5)).To(BeNil())
		j := models.NewRolloutJudgement(&models.DesiredLRPUpdate{OnFailure: "hold", BakeMs: 60000}, 5)
		Expect(proto.Equal(j, &models.RolloutJudgement{OnFailure: "hold", BakeMs: 60000, VerdictsFrom: 5})).To(BeTrue())
	})

	It("says a verdict in a line naming the checks that did not pass", func() {
		line := models.VerdictLine(&models.AnalysisVerdict{
			Outcome: models.AnalysisOutcome_FAIL, At: time.Date(2026, 11, 29, 12, 3, 4, 0, time.UTC).UnixNano(),
			DefinitionId: "v2", BaselineDefinitionId: "v1", During: "rolling",
			Checks: []*models.AnalysisCheckResult{
				{Outcome: models.AnalysisOutcome_PASS, Reason: "crashes 0 within bounds"},
				{Outcome: models.AnalysisOutcome_FAIL, Reason: "errors 0.05 > max 0.015 (1.5 × baseline 0.01) (by 233%, margin 10%)"},
			},
		})
		Expect(line).To(Equal("FAIL at 12:03:04 (rolling, v2 against v1): errors 0.05 > max 0.015 (1.5 × baseline 0.01) (by 233%, margin 10%)"))
	})
})

var _ = Describe("an update's analysis and policy, validated", func() {
	definition := func() *models.LRPDefinition { return validDefinition() }
	DescribeTable("bad input names its field, on JSON as on protobuf",
		func(body string, field string) {
			u := &models.DesiredLRPUpdate{}
			Expect(protojson.Unmarshal([]byte(body), u)).To(Succeed())
			u.Definition = definition()
			req := &models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: u}
			err := req.Validate()
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(field))
			// The same request as protobuf bytes and back.
			raw, merr := proto.Marshal(req)
			Expect(merr).NotTo(HaveOccurred())
			again := &models.UpdateDesiredLRPRequest{}
			Expect(proto.Unmarshal(raw, again)).To(Succeed())
			Expect(again.Validate()).To(MatchError(err.Error()))
		},
		Entry("unknown on_failure", `{"on_failure": "retry"}`, `update.on_failure: must be "revert", "hold" or "fail", got "retry"`),
		Entry("unknown on_marginal", `{"on_marginal": "revert", "analysis": {"checks": [{"name": "c", "provider": "board", "signal": "crash_rate", "max": 0.1}]}}`, `update.on_marginal`),
		Entry("on_marginal without analysis", `{"on_marginal": "hold"}`, `update.on_marginal: requires analysis`),
		Entry("baseline without analysis", `{"baseline": true}`, `update.baseline: requires analysis`),
		Entry("bake too long", `{"bake_ms": "86400001"}`, `update.bake_ms`),
		Entry("no checks", `{"analysis": {}}`, `update.analysis.checks: must have 1 to 10 checks, got 0`),
		Entry("interval too short", `{"analysis": {"interval_ms": "10", "checks": [{"name": "c", "provider": "board", "signal": "crash_rate", "max": 0.1}]}}`, `update.analysis.interval_ms`),
		Entry("unknown provider", `{"analysis": {"checks": [{"name": "c", "provider": "datadog", "max": 1}]}}`, `update.analysis.checks[0].provider: must be "board", "prometheus" or "webhook", got "datadog"`),
		Entry("unknown signal", `{"analysis": {"checks": [{"name": "c", "provider": "board", "signal": "cpu", "max": 1}]}}`, `update.analysis.checks[0].signal: must be one of crash_rate, time_to_ready_p50_ms, time_to_ready_p99_ms, health_failure_rate, health_latency_p99_ms, memory_mb_p99, got "cpu"`),
		Entry("no bound", `{"analysis": {"checks": [{"name": "c", "provider": "board", "signal": "crash_rate"}]}}`, `update.analysis.checks[0].max: a check needs max, min or both`),
		Entry("negative bound", `{"analysis": {"checks": [{"name": "c", "provider": "board", "signal": "crash_rate", "max": -1}]}}`, `update.analysis.checks[0].max: must be a finite number, not negative, got -1`),
		Entry("min above max", `{"analysis": {"checks": [{"name": "c", "provider": "board", "signal": "crash_rate", "max": 1, "min": 2}]}}`, `update.analysis.checks[0].min`),
		Entry("prometheus without a query", `{"analysis": {"checks": [{"name": "c", "provider": "prometheus", "max": 1}]}}`, `update.analysis.checks[0].query: required for a prometheus check`),
		Entry("webhook without a URL", `{"analysis": {"checks": [{"name": "c", "provider": "webhook"}]}}`, `update.analysis.checks[0].url: required for a webhook check`),
		Entry("webhook with bounds", `{"analysis": {"checks": [{"name": "c", "provider": "webhook", "url": "http://x/", "max": 1}]}}`, `update.analysis.checks[0]: a webhook check has no bounds`),
		Entry("a webhook URL that is not HTTP", `{"analysis": {"checks": [{"name": "c", "provider": "webhook", "url": "file:///etc/passwd"}]}}`, `update.analysis.checks[0].url: must be an http:// or https:// URL naming a host`),
		Entry("a webhook URL with credentials, not echoed", `{"analysis": {"checks": [{"name": "c", "provider": "webhook", "url": "https://gate:s3cret@gate.example/"}]}}`, `update.analysis.checks[0].url: must not hold credentials (user:password@host)`),
		Entry("names repeated", `{"analysis": {"checks": [{"name": "c", "provider": "board", "signal": "crash_rate", "max": 1}, {"name": "c", "provider": "board", "signal": "crash_rate", "max": 2}]}}`, `update.analysis.checks[1].name: repeats "c"`),
		Entry("a name with a space", `{"analysis": {"checks": [{"name": "my check", "provider": "board", "signal": "crash_rate", "max": 1}]}}`, `update.analysis.checks[0].name`),
		Entry("timeout too long", `{"analysis": {"checks": [{"name": "c", "provider": "webhook", "url": "http://x/", "timeout_ms": "60001"}]}}`, `update.analysis.checks[0].timeout_ms`),
	)

	It("does not echo a webhook URL's credentials", func() {
		u := &models.DesiredLRPUpdate{Definition: validDefinition(), Analysis: &models.RolloutAnalysis{Checks: []*models.AnalysisCheck{
			{Name: "gate", Provider: "webhook", Url: "https://gate:s3cret@gate.example/"},
		}}}
		err := (&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: u}).Validate()
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
	})

	It("refuses analysis, a policy or a bake without a definition", func() {
		for _, u := range []*models.DesiredLRPUpdate{
			{OnFailure: "hold"}, {BakeMs: 1000},
			{Analysis: &models.RolloutAnalysis{Checks: []*models.AnalysisCheck{{Name: "c", Provider: "board", Signal: "crash_rate", Max: proto.Float64(1)}}}},
		} {
			err := (&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: u}).Validate()
			Expect(err).To(MatchError(ContainSubstring("requires a definition")))
		}
	})

	It("names the same field every time for a request with several of them without a definition", func() {
		u := &models.DesiredLRPUpdate{OnFailure: "hold", BakeMs: 1000, OnMarginal: "hold"}
		for range 50 {
			err := (&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: u}).Validate()
			Expect(err).To(MatchError("InvalidRequest: update.on_failure: requires a definition"))
		}
	})

	It("accepts the analysis of the guide", func() {
		var body = `{"analysis": {"interval_ms": "5000", "checks": [
			{"name": "crashes", "provider": "board", "signal": "crash_rate", "max": 0.01},
			{"name": "errors", "provider": "prometheus", "query": "sum(rate(hello_requests_total{code=\"500\",definition_id=\"{{definition_id}}\"}[30s]))", "max": 1.5, "relative": true},
			{"name": "gate", "provider": "webhook", "url": "https://gate.example/check", "timeout_ms": "2000"}
		]}, "on_failure": "hold", "on_marginal": "continue", "bake_ms": "600000"}`
		u := &models.DesiredLRPUpdate{}
		Expect(protojson.Unmarshal([]byte(body), u)).To(Succeed())
		u.Definition = definition()
		Expect((&models.UpdateDesiredLRPRequest{ProcessGuid: "g", Update: u}).Validate()).To(Succeed())
		Expect(u.GetAnalysis().GetChecks()[1].QueryFor("hello", "v2", false)).To(Equal(`sum(rate(hello_requests_total{code="500",definition_id="v2"}[30s]))`))
		q := &models.AnalysisCheck{Query: `up{process_guid="{{process_guid}}",definition_id="{{definition_id}}",baseline="{{baseline}}"}`}
		Expect(q.QueryFor("hello", "v1", true)).To(Equal(`up{process_guid="hello",definition_id="v1",baseline="true"}`))
	})
})
