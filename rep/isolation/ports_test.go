package isolation_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/rep/isolation"
)

var _ = Describe("BindablePorts", func() {
	cell := isolation.PortRange{First: 61000, Last: 61099}
	linuxDefault := isolation.PortRange{First: 32768, Last: 60999}

	DescribeTable("which TCP ports an isolated instance may bind",
		func(own []uint32, cell, ephemeral isolation.PortRange, want []uint32) {
			Expect(isolation.BindablePorts(own, cell, ephemeral)).To(Equal(want))
		},
		Entry("example 1: its own ports, and port 0 since the kernel picks it below the cell's range",
			[]uint32{61005, 61004}, cell, linuxDefault, []uint32{0, 61004, 61005}),
		Entry("example 2: an ephemeral range reaching into the cell's: its own ports only",
			[]uint32{61004, 61005}, cell, isolation.PortRange{First: 32768, Last: 65535}, []uint32{61004, 61005}),
		Entry("example 3: no ports of its own: port 0 only",
			nil, cell, linuxDefault, []uint32{0}),
		Entry("no ports, and port 0 could land in the cell's range: nothing",
			nil, cell, isolation.PortRange{First: 61099, Last: 61200}, nil),
		Entry("an ephemeral range just above the cell's",
			[]uint32{61000}, cell, isolation.PortRange{First: 61100, Last: 65535}, []uint32{0, 61000}),
		Entry("an ephemeral range it cannot read: no port 0",
			[]uint32{61000}, cell, isolation.PortRange{}, []uint32{61000}),
		Entry("a cell range it was not told: no port 0",
			[]uint32{61000}, isolation.PortRange{}, linuxDefault, []uint32{61000}),
		Entry("a repeated port once",
			[]uint32{61001, 61001}, cell, linuxDefault, []uint32{0, 61001}),
	)

	It("reads the kernel's ephemeral range, and knows none from a file it cannot read", func() {
		file := filepath.Join(GinkgoT().TempDir(), "ip_local_port_range")
		Expect(os.WriteFile(file, []byte("32768\t60999\n"), 0o644)).To(Succeed())
		Expect(isolation.ReadEphemeralPorts(file)).To(Equal(isolation.PortRange{First: 32768, Last: 60999}))
		for _, bad := range []string{"", "32768", "a b", "0 100", "100 70000"} {
			Expect(os.WriteFile(file, []byte(bad), 0o644)).To(Succeed())
			Expect(isolation.ReadEphemeralPorts(file)).To(Equal(isolation.PortRange{}), bad)
		}
		Expect(isolation.ReadEphemeralPorts(filepath.Join(file, "missing"))).To(Equal(isolation.PortRange{}))
	})
})
