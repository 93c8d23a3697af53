package models

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
)

// Analysis: a rollout judged every interval by its checks (RolloutAnalysis),
// each check's value held to its bounds (JudgeCheck), the verdict the
// worst of them (Verdict), and what a verdict does to the rollout
// (VerdictAction). Every rule of it is here; the runner measures and the
// planner acts.

// Analysis limits and defaults.
const (
	MaxAnalysisChecks           = 10
	DefaultAnalysisInterval     = 10 * time.Second
	MinAnalysisInterval         = time.Second
	MaxAnalysisInterval         = time.Hour
	DefaultAnalysisTimeout      = 5 * time.Second
	MaxAnalysisTimeout          = time.Minute
	DefaultAnalysisMargin       = 0.1
	MaxAnalysisMargin           = 10.0
	MaxBake                     = 24 * time.Hour
	MaxAnalysisQueryBytes       = 4096
	MaxAnalysisURLBytes         = 2048
	maxAnalysisCheckName        = 64
	KeptAnalysisVerdicts        = 20
	AnalysisProviderBoard       = "board"
	AnalysisProviderProm        = "prometheus"
	AnalysisProviderWebhook     = "webhook"
	OnFailureRevert             = "revert"
	OnFailureHold               = "hold"
	OnFailureFail               = "fail"
	OnMarginalContinue          = "continue"
	OnMarginalHold              = "hold"
	AnalysisDuringRolling       = "rolling"
	AnalysisDuringBaking        = "baking"
	analysisPlaceholderDefID    = "{{definition_id}}"
	analysisPlaceholderGuid     = "{{process_guid}}"
	analysisPlaceholderBaseline = "{{baseline}}"
)

// BoardSignals are the signals the board provider measures, as
// DefinitionSignals has them (package signals).
var BoardSignals = []string{"crash_rate", "time_to_ready_p50_ms", "time_to_ready_p99_ms",
	"health_failure_rate", "health_latency_p99_ms", "memory_mb_p99"}

// BoardSignal is the named signal's value in f, and whether f has one: a
// time to ready needs an instance that became ready in the window, a
// health signal health checks (or memory samples) the cells reported in
// it.
func BoardSignal(f *DefinitionSignals, name string) (float64, bool) {
	if f == nil {
		return 0, false
	}
	switch name {
	case "crash_rate":
		return f.GetCrashRate(), true
	case "time_to_ready_p50_ms":
		return float64(f.GetTimeToReadyP50Ms()), f.GetReadied() > 0
	case "time_to_ready_p99_ms":
		return float64(f.GetTimeToReadyP99Ms()), f.GetReadied() > 0
	case "health_failure_rate":
		return f.GetHealthFailureRate(), f.GetHealthChecks() > 0
	case "health_latency_p99_ms":
		return float64(f.GetHealthLatencyP99Ms()), f.HealthLatencyP99Ms != nil
	case "memory_mb_p99":
		return float64(f.GetMemoryMbP99()), f.MemoryMbP99 != nil
	}
	return 0, false
}

// Interval is how often the analysis runs.
func (a *RolloutAnalysis) Interval() time.Duration {
	if a.GetIntervalMs() == 0 {
		return DefaultAnalysisInterval
	}
	return time.Duration(a.GetIntervalMs()) * time.Millisecond
}

// Timeout is how long one call of a prometheus or webhook check may take.
func (c *AnalysisCheck) Timeout() time.Duration {
	if c.GetTimeoutMs() == 0 {
		return DefaultAnalysisTimeout
	}
	return time.Duration(c.GetTimeoutMs()) * time.Millisecond
}

// EffectiveMargin is the check's margin as a fraction of its bound.
func (c *AnalysisCheck) EffectiveMargin() float64 {
	if c.GetMargin() == 0 {
		return DefaultAnalysisMargin
	}
	return c.GetMargin()
}

