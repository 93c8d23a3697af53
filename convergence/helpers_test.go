package convergence_test

import (
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
)

var _ = Describe("Tag sets", func() {
	DescribeTable("NormalizeTags sorts and removes duplicates",
		func(in, want []string) {
			original := slices.Clone(in)
			Expect(convergence.NormalizeTags(in)).To(Equal(want))
			Expect(in).To(Equal(original), "the input is not modified")
		},
		Entry("none", []string{}, []string(nil)),
		Entry("one", []string{"gpu"}, []string{"gpu"}),
		Entry("already sorted", []string{"gpu", "ssd"}, []string{"gpu", "ssd"}),
		Entry("unsorted", []string{"ssd", "gpu"}, []string{"gpu", "ssd"}),
		Entry("duplicates", []string{"ssd", "gpu", "ssd"}, []string{"gpu", "ssd"}),
	)

	DescribeTable("IncludesAll: a cell's sorted tags cover an LRP's",
		func(have, want []string, covered bool) {
			Expect(convergence.IncludesAll(have, want)).To(Equal(covered))
		},
		Entry("no tags wanted", []string{"gpu"}, []string(nil), true),
		Entry("nothing offered, nothing wanted", []string(nil), []string(nil), true),
		Entry("nothing offered", []string(nil), []string{"gpu"}, false),
		Entry("exact", []string{"gpu", "ssd"}, []string{"gpu", "ssd"}, true),
		Entry("superset", []string{"arm", "gpu", "ssd"}, []string{"gpu", "ssd"}, true),
		Entry("one missing", []string{"gpu"}, []string{"gpu", "ssd"}, false),
		Entry("missing before the first offered", []string{"gpu"}, []string{"arm"}, false),
		Entry("missing after the last offered", []string{"gpu"}, []string{"tpu"}, false),
	)

	DescribeTable("JoinWithAnd",
		func(parts []string, want string) { Expect(convergence.JoinWithAnd(parts)).To(Equal(want)) },
		Entry("one", []string{"a"}, "a"),
		Entry("two", []string{"a", "b"}, "a and b"),
		Entry("three", []string{"a", "b", "c"}, "a, b and c"),
	)
})

