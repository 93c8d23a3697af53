package convergence_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
)

var _ = Describe("CrashMemory", func() {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	memory := convergence.DefaultCrashMemory()
	crash := func(guid, definition, cell string, ago time.Duration) convergence.CrashRow {
		return convergence.CrashRow{ProcessGuid: guid, DefinitionID: definition, CellID: cell, At: now.Add(-ago).UnixNano()}
	}
	web := func(definition string) convergence.CrashPair {
		return convergence.CrashPair{ProcessGuid: "web", DefinitionID: definition}
	}

	It("has documented defaults", func() {
		Expect(memory).To(Equal(convergence.CrashMemory{Window: 10 * time.Minute, SpikeMin: 10, SpikeFactor: 3}))
		Expect(convergence.DefaultConfig().CrashMemory).To(Equal(memory))
	})

	DescribeTable("AvoidedCells",
		func(m convergence.CrashMemory, crashes []convergence.CrashRow, want map[convergence.CrashPair][]string) {
			Expect(m.AvoidedCells(crashes, now)).To(Equal(want))
		},
		Entry("no crash, nothing avoided", memory, nil, map[convergence.CrashPair][]string{}),
		Entry("worked example 1-3: by LRP and definition, within the window",
			memory, []convergence.CrashRow{
				crash("web", "v1", "cell-a", 5*time.Minute),
				crash("web", "v1", "cell-b", 20*time.Minute),
				crash("web", "v2", "cell-c", 2*time.Minute),
			},
			map[convergence.CrashPair][]string{web("v1"): {"cell-a"}, web("v2"): {"cell-c"}}),
		Entry("sorted and each cell once",
			memory, []convergence.CrashRow{
				crash("web", "v1", "cell-b", time.Minute),
				crash("web", "v1", "cell-a", time.Minute),
				crash("web", "v1", "cell-b", 2*time.Minute),
			},
			map[convergence.CrashPair][]string{web("v1"): {"cell-a", "cell-b"}}),
		Entry("another LRP's definition of the same id is its own pair",
			memory, []convergence.CrashRow{crash("api", "v1", "cell-a", time.Minute)},
			map[convergence.CrashPair][]string{{ProcessGuid: "api", DefinitionID: "v1"}: {"cell-a"}}),
		Entry("a crash exactly a window ago is forgotten, a nanosecond later remembered",
			memory, []convergence.CrashRow{
				crash("web", "v1", "cell-a", 10*time.Minute),
				crash("web", "v1", "cell-b", 10*time.Minute-time.Nanosecond),
			},
			map[convergence.CrashPair][]string{web("v1"): {"cell-b"}}),
		Entry("window 0 remembers nothing",
			convergence.CrashMemory{}, []convergence.CrashRow{crash("web", "v1", "cell-a", 0)},
			map[convergence.CrashPair][]string{}),
	)

	counts := func(perCell map[string]int) []convergence.CrashRow {
		var crashes []convergence.CrashRow
		for cell, n := range perCell {
			for i := range n {
				crashes = append(crashes, crash("lrp", "d", cell, time.Duration(i)*time.Second))
			}
		}
		return crashes
	}
	cells := []string{"cell-a", "cell-b", "cell-c", "cell-d"}

	DescribeTable("CrashSpikes",
		func(m convergence.CrashMemory, crashes []convergence.CrashRow, want []convergence.CellCrashSpike) {
			Expect(m.CrashSpikes(crashes, cells, now)).To(Equal(want))
		},
		Entry("no crash, no spike", memory, nil, nil),
		Entry("worked example 5: 12, 1, 0, 3 has median 1; cell-a spikes",
			memory, counts(map[string]int{"cell-a": 12, "cell-b": 1, "cell-d": 3}),
			[]convergence.CellCrashSpike{{CellID: "cell-a", Crashes: 12, Median: 1}}),
		Entry("worked example 6: 12, 5, 5, 6 has median 5 and 12 < 3 × 5",
			memory, counts(map[string]int{"cell-a": 12, "cell-b": 5, "cell-c": 5, "cell-d": 6}), nil),
		Entry("exactly 3 × the median spikes",
			memory, counts(map[string]int{"cell-a": 12, "cell-b": 4, "cell-c": 4, "cell-d": 3}),
			[]convergence.CellCrashSpike{{CellID: "cell-a", Crashes: 12, Median: 4}}),
		Entry("below spike_min does not spike, however alone",
			memory, counts(map[string]int{"cell-a": 9}), nil),
		Entry("several cells spike, in cell id order",
			memory, counts(map[string]int{"cell-c": 10, "cell-a": 11}),
			[]convergence.CellCrashSpike{
				{CellID: "cell-a", Crashes: 11, Median: 0},
				{CellID: "cell-c", Crashes: 10, Median: 0},
			}),
		Entry("crashes outside the window and on unregistered cells do not count",
			memory, append(counts(map[string]int{"cell-a": 9, "cell-gone": 30}),
				crash("lrp", "d", "cell-a", 11*time.Minute)), nil),
		Entry("window 0 reports nothing",
			convergence.CrashMemory{SpikeMin: 1, SpikeFactor: 1}, counts(map[string]int{"cell-a": 50}), nil),
	)
})
