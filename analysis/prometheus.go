package analysis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// maxAnswerBytes bounds what is read of a Prometheus or webhook answer.
const maxAnswerBytes = 1 << 20

// query runs an instant query on the Prometheus HTTP API
// (GET /api/v1/query) and returns its one number: a scalar, or a vector of
// exactly one sample. No sample is no value (nil, no error); several are
// an error, since a check bounds one number (sum or max them in the
// query).
func (a *Analyst) query(ctx context.Context, promQL string) (*float64, error) {
	if a.prometheus == "" {
		return nil, errors.New("the board has no prometheus_url")
	}
	u := strings.TrimSuffix(a.prometheus, "/") + "/api/v1/query?" + url.Values{"query": {promQL}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return nil, fmt.Errorf("prometheus answered %s, not its API's JSON", resp.Status)
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("prometheus: %s", answer.Error)
	}
	var sample []json.RawMessage
	switch answer.Data.ResultType {
	case "scalar":
		if err := json.Unmarshal(answer.Data.Result, &sample); err != nil {
			return nil, fmt.Errorf("prometheus: scalar: %w", err)
		}
	case "vector":
		var vector []struct {
			Value []json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(answer.Data.Result, &vector); err != nil {
			return nil, fmt.Errorf("prometheus: vector: %w", err)
		}
		switch len(vector) {
		case 0:
			return nil, nil
		case 1:
			sample = vector[0].Value
		default:
			return nil, fmt.Errorf("prometheus: the query returned %d series, not one (sum or max them)", len(vector))
		}
	default:
		return nil, fmt.Errorf("prometheus: the query returned a %s, not a number", answer.Data.ResultType)
	}
	if len(sample) != 2 {
		return nil, errors.New("prometheus: a sample is not [time, value]")
	}
	var text string
	if err := json.Unmarshal(sample[1], &text); err != nil {
		return nil, fmt.Errorf("prometheus: value: %w", err)
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return nil, fmt.Errorf("prometheus: value %q: %w", text, err)
	}
	return finite(v), nil
}