// QueryFor is the check's PromQL for the definition of the LRP, its
// {{definition_id}}, {{process_guid}} and {{baseline}} replaced:
// baseline "true" selects the baseline instances' series (their targets'
// label baseline), "false" the others'.
func (c *AnalysisCheck) QueryFor(processGuid, definitionID string, baseline bool) string {
	q := strings.ReplaceAll(c.GetQuery(), analysisPlaceholderDefID, definitionID)
	q = strings.ReplaceAll(q, analysisPlaceholderBaseline, strconv.FormatBool(baseline))
	return strings.ReplaceAll(q, analysisPlaceholderGuid, processGuid)
}

func (a *RolloutAnalysis) validate(path string) error {
	checks := a.GetChecks()
	if len(checks) == 0 || len(checks) > MaxAnalysisChecks {
		return ErrInvalidField(child(path, "checks"), fmt.Sprintf("must have 1 to %d checks, got %d", MaxAnalysisChecks, len(checks)))
	}
	if ms := a.GetIntervalMs(); ms != 0 && (ms < MinAnalysisInterval.Milliseconds() || ms > MaxAnalysisInterval.Milliseconds()) {
		return ErrInvalidField(child(path, "interval_ms"), fmt.Sprintf("must be 0 (10 s) or %d to %d, got %d",
			MinAnalysisInterval.Milliseconds(), MaxAnalysisInterval.Milliseconds(), ms))
	}
	names := map[string]bool{}
	for i, c := range checks {
		at := fmt.Sprintf("%s[%d]", child(path, "checks"), i)
		if err := c.validate(at); err != nil {
			return err
		}
		if names[c.GetName()] {
			return ErrInvalidField(child(at, "name"), "repeats "+quoteShort(c.GetName())+": check names must be unique")
		}
		names[c.GetName()] = true
	}
	return nil
}

func (c *AnalysisCheck) validate(path string) error {
	if err := validateCheckName(child(path, "name"), c.GetName()); err != nil {
		return err
	}
	switch c.GetProvider() {
	case AnalysisProviderBoard:
		if !slices.Contains(BoardSignals, c.GetSignal()) {
			return ErrInvalidField(child(path, "signal"), "must be one of "+strings.Join(BoardSignals, ", ")+", got "+quoteShort(c.GetSignal()))
		}
	case AnalysisProviderProm:
		if strings.TrimSpace(c.GetQuery()) == "" {
			return ErrInvalidField(child(path, "query"), "required for a prometheus check")
		}
		if err := validateMaxBytes(child(path, "query"), c.GetQuery(), MaxAnalysisQueryBytes); err != nil {
			return err
		}
	case AnalysisProviderWebhook:
		if err := validateWebhookURL(child(path, "url"), c.GetUrl()); err != nil {
			return err
		}
	default:
		return ErrInvalidField(child(path, "provider"), `must be "board", "prometheus" or "webhook", got `+quoteShort(c.GetProvider()))
	}
	if ms := c.GetTimeoutMs(); ms < 0 || ms > MaxAnalysisTimeout.Milliseconds() {
		return ErrInvalidField(child(path, "timeout_ms"), fmt.Sprintf("must be 0 (5 s) to %d, got %d", MaxAnalysisTimeout.Milliseconds(), ms))
	}
	if c.GetProvider() == AnalysisProviderWebhook {
		if c.Max != nil || c.Min != nil || c.GetRelative() || c.GetMargin() != 0 {
			return ErrInvalidField(path, "a webhook check has no bounds: a 2xx answer passes, anything else fails")
		}
		return nil
	}
	if c.Max == nil && c.Min == nil {
		return ErrInvalidField(child(path, "max"), "a check needs max, min or both")
	}
	for _, b := range []struct {
		field string
		value *float64
	}{{"max", c.Max}, {"min", c.Min}} {
		if b.value != nil && (math.IsNaN(*b.value) || math.IsInf(*b.value, 0) || *b.value < 0) {
			return ErrInvalidField(child(path, b.field), "must be a finite number, not negative, got "+strconv.FormatFloat(*b.value, 'g', -1, 64))
		}
	}
	if c.Max != nil && c.Min != nil && c.GetMin() > c.GetMax() {
		return ErrInvalidField(child(path, "min"), fmt.Sprintf("must not be above max (%g), got %g", c.GetMax(), c.GetMin()))
	}
	if m := c.GetMargin(); math.IsNaN(m) || m < 0 || m > MaxAnalysisMargin {
		return ErrInvalidField(child(path, "margin"), fmt.Sprintf("must be 0 (0.1) to %g, got %g", MaxAnalysisMargin, m))
	}
	return nil
}

