package analysis

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/corkboard/corkboard/models"
)

// webhook POSTs the rollout's status (its JSON, as GET rollout status
// answers it, with the definition judged and the baseline in headers) to
// the check's URL: a 2xx answer passes; any other answer, or none within
// the timeout, fails, its reason quoting the status and the start of the
// body.
func (a *Analyst) webhook(ctx context.Context, c *models.AnalysisCheck, s Subject) *models.AnalysisCheckResult {
	r := &models.AnalysisCheckResult{Name: c.GetName(), Outcome: models.AnalysisOutcome_FAIL}
	body, err := protojson.Marshal(s.Status)
	if err != nil {
		r.Reason = c.GetName() + ": " + err.Error()
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.GetUrl(), bytes.NewReader(body))
	if err != nil {
		r.Reason = c.GetName() + ": " + err.Error()
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Corkboard-Process-Guid", s.ProcessGuid)
	req.Header.Set("Corkboard-Definition-Id", s.DefinitionID)
	req.Header.Set("Corkboard-Baseline-Definition-Id", s.BaselineDefinitionID)
	req.Header.Set("Corkboard-Analysis-During", s.During)
	resp, err := a.client.Do(req)
	if err != nil {
		r.Reason = fmt.Sprintf("%s: webhook: %v", c.GetName(), err)
		return r
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		r.Outcome, r.Reason = models.AnalysisOutcome_PASS, fmt.Sprintf("%s: webhook answered %s", c.GetName(), resp.Status)
		return r
	}
	r.Reason = fmt.Sprintf("%s: webhook answered %s: %q", c.GetName(), resp.Status, bytes.TrimSpace(answer))
	return r
}
