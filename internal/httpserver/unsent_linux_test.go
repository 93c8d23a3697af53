package httpserver

import (
	"net"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The unsent-bytes bound", func() {
	It("is set on every connection the server accepts", func() {
		inner, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		listener := unsentBoundListener{inner}
		DeferCleanup(listener.Close)
		client, err := net.Dial("tcp", listener.Addr().String())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(client.Close)
		conn, err := listener.Accept()
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(conn.Close)

		Expect(unsentBound(conn.(*net.TCPConn))).To(Equal(MaxUnsentBytes))
		By("which a connection left alone has not")
		Expect(unsentBound(client.(*net.TCPConn))).NotTo(Equal(MaxUnsentBytes))
	})
})