func validateCheckName(path, name string) error {
	if name == "" || len(name) > maxAnalysisCheckName {
		return ErrInvalidField(path, fmt.Sprintf("must be 1 to %d characters, got %d", maxAnalysisCheckName, len(name)))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return ErrInvalidField(path, "may hold only letters, digits, '-', '_' and '.', got "+quoteShort(name))
		}
	}
	return nil
}

func validateWebhookURL(path, raw string) error {
	if raw == "" {
		return ErrInvalidField(path, "required for a webhook check")
	}
	if err := validateMaxBytes(path, raw, MaxAnalysisURLBytes); err != nil {
		return err
	}
	if err := validateNoControl(path, raw); err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil {
		// The parser's own error quotes the URL, credentials and all.
		if urlErr, ok := err.(*url.Error); ok {
			err = urlErr.Err
		}
		return ErrInvalidField(path, "must be a URL: "+err.Error())
	}
	// Every API client reads a rollout's status, its analysis included,
	// and the record is not encrypted at rest: no credentials in it. The
	// error does not quote the URL, so as not to hand them out either.
	if u.User != nil {
		return ErrInvalidField(path, "must not hold credentials (user:password@host): every API client reads a rollout's analysis")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ErrInvalidField(path, "must be an http:// or https:// URL naming a host, got "+quoteShort(raw))
	}
	return nil
}

// validateRolloutPolicy checks an update's on_failure, on_marginal and
// bake_ms, and analysis, which all need a definition to roll out.
func (u *DesiredLRPUpdate) validateRolloutPolicy(path string) error {
	switch u.GetOnFailure() {
	case "", OnFailureRevert, OnFailureHold, OnFailureFail:
	default:
		return ErrInvalidField(child(path, "on_failure"), `must be "revert", "hold" or "fail", got `+quoteShort(u.GetOnFailure()))
	}
	switch u.GetOnMarginal() {
	case "", OnMarginalContinue, OnMarginalHold:
	default:
		return ErrInvalidField(child(path, "on_marginal"), `must be "continue" or "hold", got `+quoteShort(u.GetOnMarginal()))
	}
	if err := validateMillis(child(path, "bake_ms"), u.GetBakeMs(), MaxBake.Milliseconds()); err != nil {
		return err
	}
	if u.GetAnalysis() != nil {
		if err := u.GetAnalysis().validate(child(path, "analysis")); err != nil {
			return err
		}
	}
	if u.GetDefinition() == nil {
		// In field order, so that the same request always names the same
		// field.
		for _, f := range []struct {
			field string
			set   bool
		}{
			{"analysis", u.GetAnalysis() != nil}, {"on_failure", u.GetOnFailure() != ""},
			{"on_marginal", u.GetOnMarginal() != ""}, {"bake_ms", u.GetBakeMs() != 0},
		} {
			if f.set {
				return ErrInvalidField(child(path, f.field), "requires a definition")
			}
		}
	}
	if u.GetOnMarginal() != "" && u.GetAnalysis() == nil {
		return ErrInvalidField(child(path, "on_marginal"), "requires analysis")
	}
	if u.GetBaseline() && u.GetAnalysis() == nil {
		return ErrInvalidField(child(path, "baseline"), "requires analysis")
	}
	return nil
}

// NewRolloutJudgement is what the record of a rollout an update starts at
// now keeps of its analysis and policy, or nil when the update asked for
// none of them.
func NewRolloutJudgement(u *DesiredLRPUpdate, now int64) *RolloutJudgement {
	if u.GetAnalysis() == nil && u.GetOnFailure() == "" && u.GetOnMarginal() == "" && u.GetBakeMs() == 0 {
		return nil
	}
	return &RolloutJudgement{
		Analysis: u.GetAnalysis(), OnFailure: u.GetOnFailure(), OnMarginal: u.GetOnMarginal(), BakeMs: u.GetBakeMs(),
		Baseline: u.GetBaseline(), VerdictsFrom: now,
	}
}

