package httpserver_test

import (
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"code.cloudfoundry.org/lager/v3/lagertest"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/tedsuo/ifrit"

	"github.com/corkboard/corkboard/internal/httpserver"
)

var _ = Describe("Server", func() {
	It("finishes the requests in flight on a signal, then exits cleanly", func() {
		entered := make(chan struct{})
		release := make(chan struct{})
		slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			<-release
			io.WriteString(w, "finished")
		})

		// Find a free port for the server to take.
		probe, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		address := probe.Addr().String()
		Expect(probe.Close()).To(Succeed())

		logger := lagertest.NewTestLogger("server-test")
		process := ifrit.Invoke(&httpserver.Server{Logger: logger, Address: address, Handler: slow, ShutdownTimeout: time.Minute})
		Expect(logger.LogMessages()).To(ContainElement("server-test.listening"))

		type answer struct {
			body string
			err  error
		}
		answers := make(chan answer, 1)
		go func() {
			resp, err := http.Get("http://" + address + "/slow")
			if err != nil {
				answers <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			answers <- answer{body: string(body), err: err}
		}()
		Eventually(entered).Should(BeClosed())

		process.Signal(syscall.SIGTERM)
		// Draining: the listener is closed to new connections...
		Eventually(func() error {
			conn, err := net.Dial("tcp", address)
			if err == nil {
				conn.Close()
			}
			return err
		}).WithTimeout(10 * time.Second).Should(HaveOccurred())
		// ...while the request in flight keeps the server from exiting.
		Consistently(process.Wait()).ShouldNot(Receive())

		close(release)
		var got answer
		Eventually(answers).WithTimeout(10 * time.Second).Should(Receive(&got))
		Expect(got.err).NotTo(HaveOccurred())
		Expect(got.body).To(Equal("finished"))
		Eventually(process.Wait()).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
	})

	It("fails to start when the address is taken", func() {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		defer taken.Close()

		process := ifrit.Invoke(&httpserver.Server{Logger: lagertest.NewTestLogger("server-test"), Address: taken.Addr().String(), Handler: http.NotFoundHandler(), ShutdownTimeout: time.Second})
		Eventually(process.Wait()).Should(Receive(MatchError(ContainSubstring("listen on " + taken.Addr().String()))))
	})
})