var _ = Describe("Placement", func() {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	present := now.Add(time.Minute).UnixNano()

	cell := func(id, zone string, memoryMB int32, tags ...string) convergence.CellRow {
		return convergence.CellRow{
			CellID: id, Zone: zone, PlacementTags: tags, ExpiresAt: present,
			Capacity: convergence.Resources{MemoryMB: memoryMB, DiskMB: 10_000, Instances: 10},
		}
	}
	running := func(index int32, cellID string) convergence.ActualRow {
		return convergence.ActualRow{
			ProcessGuid: "web", Index: index, Presence: ordinary, State: runningState,
			Domain: "apps", CellID: cellID, DefinitionID: "v1", MemoryMB: 100, DiskMB: 100,
		}
	}

	// One missing instance (web/<len(rows)>) of 100 MB; which cell gets it?
	DescribeTable("chooses the cell for one more instance",
		func(cells []convergence.CellRow, rows []convergence.ActualRow, want string) {
			plan := convergence.Compute(&convergence.Snapshot{
				Desired: []convergence.DesiredSchedule{{
					ProcessGuid: "web", Domain: "apps", Instances: int32(len(rows) + 1),
					ActiveDefinitionID: "v1", MemoryMB: 100, DiskMB: 100,
				}},
				Actual: rows,
				Cells:  cells,
			}, now, convergence.DefaultConfig())
			Expect(plan.Writes.Create).To(HaveLen(1))
			Expect(plan.Writes.Create[0].CellID).To(Equal(want))
		},
		Entry("the zone without the LRP, even with less memory",
			[]convergence.CellRow{cell("a", "z1", 4000), cell("b", "z2", 1000)},
			[]convergence.ActualRow{running(0, "a")}, "b"),
		Entry("in a zone, the cell without the LRP, even with less memory",
			[]convergence.CellRow{cell("a", "z1", 4000), cell("b", "z1", 1000)},
			[]convergence.ActualRow{running(0, "a")}, "b"),
		Entry("among equals, the most free memory",
			[]convergence.CellRow{cell("a", "z1", 1000), cell("b", "z1", 2000)}, nil, "b"),
		Entry("among equals with equal memory, the lowest cell id",
			[]convergence.CellRow{cell("b", "z1", 1000), cell("a", "z1", 1000)}, nil, "a"),
		Entry("equal zone counts: the best cell of either zone",
			[]convergence.CellRow{cell("a", "z1", 1000), cell("b", "z2", 3000)}, nil, "b"),
		Entry("the emptier zone, even if its only cell already runs the LRP",
			[]convergence.CellRow{cell("a", "z1", 4000), cell("b", "z2", 4000), cell("c", "z2", 4000)},
			[]convergence.ActualRow{running(0, "b"), running(1, "c"), running(2, "a")}, "a"),
		Entry("the fewest instances on a cell once every cell has some",
			[]convergence.CellRow{cell("a", "z1", 4000), cell("b", "z1", 4000)},
			[]convergence.ActualRow{running(0, "a"), running(1, "a"), running(2, "b")}, "b"),
		Entry("not a cell without room, even in the emptier zone",
			[]convergence.CellRow{cell("a", "z1", 4000), cell("b", "z2", 50)},
			[]convergence.ActualRow{running(0, "a")}, "a"),
		Entry("not an expired cell",
			[]convergence.CellRow{cell("a", "z1", 4000), expired(cell("b", "z2", 4000), now)},
			[]convergence.ActualRow{running(0, "a")}, "a"),
	)

	DescribeTable("explains why nothing fits",
		func(cells []convergence.CellRow, tags []string, memoryMB, diskMB int32, want string) {
			plan := convergence.Compute(&convergence.Snapshot{
				Desired: []convergence.DesiredSchedule{{
					ProcessGuid: "web", Domain: "apps", Instances: 1, PlacementTags: tags,
					ActiveDefinitionID: "v1", MemoryMB: memoryMB, DiskMB: diskMB,
				}},
				Cells: cells,
			}, now, convergence.DefaultConfig())
			Expect(plan.Writes.Create).To(HaveLen(1))
			Expect(plan.Writes.Create[0].CellID).To(BeEmpty())
			Expect(plan.Writes.Create[0].PlacementError).To(Equal(want))
			Expect(plan.Counts.Unplaced).To(Equal(1))
		},
		Entry("no cells at all", nil, nil, int32(1), int32(1), "no cell is present"),
		Entry("only expired cells", []convergence.CellRow{expired(cell("a", "z1", 4000), now)}, nil, int32(1), int32(1),
			"no cell is present"),
		Entry("tags nobody has", []convergence.CellRow{cell("a", "z1", 4000, "ssd")}, []string{"gpu"}, int32(1), int32(1),
			"no present cell has tags [gpu]"),
		Entry("memory", []convergence.CellRow{cell("a", "z1", 1000)}, nil, int32(2048), int32(1),
			"no cell with 2048 MB free memory"),
		Entry("memory, with tags", []convergence.CellRow{cell("a", "z1", 1000, "gpu")}, []string{"gpu"}, int32(2048), int32(1),
			"no cell with 2048 MB free memory and tags [gpu]"),
		Entry("disk", []convergence.CellRow{cell("a", "z1", 4000)}, nil, int32(2048), int32(20_000),
			"no cell with 2048 MB free memory and 20000 MB free disk"),
		Entry("memory on one cell, disk on another", []convergence.CellRow{
			cell("a", "z1", 4000), withDisk(cell("b", "z1", 100), 50_000),
		}, nil, int32(2048), int32(20_000),
			"no cell with 2048 MB free memory and 20000 MB free disk"),
		Entry("instance slots", []convergence.CellRow{withSlots(cell("a", "z1", 4000), 0)}, nil, int32(1), int32(1),
			"no cell with 1 MB free memory, 1 MB free disk and a free instance slot"),
	)
})

func expired(c convergence.CellRow, now time.Time) convergence.CellRow {
	c.ExpiresAt = now.Add(-time.Second).UnixNano()
	return c
}

func withDisk(c convergence.CellRow, diskMB int32) convergence.CellRow {
	c.Capacity.DiskMB = diskMB
	return c
}

func withSlots(c convergence.CellRow, slots int32) convergence.CellRow {
	c.Capacity.Instances = slots
	return c
}