// JudgeCheck holds a check's measured value to its bounds. value and
// baseline are nil when there was none. The bounds are the check's max
// and min, or with relative those times the baseline's value. A value
// within its bounds passes; past a bound by no more than margin × the
// bound it is marginal; further it fails. No value, or no baseline for a
// relative check, is marginal: nothing to judge is not a pass.
//
// Worked examples (margin 0.1 unless said):
//
//  1. crash_rate 0.05, max 0.1: PASS.
//  2. crash_rate 0.105, max 0.1: past by 5% ≤ 10%: MARGINAL.
//  3. crash_rate 0.4, max 0.1: past by 300%: FAIL.
//  4. error ratio 0.05, relative, max 1.5, baseline 0.01: bound 0.015;
//     past by 233%: FAIL. The same with a clean version, 0.012: PASS.
//  5. success ratio 0.97, min 0.99, margin 0.05: under by 2% ≤ 5%:
//     MARGINAL.
//  6. crash_rate 0.01, max 0: any value above 0 fails (a bound of 0 has
//     no margin).
//  7. no value (a query with no series): MARGINAL, "no value".
func JudgeCheck(c *AnalysisCheck, value, baseline *float64) *AnalysisCheckResult {
	r := &AnalysisCheckResult{Name: c.GetName(), Value: value, Baseline: baseline}
	label := c.GetName()
	if value == nil {
		r.Outcome, r.Reason = AnalysisOutcome_MARGINAL, label+": no value"
		return r
	}
	scale := 1.0
	if c.GetRelative() {
		if baseline == nil {
			r.Outcome, r.Reason = AnalysisOutcome_MARGINAL, fmt.Sprintf("%s %s: no baseline value", label, num(*value))
			return r
		}
		scale = *baseline
	}
	// bounded says a bound, and how it came about when it is relative.
	bounded := func(bound, factor float64) string {
		if !c.GetRelative() {
			return num(bound)
		}
		return fmt.Sprintf("%s (%s × baseline %s)", num(bound), num(factor), num(*baseline))
	}
	margin := c.EffectiveMargin()
	r.Outcome, r.Reason = AnalysisOutcome_PASS, fmt.Sprintf("%s %s within bounds", label, num(*value))
	if c.Max != nil {
		bound := c.GetMax() * scale
		r.Max = &bound
		if *value > bound {
			past := pastBy(*value, bound)
			r.Outcome = AnalysisOutcome_FAIL
			if past <= margin {
				r.Outcome = AnalysisOutcome_MARGINAL
			}
			r.Reason = fmt.Sprintf("%s %s > max %s (by %s, margin %s)", label, num(*value), bounded(bound, c.GetMax()), percent(past), percent(margin))
			return r
		}
	}
	if c.Min != nil {
		bound := c.GetMin() * scale
		r.Min = &bound
		if *value < bound {
			past := pastBy(*value, bound)
			r.Outcome = AnalysisOutcome_FAIL
			if past <= margin {
				r.Outcome = AnalysisOutcome_MARGINAL
			}
			r.Reason = fmt.Sprintf("%s %s < min %s (by %s, margin %s)", label, num(*value), bounded(bound, c.GetMin()), percent(past), percent(margin))
			return r
		}
	}
	return r
}

