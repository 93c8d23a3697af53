package main

import (
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("layout", func() {
	l := layout{prefix: "lrp", lrps: 1000, instances: 5, cells: 100, zones: 4}

	It("spreads each LRP's instances over cells in different zones", func() {
		for lrp := range l.lrps {
			zones := map[int]bool{}
			for index := range min(l.instances, l.zones) {
				zones[l.cellOf(lrp, index)%l.zones] = true
			}
			Expect(zones).To(HaveLen(min(l.instances, l.zones)), "LRP %d", lrp)
		}
	})

	It("reports every instance once, from the cell it runs on", func() {
		reports := cellReports(l)
		Expect(reports).To(HaveLen(l.cells))
		seen := map[instanceKey]bool{}
		for cell, report := range reports {
			Expect(report).To(HaveLen(l.total() / l.cells))
			for _, r := range report {
				key := instanceKey{guid: r.ProcessGuid, index: int(r.Index)}
				Expect(seen[key]).To(BeFalse(), "%v reported twice", key)
				seen[key] = true
				lrp, err := strconv.Atoi(strings.TrimPrefix(r.ProcessGuid, l.prefix+"-"))
				Expect(err).NotTo(HaveOccurred())
				Expect(l.cellOf(lrp, int(r.Index))).To(Equal(cell))
			}
		}
		Expect(seen).To(HaveLen(l.total()))
	})
})

var _ = DescribeTable("chooseBreakage",
	func(l layout, missing, crashed, extra float64, wantMissing, wantCrashed, wantExtra int) {
		b := chooseBreakage(l, missing, crashed, extra)
		Expect(b.missing).To(HaveLen(wantMissing))
		Expect(b.crashed).To(HaveLen(wantCrashed))
		Expect(b.extraLRPs).To(HaveLen(wantExtra))

		broken := map[instanceKey]bool{}
		for _, guid := range b.extraLRPs {
			key := instanceKey{guid: guid, index: l.instances - 1}
			Expect(broken[key]).To(BeFalse(), "extra LRPs are distinct")
			broken[key] = true
		}
		for _, key := range append(append([]instanceKey{}, b.missing...), b.crashed...) {
			Expect(broken[key]).To(BeFalse(), "%v is broken one way at most", key)
			Expect(key.index).To(BeNumerically("<", l.instances))
			broken[key] = true
		}
	},
	Entry("the issue's 5% missing, 1% crashed, 1% extra of 250,000",
		layout{prefix: "lrp", lrps: 50000, instances: 5, cells: 1000, zones: 4}, 0.05, 0.01, 0.01, 12500, 2500, 2500),
	Entry("a small layout",
		layout{prefix: "lrp", lrps: 40, instances: 5, cells: 10, zones: 4}, 0.05, 0.01, 0.01, 10, 2, 2),
	Entry("crashed only, as the report scenario's restart uses it",
		layout{prefix: "rep", lrps: 100, instances: 5, cells: 10, zones: 4}, 0.0, 0.1, 0.0, 0, 50, 0),
	Entry("nothing broken",
		layout{prefix: "lrp", lrps: 10, instances: 5, cells: 10, zones: 4}, 0.0, 0.0, 0.0, 0, 0, 0),
)

var _ = Describe("cells' own addresses", func() {
	DescribeTable("numbers each cell's loopback address, leaving out last bytes 0 and 255",
		func(cell int, want string) { Expect(cellAddress(cell).String()).To(Equal(want)) },
		Entry("the first", 0, "127.1.0.1"),
		Entry("the last of a block", 253, "127.1.0.254"),
		Entry("the first of the next", 254, "127.1.1.1"),
		Entry("the last numbered", maxOwnAddresses-1, "127.1.255.254"),
	)

	DescribeTable("are used against a board on an IPv4 loopback address only",
		func(url string, want bool) { Expect(onLoopback(url)).To(Equal(want)) },
		Entry("127.0.0.1", "http://127.0.0.1:8889", true),
		Entry("IPv6's loopback, which they cannot reach", "http://[::1]:8889", false),
		Entry("a name", "http://localhost:8889", false),
		Entry("another host", "https://10.0.0.5:8889", false),
		Entry("not a URL", "http://[::1", false),
	)
})
