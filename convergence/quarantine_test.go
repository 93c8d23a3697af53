package convergence_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
)

var _ = Describe("QuarantineSpikes", func() {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	memory := convergence.CrashMemory{Window: 10 * time.Minute, SpikeMin: 10, SpikeFactor: 3}
	// crashes are n crashes on cell, one a minute... from first (a time
	// before now), 20 s apart.
	crashes := func(cell string, n int, first time.Time) []convergence.CrashRow {
		var out []convergence.CrashRow
		for i := range n {
			out = append(out, convergence.CrashRow{ProcessGuid: "web", DefinitionID: "v1", CellID: cell, At: first.Add(time.Duration(i) * 20 * time.Second).UnixNano()})
		}
		return out
	}
	cells := func(rows ...convergence.CellRow) []convergence.CellRow { return rows }
	at := func(t time.Time) int64 { return t.UnixNano() }
	spike := func(cell string, n, median int32, cleared int64) convergence.CellQuarantine {
		return convergence.CellQuarantine{CellID: cell, ClearedAt: cleared,
			Reason: "crash spike: " + itoa(n) + " crashes within 10m0s, the cells' median " + itoa(median) + " (quarantine_on_crash_spike)"}
	}

	DescribeTable("which cells the board quarantines",
		func(m convergence.CrashMemory, crashRows []convergence.CrashRow, cellRows []convergence.CellRow, now time.Time, want []convergence.CellQuarantine) {
			Expect(convergence.QuarantineSpikes(m, crashRows, cellRows, now)).To(Equal(want))
		},
		Entry("the worked example, 1: cell-a spikes", memory,
			append(crashes("cell-a", 12, now.Add(-9*time.Minute)), crashes("cell-b", 1, now.Add(-2*time.Minute))...),
			cells(convergence.CellRow{CellID: "cell-a"}, convergence.CellRow{CellID: "cell-b"}, convergence.CellRow{CellID: "cell-c"}),
			now, []convergence.CellQuarantine{spike("cell-a", 12, 1, 0)}),
		Entry("the worked example, 2: cleared after its crashes, it stays in service", memory,
			append(crashes("cell-a", 12, now.Add(-9*time.Minute)), crashes("cell-b", 1, now.Add(-2*time.Minute))...),
			cells(convergence.CellRow{CellID: "cell-a", QuarantineClearedAt: at(now.Add(time.Minute))}, convergence.CellRow{CellID: "cell-b"}, convergence.CellRow{CellID: "cell-c"}),
			now.Add(2*time.Minute), nil),
		Entry("the worked example, 3: ten crashes after the clear quarantine it again", memory,
			append(append(crashes("cell-a", 12, now.Add(-9*time.Minute)), crashes("cell-b", 1, now.Add(-2*time.Minute))...),
				crashes("cell-a", 10, now.Add(90*time.Second))...),
			cells(convergence.CellRow{CellID: "cell-a", QuarantineClearedAt: at(now.Add(time.Minute))}, convergence.CellRow{CellID: "cell-b"}, convergence.CellRow{CellID: "cell-c"}),
			now.Add(5*time.Minute), []convergence.CellQuarantine{spike("cell-a", 10, 1, at(now.Add(time.Minute)))}),
		Entry("the worked example, 4: quarantined already, no decision", memory,
			crashes("cell-a", 12, now.Add(-9*time.Minute)),
			cells(convergence.CellRow{CellID: "cell-a", Quarantined: true}, convergence.CellRow{CellID: "cell-b"}, convergence.CellRow{CellID: "cell-c"}),
			now, nil),
		Entry("no window, no quarantine", convergence.CrashMemory{},
			crashes("cell-a", 12, now.Add(-9*time.Minute)),
			cells(convergence.CellRow{CellID: "cell-a"}, convergence.CellRow{CellID: "cell-b"}),
			now, nil),
		Entry("crashes spread over every cell: no spike", memory,
			append(crashes("cell-a", 12, now.Add(-9*time.Minute)), crashes("cell-b", 10, now.Add(-9*time.Minute))...),
			cells(convergence.CellRow{CellID: "cell-a"}, convergence.CellRow{CellID: "cell-b"}),
			now, nil),
	)
})

func itoa(n int32) string {
	return fmt.Sprint(n)
}
