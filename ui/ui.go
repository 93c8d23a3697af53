// Package ui serves the board's dashboard: a single page of plain HTML,
// CSS and JavaScript modules, embedded in the binary, that reads the API
// with the browser's own credentials (on a board with mutual TLS, the
// operator certificate the browser presents) and follows the event
// stream. Nothing is built and nothing is fetched from elsewhere: what is
// in static/ is what the browser gets.
package ui

import (
	"bytes"
	"embed"
	"html/template"
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

// plainHTTPPage is the page a browser gets when it asks a board with
// mutual TLS in plain HTTP. It cannot help the browser that asks in
// https:// without a certificate: the board ends that handshake, and the
// browser shows its own error, which this page names.
var plainHTTPPage = template.Must(template.New("plain").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Corkboard: use https</title></head>
<body style="font: 15px/1.5 system-ui, sans-serif; max-width: 46em; margin: 2em auto; padding: 0 1em">
<h1>This board speaks HTTPS, with client certificates</h1>
<p>Its dashboard is at {{if .}}<a href="https://{{.}}/ui/">https://{{.}}/ui/</a>{{else}}https://(this address)/ui/{{end}}.
The board serves it only to a browser that presents a client certificate of the board's CA:
an operator certificate sees everything, an api-client one everything but the cells.</p>
<p>Import the operator certificate into the browser as a PKCS#12 file (made from
<code>operator.crt</code> and <code>operator.key</code> with <code>openssl pkcs12 -export</code>),
trust the CA that signed the board's certificate, then open the address above and pick the
certificate when asked.</p>
<p>Without a certificate, or with one of another CA, the board ends the TLS handshake before any
page can be sent: the browser shows only its own error, such as
<code>ERR_BAD_SSL_CLIENT_AUTH_CERT</code> or "did not accept your login certificate".</p>
</body></html>
`))

// PlainHTTPPage is the HTML a board with mutual TLS answers a plain HTTP
// request with (httpserver.Server.PlainHTTP): where the dashboard is for
// host (the request's Host, escaped; empty: none named) and the client
// certificate it needs.
func PlainHTTPPage(host string) []byte {
	var out bytes.Buffer
	if err := plainHTTPPage.Execute(&out, host); err != nil {
		panic("ui: " + err.Error()) // a fixed template of one string: it always executes
	}
	return out.Bytes()
}
