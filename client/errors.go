package client

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// maxBodyInError is how much of an unexpected answer an HTTPStatusError keeps.
const maxBodyInError = 512

// HTTPStatusError is a non-2xx answer that carried no typed board error, e.g.
// from a proxy in front of the board or a route this board does not know.
type HTTPStatusError struct {
	Route      string
	StatusCode int
	Status     string
	// Body is the start of the answer, for people.
	Body string
}

func (e *HTTPStatusError) Error() string {
	msg := fmt.Sprintf("%s: board answered HTTP %s", e.Route, e.Status)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

func newHTTPStatusError(route string, httpResp *http.Response, answer []byte) *HTTPStatusError {
	body := answer
	if len(body) > maxBodyInError {
		body = body[:maxBodyInError]
	}
	text := strings.TrimSpace(string(body))
	if !utf8.ValidString(text) {
		text = fmt.Sprintf("(%d bytes, not text)", len(answer))
	}
	status := httpResp.Status
	if status == "" {
		status = fmt.Sprintf("%d %s", httpResp.StatusCode, http.StatusText(httpResp.StatusCode))
	}
	return &HTTPStatusError{Route: route, StatusCode: httpResp.StatusCode, Status: status, Body: text}
}