// pastBy is how far value is from bound, as a fraction of bound (bound > 0).
func pastBy(value, bound float64) float64 {
	if bound == 0 {
		return math.Inf(1)
	}
	return math.Abs(value-bound) / bound
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', 4, 64) }

func percent(f float64) string {
	if math.IsInf(f, 1) {
		return "∞"
	}
	return strconv.FormatFloat(f*100, 'g', 3, 64) + "%"
}

// Verdict is the verdict of results: their worst outcome (FAIL over
// MARGINAL over PASS).
func Verdict(results []*AnalysisCheckResult) AnalysisOutcome {
	worst := AnalysisOutcome_PASS
	for _, r := range results {
		if r.GetOutcome() > worst {
			worst = r.GetOutcome()
		}
	}
	return worst
}

// RolloutAction is what a rollout does next.
type RolloutAction int

const (
	// Continue: the rollout goes on.
	Continue RolloutAction = iota
	// Hold: state HELD; nothing more starts, the mix keeps serving.
	Hold
	// Fail: state FAILED; nothing more starts.
	Fail
	// Revert: the healthy definition becomes active again (REVERTED).
	Revert
)

func (a RolloutAction) String() string {
	return [...]string{"continue", "hold", "fail", "revert"}[a]
}

// FailureAction is what a rollout failing — a failing verdict, or no
// index completed within the progress deadline — does under onFailure,
// given the strategy's auto_revert and whether the rollout can revert at
// all (models.Abortable: a healthy definition other than the active one).
//
//  1. on_failure "" with auto_revert: revert (as before analysis).
//  2. on_failure "" without auto_revert: fail.
//  3. "hold": hold; "fail": fail, auto_revert or not.
//  4. "revert" with nothing to revert to (the LRP's first definition):
//     fail.
func FailureAction(onFailure string, autoRevert, canRevert bool) RolloutAction {
	switch {
	case onFailure == OnFailureHold:
		return Hold
	case onFailure == OnFailureFail:
		return Fail
	case (onFailure == OnFailureRevert || onFailure == "" && autoRevert) && canRevert:
		return Revert
	}
	return Fail
}

// VerdictAction is what a verdict does to a rollout judged by j:
// a pass continues, a failure is FailureAction's, a marginal one holds
// under on_marginal "hold" and continues otherwise.
func VerdictAction(outcome AnalysisOutcome, j *RolloutJudgement, autoRevert, canRevert bool) RolloutAction {
	switch outcome {
	case AnalysisOutcome_FAIL:
		return FailureAction(j.GetOnFailure(), autoRevert, canRevert)
	case AnalysisOutcome_MARGINAL:
		if j.GetOnMarginal() == OnMarginalHold {
			return Hold
		}
	}
	return Continue
}

// ActingVerdict is the verdict the planner acts on: the latest, when it
// was made for definitionID since VerdictsFrom; nil otherwise.
func (j *RolloutJudgement) ActingVerdict(definitionID string) *AnalysisVerdict {
	v := j.LastVerdict()
	if v == nil || v.GetDefinitionId() != definitionID || v.GetAt() < j.GetVerdictsFrom() {
		return nil
	}
	return v
}

// Judged reports whether a rollout in state, judged by j, is judged: it
// advances (PROGRESSING, or HOLDING at a staged target) and has analysis.
// A HELD, FAILED, REVERTED or COMPLETE rollout is not: reverts are never
// judged, and the others wait for an operator or a new definition.
func Judged(state RolloutStatus_State, j *RolloutJudgement) bool {
	return RolloutAdvancing(state) && j.GetAnalysis() != nil
}

// Baseline instances (an update with baseline). While a rollout that
// asked for them is judged, the LRP runs fresh instances of its healthy
// definition beside the instances of the new one, at indices of their own
// above every LRP's range (BaselineIndexBase, BaselineIndexBase+1, ...),
// so that none stands for an index; they are routable, placed and
// restarted like any instance, and deleted once the rollout is no longer
// judged (the convergence planner, convergence/baseline.go). The analysis
// compares the new definition with them: Prometheus queries can select
// them with {{baseline}} (the label baseline="true" of their targets).
const (
	// BaselineIndexBase is the first baseline instance's index: above
	// ValidationIndex.
	BaselineIndexBase int32 = ValidationIndex + 1
	// MaxBaselineInstances bounds an LRP's baseline instances: past ten
	// a baseline costs capacity and tells the queries nothing more.
	MaxBaselineInstances int32 = 10
)

// IsBaselineIndex reports whether index is a baseline instance's.
func IsBaselineIndex(index int32) bool {
	return index >= BaselineIndexBase && index < BaselineIndexBase+MaxBaselineInstances
}

// BaselineWanted is how many baseline instances a rollout in state,
// judged by j, wants beside canaries instances of its new definition: one
// each, at most MaxBaselineInstances, while it is judged and asked for
// them; none otherwise.
//
//  1. 12 instances rolling to v2 with baseline, 3 on v2 so far: 3.
//  2. Every index on v2, baking: 10 (the bound), not 12.
//  3. HELD, COMPLETE, FAILED or REVERTED: 0 — the baseline instances go.
func BaselineWanted(state RolloutStatus_State, j *RolloutJudgement, canaries int32) int32 {
	if !j.GetBaseline() || !Judged(state, j) {
		return 0
	}
	return min(max(canaries, 0), MaxBaselineInstances)
}

// TakesVerdictOf reports whether a rollout in state, moving to
// recordDefinitionID while activeDefinitionID is active and judged by j,
// takes a verdict made of definitionID: it is judged (Judged) and still
// the rollout to that definition. The runner asks before it judges, the
// store again under its locks before it keeps the verdict.
func TakesVerdictOf(state RolloutStatus_State, recordDefinitionID, activeDefinitionID, definitionID string, j *RolloutJudgement) bool {
	return recordDefinitionID == definitionID && activeDefinitionID == definitionID && Judged(state, j)
}

// LastBaseline is the latest baseline value a verdict of j measured for
// the check named, and when; false when none did. A relative check whose
// baseline has no value now — in the bake, where no instance of the
// baseline is left — is held to that one (analysis.Analyst).
func (j *RolloutJudgement) LastBaseline(check string) (float64, int64, bool) {
	verdicts := j.GetVerdicts()
	for i := len(verdicts) - 1; i >= 0; i-- {
		for _, c := range verdicts[i].GetChecks() {
			if c.GetName() == check && c.Baseline != nil {
				return c.GetBaseline(), verdicts[i].GetAt(), true
			}
		}
	}
	return 0, 0, false
}

// LastVerdict is the judgement's latest verdict, nil before the first.
func (j *RolloutJudgement) LastVerdict() *AnalysisVerdict {
	v := j.GetVerdicts()
	if len(v) == 0 {
		return nil
	}
	return v[len(v)-1]
}

// AnalysisDue reports whether a rollout in state, judged by j, is due a
// verdict at now (Unix nanoseconds): it is judged (Judged), and its last
// verdict is an interval old or there is none.
func (j *RolloutJudgement) AnalysisDue(state RolloutStatus_State, now int64) bool {
	if !Judged(state, j) {
		return false
	}
	last := j.LastVerdict()
	return last == nil || now-last.GetAt() >= int64(j.GetAnalysis().Interval())
}

// WithVerdict is j with v appended, keeping the latest KeptAnalysisVerdicts.
func (j *RolloutJudgement) WithVerdict(v *AnalysisVerdict) *RolloutJudgement {
	next := proto.Clone(j).(*RolloutJudgement)
	verdicts := append(next.Verdicts, v)
	if len(verdicts) > KeptAnalysisVerdicts {
		verdicts = verdicts[len(verdicts)-KeptAnalysisVerdicts:]
	}
	next.Verdicts = verdicts
	return next
}

// VerdictLine says a verdict in one line: "FAIL at 12:03:04 (rolling, v2
// against v1): errors 0.05 > max 0.015 (1.5 × baseline 0.01) (by 233%,
// margin 10%)". Only the checks that did not pass are named, all of them
// when they all passed.
func VerdictLine(v *AnalysisVerdict) string {
	var reasons []string
	for _, c := range v.GetChecks() {
		if c.GetOutcome() != AnalysisOutcome_PASS {
			reasons = append(reasons, c.GetReason())
		}
	}
	if len(reasons) == 0 {
		for _, c := range v.GetChecks() {
			reasons = append(reasons, c.GetReason())
		}
	}
	against := ""
	if v.GetBaselineDefinitionId() != "" {
		against = " against " + v.GetBaselineDefinitionId()
	}
	return fmt.Sprintf("%s at %s (%s, %s%s): %s", v.GetOutcome(), time.Unix(0, v.GetAt()).UTC().Format("15:04:05"),
		v.GetDuring(), v.GetDefinitionId(), against, strings.Join(reasons, "; "))
}
