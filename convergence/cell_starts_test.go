package convergence_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("the start governor", func() {
	// at is 12:00:00 plus ms milliseconds, in Unix nanoseconds.
	base := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(ms int64) int64 { return base.Add(time.Duration(ms) * time.Millisecond).UnixNano() }

	DescribeTable("StartsLeft",
		func(limit int32, starts []int64, now int64, wantLeft int32, wantAgain int64) {
			left, again := convergence.StartsLeft(limit, starts, now)
			Expect(left).To(Equal(wantLeft), "left")
			Expect(again).To(Equal(wantAgain), "again")
		},
		Entry("the worked example, 1: one start is outside the window, one left", int32(3),
			[]int64{at(9200), at(9700), at(8900)}, at(10000), int32(1), int64(0)),
		Entry("the worked example, 2: a fourth start fills the window until the oldest leaves", int32(3),
			[]int64{at(9200), at(9700), at(8900), at(9950)}, at(10000), int32(0), at(10200)),
		Entry("the worked example, 3: no limit", int32(0),
			[]int64{at(9200), at(9700), at(9950)}, at(10000), int32(-1), int64(0)),
		Entry("the worked example, 4: more starts than the limit leave none, until enough have left", int32(3),
			[]int64{at(9100), at(9300), at(9500), at(9700), at(9900)}, at(10000), int32(0), at(10500)),
		Entry("no starts: the whole limit", int32(5), nil, at(0), int32(5), int64(0)),
		Entry("a start exactly a window ago no longer counts", int32(1), []int64{at(9000)}, at(10000), int32(1), int64(0)),
		Entry("a start just inside the window counts", int32(1), []int64{at(9001)}, at(10000), int32(0), at(10001)),
		Entry("a start after now (another board's clock ahead) does not count", int32(1), []int64{at(10500)}, at(10000), int32(1), int64(0)),
	)

	DescribeTable("RecentStart",
		func(row convergence.ActualRow, want bool) {
			Expect(convergence.RecentStart(&row, at(10000))).To(Equal(want))
		},
		Entry("an instance placed 0.5 s ago", convergence.ActualRow{Presence: models.ActualLRP_ORDINARY, State: models.ActualLRP_UNCLAIMED, CellID: "a", Since: at(9500)}, true),
		Entry("claimed 0.5 s ago", convergence.ActualRow{Presence: models.ActualLRP_ORDINARY, State: models.ActualLRP_CLAIMED, CellID: "a", Since: at(9500)}, true),
		Entry("running since 0.5 s ago", convergence.ActualRow{Presence: models.ActualLRP_ORDINARY, State: models.ActualLRP_RUNNING, CellID: "a", Since: at(9500)}, true),
		Entry("running since 2 s ago", convergence.ActualRow{Presence: models.ActualLRP_ORDINARY, State: models.ActualLRP_RUNNING, CellID: "a", Since: at(8000)}, false),
		Entry("unplaced", convergence.ActualRow{Presence: models.ActualLRP_ORDINARY, State: models.ActualLRP_UNCLAIMED, Since: at(9500)}, false),
		Entry("crashed", convergence.ActualRow{Presence: models.ActualLRP_ORDINARY, State: models.ActualLRP_CRASHED, CellID: "a", Since: at(9500)}, false),
		Entry("retiring, told to stop 0.5 s ago", convergence.ActualRow{Presence: models.ActualLRP_RETIRING, State: models.ActualLRP_RUNNING, CellID: "a", Since: at(9500), StopRequested: true}, false),
		Entry("an evacuating copy", convergence.ActualRow{Presence: models.ActualLRP_EVACUATING, State: models.ActualLRP_RUNNING, CellID: "a", Since: at(9500)}, false),
	)
})
