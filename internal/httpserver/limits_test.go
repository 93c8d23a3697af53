package httpserver_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/types"
	"github.com/tedsuo/ifrit"

	"github.com/corkboard/corkboard/internal/certs"
	"github.com/corkboard/corkboard/internal/httpserver"
)

// start runs server on a free loopback port and returns its address; the
// server is stopped after the spec.
func start(server *httpserver.Server) string {
	GinkgoHelper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	server.Listener = listener
	if server.Logger == nil {
		server.Logger = lagertest.NewTestLogger("limits-test")
	}
	if server.ShutdownTimeout == 0 {
		server.ShutdownTimeout = 5 * time.Second
	}
	process := ifrit.Invoke(server)
	DeferCleanup(func() {
		process.Signal(syscall.SIGTERM)
		Eventually(process.Wait()).WithTimeout(10 * time.Second).Should(Receive())
	})
	return listener.Addr().String()
}

var _ = Describe("Server limits", func() {
	It("cuts off 200 clients trickling request bodies at the read timeout, and lets their connections and goroutines go", func() {
		const clients = 200
		const readTimeout = time.Second
		var handled, failedReads atomic.Int32
		reader := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer handled.Add(1)
			if _, err := io.ReadAll(r.Body); err != nil {
				failedReads.Add(1)
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			io.WriteString(w, "read it all")
		})
		address := start(&httpserver.Server{Handler: reader, ReadTimeout: readTimeout})
		// Let the server's own goroutines settle before counting.
		time.Sleep(100 * time.Millisecond)
		baseline := runtime.NumGoroutine()

		// Each client promises 1,000 bytes and sends one every 100 ms:
		// it would take 100 s.
		var cutOff sync.WaitGroup
		durations := make(chan time.Duration, clients)
		began := time.Now()
		for range clients {
			conn, err := net.Dial("tcp", address)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() { conn.Close() })
			_, err = fmt.Fprintf(conn, "POST /upload HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n", address)
			Expect(err).NotTo(HaveOccurred())
			cutOff.Add(2)
			go func() {
				defer cutOff.Done()
				defer GinkgoRecover()
				for {
					if _, err := conn.Write([]byte("x")); err != nil {
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
			go func() {
				defer cutOff.Done()
				// The server answers (or not) and closes: the read ends
				// with EOF or a reset either way.
				io.Copy(io.Discard, conn)
				durations <- time.Since(began)
				conn.Close()
			}()
		}

		finished := make(chan struct{})
		go func() { cutOff.Wait(); close(finished) }()
		Eventually(finished).WithTimeout(20 * time.Second).Should(BeClosed())
		Expect(handled.Load()).To(BeEquivalentTo(clients))
		Expect(failedReads.Load()).To(BeEquivalentTo(clients), "every body read ended in the timeout")
		close(durations)
		for d := range durations {
			// Each was cut at about the timeout after its request began:
			// well before the 100 s its body would take.
			Expect(d).To(BeNumerically("<", readTimeout+5*time.Second))
		}
		// The server's connection goroutines, and the clients', are gone.
		Eventually(runtime.NumGoroutine).WithTimeout(10 * time.Second).Should(BeNumerically("<=", baseline+5))
	})

	It("keeps an event stream open past the read and write timeouts while its handler moves the write deadline at each write", func() {
		const timeout = 300 * time.Millisecond
		streamed := make(chan error, 1)
		stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := io.ReadAll(r.Body); err != nil {
				streamed <- err
				return
			}
			controller := http.NewResponseController(w)
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 20 {
				// As handlers/events.go does before each flush.
				controller.SetWriteDeadline(time.Now().Add(timeout))
				if _, err := fmt.Fprintf(w, "data: %d\n\n", i); err != nil {
					streamed <- err
					return
				}
				if err := controller.Flush(); err != nil {
					streamed <- err
					return
				}
				select {
				case <-r.Context().Done():
					streamed <- fmt.Errorf("context ended after %d events: %w", i, context.Cause(r.Context()))
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
			streamed <- nil
		})
		address := start(&httpserver.Server{Handler: stream, ReadTimeout: timeout, WriteTimeout: timeout})

		for _, method := range []string{http.MethodPost, http.MethodGet} {
			var body io.Reader
			if method == http.MethodPost {
				body = strings.NewReader("a request body, as POST /v1/events has")
			}
			req, err := http.NewRequest(method, "http://"+address+"/events", body)
			Expect(err).NotTo(HaveOccurred())
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			events := 0
			scanner := bufio.NewScanner(resp.Body)
			for scanner.Scan() {
				if strings.HasPrefix(scanner.Text(), "data: ") {
					events++
				}
			}
			resp.Body.Close()
			Expect(events).To(Equal(20), method)
			Eventually(streamed).Should(Receive(BeNil()), method)
		}
	})

	It("ends an ordinary answer that takes longer than the write timeout", func() {
		slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(600 * time.Millisecond)
			io.WriteString(w, "too late")
		})
		address := start(&httpserver.Server{Handler: slow, WriteTimeout: 200 * time.Millisecond})
		resp, err := http.Get("http://" + address + "/")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		Expect(err).To(HaveOccurred())
	})

	It("refuses request headers over 16 KiB", func() {
		address := start(&httpserver.Server{Handler: http.NotFoundHandler()})
		req, err := http.NewRequest(http.MethodGet, "http://"+address+"/", nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("X-Padding", strings.Repeat("p", 16<<10+1))
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusRequestHeaderFieldsTooLarge))

		req.Header.Set("X-Padding", strings.Repeat("p", 15<<10))
		resp, err = http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
	})
})

