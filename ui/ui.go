// Package ui serves the board's dashboard: a single page of plain HTML,
// CSS and JavaScript modules, embedded in the binary, that reads the API
// with the browser's own credentials (on a board with mutual TLS, the
// operator certificate the browser presents) and follows the event
// stream. Nothing is built and nothing is fetched from elsewhere: what is
// in static/ is what the browser gets.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var static embed.FS

// Prefix is where the dashboard is served.
const Prefix = "/ui/"

// ContentSecurityPolicy lets the page load only what the board itself
// serves: no inline script, no other origin, no plugin.
const ContentSecurityPolicy = "default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"

// contentTypes names the type of every kind of file static/ holds; a file
// of another kind is not served. Explicit rather than the mime package's,
// which takes the machine's /etc/mime.types into account.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

// Handler serves the dashboard under Prefix: index.html for the prefix
// itself, the other files by their path below static/, each with its
// Content-Type, Cache-Control: no-cache (the browser revalidates, so a
// new board binary is picked up at once) and the Content-Security-Policy.
// Anything else is 404; a method other than GET or HEAD is 405.
func Handler() http.Handler {
	files, err := fs.Sub(static, "static")
	if err != nil {
		panic("ui: " + err.Error()) // static is embedded: it is always there
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, Prefix)
		if !ok {
			http.NotFound(w, r)
			return
		}
		if name == "" {
			name = "index.html"
		}
		contentType, known := contentTypes[path.Ext(name)]
		if !known || !fs.ValidPath(name) {
			http.NotFound(w, r)
			return
		}
		body, err := fs.ReadFile(files, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			w.Write(body) //nolint:errcheck // the client went away
		}
	})
}
