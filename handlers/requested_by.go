package handlers

import (
	"context"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// unnamedCaller stands for a caller that sent neither a usable
// models.RequestedByHeader nor a usable User-Agent.
const unnamedCaller = "unnamed client"

// requestedBy names a request's caller as the operation a write records
// keeps it (requested_by). With a verified client certificate that is the
// certificate's identity and subject, e.g. "operator (cert CN=alice)";
// headers are not read then, since the certificate vouches for the caller
// and a header would not. Without one (development mode) it is what the
// request says of its caller: the models.RequestedByHeader when it is
// sane, else the User-Agent when that is, else unnamedCaller. Either is
// followed by " from " and the remote address of the connection
// (host:port; behind a proxy, the proxy's: forwarding headers are not
// trusted), which is all that places an unverified name.
func requestedBy(r *http.Request, c caller) string {
	if c.certificate != nil {
		return c.name() + " from " + r.RemoteAddr
	}
	who := unnamedCaller
	for _, said := range []string{r.Header.Get(models.RequestedByHeader), r.Header.Get("User-Agent")} {
		if said = strings.TrimSpace(said); isSaneCallerName(said) {
			who = said
			break
		}
	}
	return who + " from " + r.RemoteAddr
}

// isSaneCallerName accepts a name that can be shown and logged as is:
// bounded, valid UTF-8, printable (spaces allowed, no control characters,
// no line breaks).
func isSaneCallerName(name string) bool {
	if name == "" || len(name) > models.MaxRequestedByLength || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

type callerKey struct{}

// withCaller carries requestedBy(r, c) in ctx for the write handlers.
func withCaller(ctx context.Context, r *http.Request, c caller) context.Context {
	return context.WithValue(ctx, callerKey{}, requestedBy(r, c))
}

// callerOf is the requestedBy withCaller put in ctx ("" for none).
func callerOf(ctx context.Context) string {
	who, _ := ctx.Value(callerKey{}).(string)
	return who
}

// noteOperation attaches a db.OperationNote naming the caller to ctx, for
// a write that records an operation: the store fills in the operation it
// recorded, whose id the handler answers.
func noteOperation(ctx context.Context) (context.Context, *db.OperationNote) {
	note := &db.OperationNote{RequestedBy: callerOf(ctx)}
	return db.WithOperationNote(ctx, note), note
}
