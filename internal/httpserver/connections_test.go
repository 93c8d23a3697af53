package httpserver_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/httpserver"
)

// keptAlive is a connection from the loopback address from that has had
// one request answered and stays open; nil when the server closed it
// instead of answering.
func keptAlive(address, from string) net.Conn {
	GinkgoHelper()
	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	conn, err := dialer.Dial("tcp", address)
	Expect(err).NotTo(HaveOccurred())
	Expect(conn.SetDeadline(time.Now().Add(5 * time.Second))).To(Succeed())
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		conn.Close()
		return nil
	}
	resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	DeferCleanup(func() { conn.Close() })
	return conn
}

var _ = Describe("Connection limits", func() {
	// The worked example of ConnectionLimits, step by step, on loopback
	// addresses.
	It("closes a connection past the cap of its address or of all as it is accepted, and takes one again once one closes", func() {
		limits := &httpserver.ConnectionLimits{PerAddress: 2, Total: 3}
		address := start(&httpserver.Server{
			Handler:     http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
			Connections: limits,
		})

		a := keptAlive(address, "127.0.0.1")
		Expect(a).NotTo(BeNil())
		Expect(keptAlive(address, "127.0.0.1")).NotTo(BeNil())
		Expect(limits.Open()).To(Equal(2))

		Expect(keptAlive(address, "127.0.0.1")).To(BeNil())
		Expect(limits.Refused(httpserver.LimitConnectionsPerAddress)).To(Equal(int64(1)))

		Expect(keptAlive(address, "127.0.0.2")).NotTo(BeNil())
		Expect(limits.Open()).To(Equal(3))

		Expect(keptAlive(address, "127.0.0.3")).To(BeNil())
		Expect(limits.Refused(httpserver.LimitConnections)).To(Equal(int64(1)))

		a.Close()
		Eventually(limits.Open).Should(Equal(2))
		Expect(keptAlive(address, "127.0.0.1")).NotTo(BeNil())
		Expect(limits.Open()).To(Equal(3))
		Expect(limits.Refused(httpserver.LimitConnectionsPerAddress)).To(Equal(int64(1)))
		Expect(limits.Refused(httpserver.LimitConnections)).To(Equal(int64(1)))
	})

	It("counts a connection the server closes itself (idle past its timeout) as closed", func() {
		limits := &httpserver.ConnectionLimits{PerAddress: 1}
		address := start(&httpserver.Server{
			Handler:     http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
			Connections: limits,
			IdleTimeout: 200 * time.Millisecond,
		})
		Expect(keptAlive(address, "127.0.0.1")).NotTo(BeNil())
		Expect(limits.Open()).To(Equal(1))
		Eventually(limits.Open).Should(BeZero())
		Expect(keptAlive(address, "127.0.0.1")).NotTo(BeNil())
	})
})
