package droplet_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/droplet"
)

var _ = Describe("Server", func() {
	var (
		dir    string
		files  *droplet.Server
		server *httptest.Server
		logged []string
		logMu  sync.Mutex
	)

	get := func(path string) (int, string) {
		GinkgoHelper()
		resp, err := http.Get(server.URL + path)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, string(body)
	}

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "hello-v1.tgz"), []byte("droplet one"), 0o644)).To(Succeed())
		Expect(os.MkdirAll(filepath.Join(dir, "lrps"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "lrps", "hello.json"), []byte("{}"), 0o644)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(filepath.Dir(dir), "outside"), []byte("secret"), 0o644)).To(Succeed())

		logged = nil
		files = droplet.NewServer(dir)
		files.Logf = func(format string, args ...any) {
			logMu.Lock()
			defer logMu.Unlock()
			logged = append(logged, fmt.Sprintf(format, args...))
		}
		server = httptest.NewServer(files)
		DeferCleanup(server.Close)
	})

	It("serves the directory's files and counts the requests for each", func() {
		Expect(files.Requests("hello-v1.tgz")).To(Equal(0))
		for range 3 {
			code, body := get("/hello-v1.tgz")
			Expect(code).To(Equal(http.StatusOK))
			Expect(body).To(Equal("droplet one"))
		}
		code, body := get("/lrps/hello.json")
		Expect(code).To(Equal(http.StatusOK))
		Expect(body).To(Equal("{}"))

		Expect(files.Requests("hello-v1.tgz")).To(Equal(3))
		Expect(files.Requests("/hello-v1.tgz")).To(Equal(3), "a leading slash names the same file")
		Expect(files.Requests("lrps/hello.json")).To(Equal(1))
		Expect(files.Requests("hello-v2.tgz")).To(Equal(0))
		Expect(files.Counts()).To(Equal(map[string]int{"hello-v1.tgz": 3, "lrps/hello.json": 1}))
		Expect(files.String()).To(Equal("droplet requests: hello-v1.tgz=3 lrps/hello.json=1"))
	})

	It("counts requests for files it does not have, and answers 404", func() {
		code, _ := get("/hello-v9.tgz")
		Expect(code).To(Equal(http.StatusNotFound))
		Expect(files.Requests("hello-v9.tgz")).To(Equal(1))
	})

	It("counts concurrent downloads exactly", func() {
		var wg sync.WaitGroup
		for range 20 {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				resp, err := http.Get(server.URL + "/hello-v1.tgz")
				Expect(err).NotTo(HaveOccurred())
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}()
		}
		wg.Wait()
		Expect(files.Requests("hello-v1.tgz")).To(Equal(20))
	})

	It("serves nothing outside its directory", func() {
		code, body := get("/../outside")
		Expect(code).NotTo(Equal(http.StatusOK))
		Expect(body).NotTo(ContainSubstring("secret"))
		code, body = get("/%2e%2e/outside")
		Expect(code).NotTo(Equal(http.StatusOK))
		Expect(body).NotTo(ContainSubstring("secret"))
	})

	It("answers only GET and HEAD", func() {
		resp, err := http.Post(server.URL+"/hello-v1.tgz", "text/plain", strings.NewReader("x"))
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed))
		Expect(resp.Header.Get("Allow")).To(Equal("GET, HEAD"))

		resp, err = http.Head(server.URL + "/hello-v1.tgz")
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(resp.ContentLength).To(Equal(int64(len("droplet one"))))
	})

	It("logs each request with its status and size", func() {
		get("/hello-v1.tgz")
		get("/nope")
		logMu.Lock()
		defer logMu.Unlock()
		Expect(logged).To(HaveLen(2))
		Expect(logged[0]).To(MatchRegexp(`^127\.0\.0\.1:\d+ GET /hello-v1\.tgz: 200, 11 bytes in `))
		Expect(logged[1]).To(MatchRegexp(`GET /nope: 404, `))
	})
})
