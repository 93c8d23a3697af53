package client

import (
	"fmt"
	"html"
	"mime"
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

// htmlSummary is what an HTML answer says in one line: its title, else its
// text without tags, whitespace collapsed, at most maxBodyInError bytes.
// A proxy's error page, or the page a board with TLS answers a plain HTTP
// request with ("Corkboard: use https"), would otherwise fill a terminal
// with markup.
func htmlSummary(page string) string {
	lower := strings.ToLower(page)
	if start := strings.Index(lower, "<title>"); start >= 0 {
		if end := strings.Index(lower[start:], "</title>"); end >= 0 {
			if title := strings.Join(strings.Fields(html.UnescapeString(page[start+len("<title>"):start+end])), " "); title != "" {
				return title
			}
		}
	}
	var text strings.Builder
	inTag := false
	for _, r := range page {
		switch {
		case r == '<':
			inTag = true
		case r == '>':
			inTag = false
			text.WriteByte(' ')
		case !inTag:
			text.WriteRune(r)
		}
	}
	summary := strings.Join(strings.Fields(html.UnescapeString(text.String())), " ")
	if len(summary) > maxBodyInError {
		summary = strings.ToValidUTF8(summary[:maxBodyInError], "")
	}
	return summary
}

func newHTTPStatusError(route string, httpResp *http.Response, answer []byte) *HTTPStatusError {
	body := answer
	if len(body) > maxBodyInError {
		body = body[:maxBodyInError]
	}
	text := strings.TrimSpace(string(body))
	if !utf8.ValidString(text) {
		text = fmt.Sprintf("(%d bytes, not text)", len(answer))
	} else if media, _, _ := mime.ParseMediaType(httpResp.Header.Get("Content-Type")); media == "text/html" {
		text = htmlSummary(string(answer))
	}
	status := httpResp.Status
	if status == "" {
		status = fmt.Sprintf("%d %s", httpResp.StatusCode, http.StatusText(httpResp.StatusCode))
	}
	return &HTTPStatusError{Route: route, StatusCode: httpResp.StatusCode, Status: status, Body: text}
}
