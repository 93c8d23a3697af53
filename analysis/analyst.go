// Package analysis measures what a rollout's checks ask for — the board's
// own signals, a Prometheus query, a webhook's answer — and gives the
// rollout's verdict. The arithmetic of a verdict is models' (JudgeCheck,
// Verdict); this package only measures. The convergence runner calls it
// for every rollout whose analysis is due (runner/analysis.go) and stores
// the verdict; the planner acts on it.
package analysis

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/corkboard/corkboard/models"
)

// Signals answers what a definition's instances did lately
// (signals.Collector).
type Signals interface {
	Figures(processGuid, definitionID string, instances int) *models.DefinitionSignals
}

// Subject is what one verdict judges: the LRP's definition under
// rollout, and the baseline it is compared with (the healthy definition),
// each with its instance count; Status is the rollout's status, which a
// webhook is sent.
type Subject struct {
	ProcessGuid          string
	DefinitionID         string
	Instances            int
	BaselineDefinitionID string
	BaselineInstances    int
	During               string
	Status               *models.RolloutStatus
	// Judgement is the rollout's judgement so far: a relative check whose
	// baseline has no value now is held to the baseline value its latest
	// verdict measured (models.RolloutJudgement.LastBaseline).
	Judgement *models.RolloutJudgement
}

// Analyst runs checks.
type Analyst struct {
	signals    Signals
	prometheus string
	client     *http.Client
	now        func() time.Time
}

// Config configures an Analyst.
type Config struct {
	// Signals answers the board provider's checks.
	Signals Signals
	// PrometheusURL is the base URL of the Prometheus HTTP API the
	// prometheus checks query (e.g. http://prometheus:9090); empty: those
	// checks have no value.
	PrometheusURL string
	// AllowLinkLocal lets webhooks and Prometheus be reached on link-local
	// and cloud metadata addresses, which are refused otherwise
	// (models.IsLinkLocalOrMetadata).
	AllowLinkLocal bool
	// Now is the store's clock, which verdicts are stamped with.
	Now func() time.Time
}

// New returns an Analyst.
func New(cfg Config) *Analyst {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !cfg.AllowLinkLocal {
		dialer.Control = models.RefuseLinkLocal(errLinkLocal)
	}
	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Analyst{
		signals:    cfg.Signals,
		prometheus: cfg.PrometheusURL,
		client: &http.Client{
			Transport: transport,
			// A webhook that redirects is answered by where it points,
			// through the same dialer.
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if len(via) >= 3 {
					return errors.New("more than 3 redirects")
				}
				return nil
			},
		},
		now: now,
	}
}

// errLinkLocal is why a check's call to a link-local or metadata address
// fails.
var errLinkLocal = errors.New("refusing to call a link-local or cloud metadata address (the board's allow_link_local_asset_hosts allows it)")

// Judge runs every check of a, at once, and returns the verdict.
func (a *Analyst) Judge(ctx context.Context, an *models.RolloutAnalysis, s Subject) *models.AnalysisVerdict {
	results := make([]*models.AnalysisCheckResult, len(an.GetChecks()))
	var wg sync.WaitGroup
	for i, c := range an.GetChecks() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = a.check(ctx, c, s)
		}()
	}
	wg.Wait()
	return &models.AnalysisVerdict{
		Outcome:              models.Verdict(results),
		At:                   a.now().UnixNano(),
		DefinitionId:         s.DefinitionID,
		BaselineDefinitionId: s.BaselineDefinitionID,
		During:               s.During,
		Checks:               results,
	}
}

// check measures one check and judges it; a measurement that failed has
// no value, and its reason says why.
func (a *Analyst) check(ctx context.Context, c *models.AnalysisCheck, s Subject) *models.AnalysisCheckResult {
	switch c.GetProvider() {
	case models.AnalysisProviderWebhook:
		return a.webhook(ctx, c, s)
	case models.AnalysisProviderProm:
		ctx, cancel := context.WithTimeout(ctx, c.Timeout())
		defer cancel()
		value, err := a.query(ctx, c.QueryFor(s.ProcessGuid, s.DefinitionID, false))
		var baseline *float64
		var baselineErr error
		if c.GetRelative() && s.BaselineDefinitionID != "" {
			// With baseline instances, {{baseline}} selects them; without,
			// the healthy definition's instances stand for the baseline.
			baseline, baselineErr = a.query(ctx, c.QueryFor(s.ProcessGuid, s.BaselineDefinitionID, s.Judgement.GetBaseline()))
		}
		baseline, remembered := rememberBaseline(c, baseline, s)
		r := models.JudgeCheck(c, value, baseline)
		switch {
		case err != nil:
			r.Reason += ": " + err.Error()
		case baselineErr != nil && baseline == nil:
			r.Reason += ": baseline: " + baselineErr.Error()
		}
		return withRemembered(r, remembered)
	default:
		value := a.boardSignal(c.GetSignal(), s.ProcessGuid, s.DefinitionID, s.Instances)
		var baseline *float64
		if c.GetRelative() && s.BaselineDefinitionID != "" {
			baseline = a.boardSignal(c.GetSignal(), s.ProcessGuid, s.BaselineDefinitionID, s.BaselineInstances)
		}
		baseline, remembered := rememberBaseline(c, baseline, s)
		return withRemembered(models.JudgeCheck(c, value, baseline), remembered)
	}
}

// rememberBaseline is the baseline value a relative check is held to:
// the one measured now, or when there is none (no baseline instance is
// left in the bake, or none had traffic) the one the rollout's latest
// verdict measured, with when (0 when measured now).
func rememberBaseline(c *models.AnalysisCheck, measured *float64, s Subject) (*float64, int64) {
	if !c.GetRelative() || measured != nil {
		return measured, 0
	}
	if v, at, ok := s.Judgement.LastBaseline(c.GetName()); ok {
		return &v, at
	}
	return nil, 0
}

// withRemembered says in r's reason that its baseline value was the one
// measured at (Unix nanoseconds), when it was not measured now.
func withRemembered(r *models.AnalysisCheckResult, at int64) *models.AnalysisCheckResult {
	if at != 0 {
		r.Reason += " (baseline as measured at " + time.Unix(0, at).UTC().Format("15:04:05") + ")"
	}
	return r
}

func (a *Analyst) boardSignal(name, processGuid, definitionID string, instances int) *float64 {
	if a.signals == nil {
		return nil
	}
	v, ok := models.BoardSignal(a.signals.Figures(processGuid, definitionID, instances), name)
	if !ok {
		return nil
	}
	return &v
}

// finite is v, or nil when it is NaN or infinite (a rate over no
// requests divides 0 by 0): no value to judge.
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
