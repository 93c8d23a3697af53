package isolation_test

import (
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/rep/isolation"
)

var _ = Describe("the init's Multipath TCP filter", func() {
	It("answers a Multipath TCP socket as a kernel without MPTCP does, and leaves TCP alone", func() {
		// Without the filter this kernel opens one: the filter is what
		// says no below.
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 262)
		Expect(err).NotTo(HaveOccurred(), "the spec needs a kernel with Multipath TCP enabled (net.mptcp.enabled = 1)")
		syscall.Close(fd)

		errs, err := isolation.SocketsOnFilteredThread(262, 0, syscall.IPPROTO_TCP)
		Expect(err).NotTo(HaveOccurred())
		Expect(errs).To(Equal([]error{syscall.EPROTONOSUPPORT, nil, nil}))
	})
})