var _ = Describe("Server with TLS", func() {
	var dir string

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		_, _, err := certs.WriteSet(dir, certs.SetOptions{Cells: []string{"cell-z1"}})
		Expect(err).NotTo(HaveOccurred())
	})

	files := func(name string) certs.Files {
		return certs.Files{CACert: filepath.Join(dir, "ca.crt"), Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key")}
	}

	It("serves HTTPS to clients with a certificate of the CA, and says https in its URL", func() {
		serverConfig, err := files("board").ServerConfig()
		Expect(err).NotTo(HaveOccurred())
		whoAmI := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, certs.PeerIdentity(r.TLS).URI().String())
		})
		logger := lagertest.NewTestLogger("tls-test")
		var announced string
		address := start(&httpserver.Server{Logger: logger, Handler: whoAmI, TLSConfig: serverConfig, Announce: func(url string) { announced = url }})
		Expect(announced).To(Equal("https://" + address))

		clientConfig, err := files("operator").ClientConfig()
		Expect(err).NotTo(HaveOccurred())
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: clientConfig}}
		resp, err := client.Get("https://" + address + "/")
		Expect(err).NotTo(HaveOccurred())
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).To(Equal("corkboard://role/operator"))
		Expect(resp.ProtoMajor).To(Equal(1), "HTTP/1.1 only")

		// Without a certificate: no handshake, and the log says why.
		pool, err := certs.LoadPool(filepath.Join(dir, "ca.crt"))
		Expect(err).NotTo(HaveOccurred())
		anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		_, err = anonymous.Get("https://" + address + "/")
		Expect(err).To(HaveOccurred())
		Eventually(logger.Buffer()).Should(gbytesSay(`tls-test.http-server-error.*TLS handshake error.*certificate`))

		// Plain HTTP gets nothing it could use.
		resp, err = http.Get("http://" + address + "/")
		if err == nil {
			resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
		}
	})

	It("answers a plain HTTP request with the PlainHTTP page for its host, and serves TLS clients as ever", func() {
		serverConfig, err := files("board").ServerConfig()
		Expect(err).NotTo(HaveOccurred())
		ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") })
		page := func(host string) []byte { return []byte("<p>go to https://" + host + "/</p>") }
		address := start(&httpserver.Server{Handler: ok, TLSConfig: serverConfig, PlainHTTP: page})

		for _, path := range []string{"/ui/", "/v1/desired_lrps/list"} {
			resp, err := http.Get("http://" + address + path)
			Expect(err).NotTo(HaveOccurred())
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
			Expect(resp.Header.Get("Content-Type")).To(Equal("text/html; charset=utf-8"))
			Expect(string(body)).To(Equal("<p>go to https://"+address+"/</p>"), "the page, never the handler's answer")
		}

		clientConfig, err := files("operator").ClientConfig()
		Expect(err).NotTo(HaveOccurred())
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: clientConfig}}
		for range 3 {
			resp, err := client.Get("https://" + address + "/")
			Expect(err).NotTo(HaveOccurred())
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			Expect(err).NotTo(HaveOccurred())
			Expect(string(body)).To(Equal("served"))
		}

		// Without a certificate the handshake still fails: no page can be
		// sent before it.
		pool, err := certs.LoadPool(filepath.Join(dir, "ca.crt"))
		Expect(err).NotTo(HaveOccurred())
		anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		_, err = anonymous.Get("https://" + address + "/")
		Expect(err).To(HaveOccurred())
	})
})

func gbytesSay(pattern string) types.GomegaMatcher { return gbytes.Say(pattern) }
