package models_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = DescribeTable("DownloadsToBegin",
	func(limit, active, waiting, want int32) {
		Expect(models.DownloadsToBegin(limit, active, waiting)).To(Equal(want))
	},
	Entry("the worked example, 1: two of three begin", int32(2), int32(0), int32(3), int32(2)),
	Entry("the worked example, 1: the third waits", int32(2), int32(2), int32(1), int32(0)),
	Entry("the worked example, 2: one finished, the third begins", int32(2), int32(1), int32(1), int32(1)),
	Entry("the worked example, 3: lowered below those under way, none begins", int32(1), int32(2), int32(3), int32(0)),
	Entry("the worked example, 4: no limit, all begin", int32(0), int32(7), int32(5), int32(5)),
	Entry("nothing waiting", int32(2), int32(0), int32(0), int32(0)),
	Entry("room for more than wait", int32(10), int32(1), int32(2), int32(2)),
)
