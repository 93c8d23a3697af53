package ui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/ui"
)

var _ = Describe("the dashboard's files", func() {
	var server *httptest.Server

	BeforeEach(func() {
		mux := http.NewServeMux()
		mux.Handle("GET "+ui.Prefix, ui.Handler())
		server = httptest.NewServer(mux)
		DeferCleanup(server.Close)
	})

	get := func(path string) (*http.Response, string) {
		GinkgoHelper()
		resp, err := http.Get(server.URL + path)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return resp, string(body)
	}

	It("serves index.html at /ui/, as HTML, with a strict CSP and no-cache", func() {
		resp, body := get("/ui/")
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(resp.Header.Get("Content-Type")).To(Equal("text/html; charset=utf-8"))
		Expect(resp.Header.Get("Cache-Control")).To(Equal("no-cache"))
		Expect(resp.Header.Get("Content-Security-Policy")).To(HavePrefix("default-src 'self'"))
		Expect(resp.Header.Get("X-Content-Type-Options")).To(Equal("nosniff"))
		Expect(body).To(ContainSubstring(`<script type="module" src="js/main.js"></script>`))
	})

	It("redirects /ui to /ui/", func() {
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Get(server.URL + "/ui")
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(BeElementOf(http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect))
		Expect(resp.Header.Get("Location")).To(Equal("/ui/"))
	})

	// Every file index.html and the modules name is served with its
	// type: a module served as anything but JavaScript does not run.
	It("serves every asset the page loads, each with its type", func() {
		_, index := get("/ui/")
		assets := []string{}
		for _, m := range regexp.MustCompile(`(?:src|href)="([^"#]+)"`).FindAllStringSubmatch(index, -1) {
			assets = append(assets, m[1])
		}
		Expect(assets).To(ContainElements("app.css", "js/main.js", "favicon.svg"))
		seen := map[string]bool{}
		for len(assets) > 0 {
			name := assets[0]
			assets = assets[1:]
			if seen[name] {
				continue
			}
			seen[name] = true
			resp, body := get("/ui/" + name)
			Expect(resp.StatusCode).To(Equal(http.StatusOK), name)
			Expect(resp.Header.Get("Content-Security-Policy")).To(HavePrefix("default-src 'self'"), name)
			Expect(resp.Header.Get("Cache-Control")).To(Equal("no-cache"), name)
			switch {
			case regexp.MustCompile(`\.js$`).MatchString(name):
				Expect(resp.Header.Get("Content-Type")).To(Equal("text/javascript; charset=utf-8"), name)
				for _, m := range regexp.MustCompile(`from '\./([a-z]+\.js)'`).FindAllStringSubmatch(body, -1) {
					assets = append(assets, "js/"+m[1])
				}
			case regexp.MustCompile(`\.css$`).MatchString(name):
				Expect(resp.Header.Get("Content-Type")).To(Equal("text/css; charset=utf-8"), name)
			case regexp.MustCompile(`\.svg$`).MatchString(name):
				Expect(resp.Header.Get("Content-Type")).To(Equal("image/svg+xml"), name)
			}
		}
		Expect(seen).To(HaveKey("js/lrp.js"))
		Expect(seen).To(HaveKey("js/sse.js"))
	})

	DescribeTable("answers 404 for what it does not hold",
		func(path string) {
			resp, _ := get(path)
			Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
		},
		Entry("a missing file", "/ui/nope.js"),
		Entry("a kind of file it does not serve", "/ui/js"),
		Entry("a path out of the folder", "/ui/../ui.go"),
		Entry("an encoded path out of the folder", "/ui/%2e%2e/ui.go"),
	)

	It("answers 405 to a write, mounted without a method", func() {
		recorder := httptest.NewRecorder()
		ui.Handler().ServeHTTP(recorder, httptest.NewRequest(http.MethodPost, "/ui/", nil))
		Expect(recorder.Code).To(Equal(http.StatusMethodNotAllowed))
		Expect(recorder.Header().Get("Allow")).To(Equal("GET, HEAD"))
	})
})

var _ = Describe("the plain-HTTP page", func() {
	It("links the dashboard over https at the host asked for, and names the certificate it needs", func() {
		page := string(ui.PlainHTTPPage("127.0.0.1:8889"))
		Expect(page).To(ContainSubstring(`<a href="https://127.0.0.1:8889/ui/">https://127.0.0.1:8889/ui/</a>`))
		Expect(page).To(ContainSubstring("client certificate"))
		Expect(page).To(ContainSubstring("ERR_BAD_SSL_CLIENT_AUTH_CERT"))
	})

	It("escapes the host, which the client chose", func() {
		page := string(ui.PlainHTTPPage(`x"><script>alert(1)</script>`))
		Expect(page).NotTo(ContainSubstring("<script>"))
		Expect(page).To(ContainSubstring("&lt;script&gt;"))
	})

	It("names no address when the request named no host", func() {
		page := string(ui.PlainHTTPPage(""))
		Expect(page).NotTo(ContainSubstring("<a href"))
		Expect(page).To(ContainSubstring("https://(this address)/ui/"))
	})
})
