package sqldb_test

import (
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("ConvergenceSnapshot", func(b *board) {
	var seed seeder
	var now int64

	BeforeEach(func() {
		seed = seeder{conn: b.conn, dialect: b.dialect}
		now = b.clock.Now().UnixNano()
	})

	snapshot := func(guids ...string) *convergence.Snapshot {
		snap, err := b.store.ConvergenceSnapshot(b.ctx, guids)
		Expect(err).NotTo(HaveOccurred())
		return snap
	}

	It("reads every LRP, instance, cell and fresh domain with the columns the planner needs", func() {
		Expect(seed.desired(b.ctx, []seedLRP{
			{guid: "web", domain: "apps", instances: 3, definitionID: "v2", memoryMB: 512, diskMB: 1024, tags: `["ssd","zone-a"]`},
			{guid: "worker", domain: "jobs", instances: 1, definitionID: "w1", memoryMB: 128, diskMB: 256},
		})).To(Succeed())
		Expect(seed.definition(b.ctx, "web", "v1", 256, 512)).To(Succeed())
		// The definitions of an LRP that is no longer desired stay.
		Expect(seed.definition(b.ctx, "gone", "g1", 64, 32)).To(Succeed())
		Expect(seed.actual(b.ctx, 5, func(i int) seedActual {
			return []seedActual{
				{guid: "web", index: 0, state: "RUNNING", domain: "apps", instanceGuid: "ig-0", cellID: "cell-a",
					definitionID: "v2", since: 11, routable: true, modIndex: 4},
				{guid: "web", index: 1, state: "CRASHED", domain: "apps", instanceGuid: "ig-1", cellID: "cell-a",
					definitionID: "v1", crashCount: 3, crashReason: "exited with code 3", since: 12, modIndex: 9},
				{guid: "web", index: 1, presence: "SUSPECT", state: "RUNNING", domain: "apps", instanceGuid: "ig-s",
					cellID: "cell-b", definitionID: "v1", since: 13, routable: true, modIndex: 2},
				{guid: "worker", index: 0, domain: "jobs", definitionID: "w1", since: 14, placementError: "no room"},
				{guid: "gone", index: 0, state: "RUNNING", domain: "apps", instanceGuid: "ig-g", cellID: "cell-b",
					definitionID: "g1", since: 15, modIndex: 1},
			}[i]
		})).To(Succeed())
		Expect(seed.cells(b.ctx, []seedCell{
			{cellID: "cell-b", zone: "z2", memoryMB: 2048, diskMB: 4096, maxInstance: 8, expiresAt: now - 1},
			{cellID: "cell-a", zone: "z1", memoryMB: 8192, diskMB: 16384, maxInstance: 100, tags: `["ssd"]`, expiresAt: now + 30e9},
		})).To(Succeed())
		Expect(seed.domain(b.ctx, "apps", 0)).To(Succeed())
		Expect(seed.domain(b.ctx, "jobs", now)).To(Succeed())
		Expect(seed.domain(b.ctx, "other", now+1)).To(Succeed())

		Expect(snapshot()).To(Equal(&convergence.Snapshot{
			Desired: []convergence.DesiredSchedule{
				{ProcessGuid: "web", Domain: "apps", Instances: 3, PlacementTags: []string{"ssd", "zone-a"},
					ActiveDefinitionID: "v2", MemoryMB: 512, DiskMB: 1024},
				{ProcessGuid: "worker", Domain: "jobs", Instances: 1, ActiveDefinitionID: "w1", MemoryMB: 128, DiskMB: 256},
			},
			Actual: []convergence.ActualRow{
				{ProcessGuid: "gone", Index: 0, Presence: models.ActualLRP_ORDINARY, State: models.ActualLRP_RUNNING,
					Domain: "apps", InstanceGuid: "ig-g", CellID: "cell-b", DefinitionID: "g1", Since: 15,
					ModificationIndex: 1, MemoryMB: 64, DiskMB: 32},
				{ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY, State: models.ActualLRP_RUNNING,
					Domain: "apps", InstanceGuid: "ig-0", CellID: "cell-a", DefinitionID: "v2", Since: 11, Routable: true,
					ModificationIndex: 4, MemoryMB: 512, DiskMB: 1024},
				{ProcessGuid: "web", Index: 1, Presence: models.ActualLRP_ORDINARY, State: models.ActualLRP_CRASHED,
					Domain: "apps", InstanceGuid: "ig-1", CellID: "cell-a", DefinitionID: "v1", CrashCount: 3,
					CrashReason: "exited with code 3", Since: 12,
					ModificationIndex: 9, MemoryMB: 256, DiskMB: 512},
				{ProcessGuid: "web", Index: 1, Presence: models.ActualLRP_SUSPECT, State: models.ActualLRP_RUNNING,
					Domain: "apps", InstanceGuid: "ig-s", CellID: "cell-b", DefinitionID: "v1", Since: 13, Routable: true,
					ModificationIndex: 2, MemoryMB: 256, DiskMB: 512},
				{ProcessGuid: "worker", Index: 0, Presence: models.ActualLRP_ORDINARY, State: models.ActualLRP_UNCLAIMED,
					Domain: "jobs", DefinitionID: "w1", Since: 14, PlacementError: "no room", MemoryMB: 128, DiskMB: 256},
			},
			Cells: []convergence.CellRow{
				{CellID: "cell-a", Zone: "z1", Capacity: convergence.Resources{MemoryMB: 8192, DiskMB: 16384, Instances: 100},
					PlacementTags: []string{"ssd"}, ExpiresAt: now + 30e9},
				{CellID: "cell-b", Zone: "z2", Capacity: convergence.Resources{MemoryMB: 2048, DiskMB: 4096, Instances: 8},
					ExpiresAt: now - 1},
			},
			FreshDomains:   []string{"apps", "other"},
			PlacementEpoch: int64(b.count("SELECT epoch FROM placement_epoch WHERE id = 1")),
		}))
	})

	It("reads an empty board", func() {
		snap := snapshot()
		Expect(snap.Desired).To(BeEmpty())
		Expect(snap.Actual).To(BeEmpty())
		Expect(snap.Cells).To(BeEmpty())
		Expect(snap.FreshDomains).To(BeEmpty())
	})

	// Guids mixing case, digits, '-' and '_' sort differently under every
	// locale's rules than as bytes.
	orderGuids := []string{"b", "B", "a-1", "a_1", "A-1", "_z", "-z", "a", "Z9", "z", "0", "a-", "a-10", "a-2"}

	seedOrderState := func() {
		var lrps []seedLRP
		var rows []seedActual
		for i, guid := range orderGuids {
			if i%3 != 0 { // every third guid's LRP is gone, its instances left
				lrps = append(lrps, seedLRP{guid: guid, domain: "apps", instances: 12, definitionID: "v1", memoryMB: 1, diskMB: 1})
			}
			for _, index := range []int32{10, 2} {
				rows = append(rows, seedActual{guid: guid, index: index, domain: "apps", definitionID: "v1", since: int64(i)})
			}
		}
		// SQL sorts presences by name; the planner by enum value.
		for _, presence := range []string{"SUSPECT", "RETIRING", "EVACUATING"} {
			rows = append(rows, seedActual{guid: "a", index: 2, presence: presence, state: "RUNNING", domain: "apps", definitionID: "v1"})
		}
		slices.Reverse(rows)
		Expect(seed.desired(b.ctx, lrps)).To(Succeed())
		Expect(seed.actual(b.ctx, len(rows), func(i int) seedActual { return rows[i] })).To(Succeed())
	}

	expectKeyOrder := func(snap *convergence.Snapshot) {
		sorted := slices.Clone(orderGuids)
		slices.Sort(sorted) // byte order
		var wantKeys []string
		for _, guid := range sorted {
			wantKeys = append(wantKeys, guid+"/2")
			if guid == "a" {
				wantKeys = append(wantKeys, "a/2:EVACUATING", "a/2:SUSPECT", "a/2:RETIRING")
			}
			wantKeys = append(wantKeys, guid+"/10")
		}
		var keys []string
		for _, r := range snap.Actual {
			key := fmt.Sprintf("%s/%d", r.ProcessGuid, r.Index)
			if r.Presence != models.ActualLRP_ORDINARY {
				key += ":" + r.Presence.String()
			}
			keys = append(keys, key)
		}
		Expect(keys).To(Equal(wantKeys))

		var wantDesired, desired []string
		for _, guid := range sorted {
			if slices.Index(orderGuids, guid)%3 != 0 {
				wantDesired = append(wantDesired, guid)
			}
		}
		for _, d := range snap.Desired {
			desired = append(desired, d.ProcessGuid)
		}
		Expect(desired).To(Equal(wantDesired))
	}

	It("orders LRPs by guid as bytes and instances by guid, index and presence, as the planner walks them", func() {
		seedOrderState()
		expectKeyOrder(snapshot())
	})

	It("reads the same snapshot in parallel parts, in the same order", func() {
		seedOrderState()
		whole := snapshot()
		for _, parts := range []int{2, 3, 4} {
			restore := sqldb.SetSnapshotParts(1, parts)
			inParts := snapshot()
			restore()
			expectKeyOrder(inParts)
			Expect(inParts).To(Equal(whole), "in %d parts", parts)
		}
	})

	It("reads only the given LRPs' desired and actual rows, and every cell", func() {
		Expect(seed.desired(b.ctx, []seedLRP{
			{guid: "web", domain: "apps", instances: 1, definitionID: "v1"},
			{guid: "worker", domain: "apps", instances: 1, definitionID: "v1"},
			{guid: "other", domain: "apps", instances: 1, definitionID: "v1"},
		})).To(Succeed())
		Expect(seed.actual(b.ctx, 4, func(i int) seedActual {
			guid := []string{"web", "worker", "other", "gone"}[i]
			return seedActual{guid: guid, domain: "apps", definitionID: "v1"}
		})).To(Succeed())
		Expect(seed.cells(b.ctx, []seedCell{{cellID: "cell-a"}, {cellID: "cell-b"}})).To(Succeed())

		snap := snapshot("worker", "missing", "gone", "web", "worker")
		var desired, actual []string
		for _, d := range snap.Desired {
			desired = append(desired, d.ProcessGuid)
		}
		for _, r := range snap.Actual {
			actual = append(actual, r.ProcessGuid)
		}
		Expect(desired).To(Equal([]string{"web", "worker"}))
		Expect(actual).To(Equal([]string{"gone", "web", "worker"}))
		Expect(snap.Cells).To(HaveLen(2))
	})

	It("reads more guids than fit in one statement, in order", func() {
		const lrps = 2_500
		var desired []seedLRP
		guids := make([]string, 0, lrps+500)
		for i := range lrps {
			guid := fmt.Sprintf("lrp-%05d", lrps-i)
			guids = append(guids, guid)
			if i%2 == 0 {
				desired = append(desired, seedLRP{guid: guid, domain: "apps", instances: 1, definitionID: "v1"})
			}
		}
		for i := range 500 {
			guids = append(guids, fmt.Sprintf("absent-%d", i))
		}
		Expect(seed.desired(b.ctx, desired)).To(Succeed())
		Expect(seed.actual(b.ctx, lrps, func(i int) seedActual {
			return seedActual{guid: guids[i], domain: "apps", definitionID: "v1"}
		})).To(Succeed())

		snap := snapshot(guids...)
		Expect(snap.Desired).To(HaveLen(lrps / 2))
		Expect(snap.Actual).To(HaveLen(lrps))
		Expect(slices.IsSortedFunc(snap.Actual, func(a, b convergence.ActualRow) int { return strings.Compare(a.ProcessGuid, b.ProcessGuid) })).To(BeTrue())
		Expect(slices.IsSortedFunc(snap.Desired, func(a, b convergence.DesiredSchedule) int { return strings.Compare(a.ProcessGuid, b.ProcessGuid) })).To(BeTrue())
	})

	It("reads a cell's expiry as stored, leaving presence to the planner", func() {
		Expect(seed.cells(b.ctx, []seedCell{{cellID: "cell-a", expiresAt: now + int64(time.Minute)}})).To(Succeed())
		b.clock.Advance(2 * time.Minute)
		Expect(snapshot().Cells[0].ExpiresAt).To(Equal(now + int64(time.Minute)))
	})
})
