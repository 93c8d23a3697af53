package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"

	"code.cloudfoundry.org/lager/v3/lagerctx"
)

// RequestIDHeader carries a request's id, in both directions.
const RequestIDHeader = "X-Request-Id"

// maxRequestIDLength bounds what a caller may put into every log line.
const maxRequestIDLength = 128

// requestID is the caller's id when it is printable ASCII without spaces
// and of a sane length, so that it can be logged as is; a new one otherwise.
func requestID(r *http.Request) string {
	if id := r.Header.Get(RequestIDHeader); isSaneRequestID(id) {
		return id
	}
	b := make([]byte, 16)
	rand.Read(b) //nolint:errcheck // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b)
}

func isSaneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// context is the request's context carrying the request's logger, so the
// store can log under the same request id, and what the request says of its
// caller, for the operations writes record (see noteOperation).
func (c *call) context(r *http.Request) context.Context {
	return withCaller(lagerctx.NewContext(r.Context(), c.logger), r, c.who)
}
