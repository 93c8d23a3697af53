package executor

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

// What a failed check says: the short form crash reasons quote, and the
// output a health report carries, naming the address the cell checked.
var _ = Describe("a failed check's output", func() {
	checkOf := func(kind models.HealthCheck_Type, target string) *healthCheck {
		host, port, err := net.SplitHostPort(target)
		Expect(err).NotTo(HaveOccurred())
		hostPort, err := strconv.ParseUint(port, 10, 32)
		Expect(err).NotTo(HaveOccurred())
		check, err := newHealthCheck(&models.HealthCheck{Type: kind, Port: 8080, Path: "/health", TimeoutMs: 1000},
			host, []*models.PortMapping{{ContainerPort: 8080, HostPort: uint32(hostPort)}})
		Expect(err).NotTo(HaveOccurred())
		return check
	}

	// closedPort is an address nothing listens on.
	closedPort := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		addr := l.Addr().String()
		Expect(l.Close()).To(Succeed())
		return addr
	}

	It("names the URL and the status line of an HTTP answer that is not 2xx", func() {
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		DeferCleanup(server.Close)
		target := server.Listener.Addr().String()
		err := checkOf(models.HealthCheck_HTTP, target).run(context.Background())
		Expect(err).To(MatchError("GET /health on port 8080: 503"), "crash reasons keep their form")
		Expect(checkOutput(err)).To(Equal(fmt.Sprintf("GET http://%s/health: 503 Service Unavailable", target)))
	})

	It("names the URL and the connection error of an HTTP check nothing answers", func() {
		target := closedPort()
		err := checkOf(models.HealthCheck_HTTP, target).run(context.Background())
		Expect(err).To(MatchError("GET /health on port 8080: connection refused"))
		Expect(checkOutput(err)).To(Equal(fmt.Sprintf("GET http://%s/health: connection refused", target)))
	})

	It("names the URL and the timeout of an HTTP check answered too late", func() {
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(3 * time.Second):
			}
		}))
		DeferCleanup(server.Close)
		target := server.Listener.Addr().String()
		err := checkOf(models.HealthCheck_HTTP, target).run(context.Background())
		Expect(checkOutput(err)).To(Equal(fmt.Sprintf("GET http://%s/health: no answer within 1s", target)))
	})

	It("names the address and the dial error of a TCP check", func() {
		target := closedPort()
		err := checkOf(models.HealthCheck_TCP, target).run(context.Background())
		Expect(err).To(MatchError("TCP connect to port 8080: connection refused"))
		Expect(checkOutput(err)).To(Equal(fmt.Sprintf("TCP connect to %s: connection refused", target)))
	})

	It("cuts an output past MaxCheckFailureBytes", func() {
		long := &checkFailure{short: "x", output: fmt.Sprintf("GET http://127.0.0.1:1/%0600d: 503", 0)}
		Expect(checkOutput(long)).To(HaveLen(models.MaxCheckFailureBytes))
	})
})
