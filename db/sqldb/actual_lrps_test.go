package sqldb_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("ActualLRPs", func(b *board) {
	var running, crashed, evacuating, unclaimed *models.ActualLRP

	BeforeEach(func() {
		running = &models.ActualLRP{
			ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY, Domain: "apps",
			InstanceGuid: "ig-1", CellId: "cell-1", DefinitionId: "v2", State: models.ActualLRP_RUNNING,
			NetInfo: &models.NetInfo{
				Address: "10.0.0.1", InstanceAddress: "172.16.0.5",
				Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}, {ContainerPort: 9090, HostPort: 61002}},
			},
			Since: 1_700_000_000_000_000_001, Routable: true, Occupied: true,
			ModificationTag: &models.ModificationTag{Epoch: "epoch-1", Index: 7},
		}
		crashed = &models.ActualLRP{
			ProcessGuid: "web", Index: 1, Presence: models.ActualLRP_ORDINARY, Domain: "apps",
			InstanceGuid: "ig-2", CellId: "cell-2", DefinitionId: "v1", State: models.ActualLRP_CRASHED,
			CrashCount: 3, CrashReason: "exit status 2", Since: 42,
			ModificationTag: &models.ModificationTag{Epoch: "epoch-2", Index: 1},
		}
		evacuating = &models.ActualLRP{
			ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_EVACUATING, Domain: "apps",
			InstanceGuid: "ig-0", CellId: "cell-2", DefinitionId: "v1", State: models.ActualLRP_RUNNING,
			NetInfo: &models.NetInfo{Address: "10.0.0.2"}, Routable: true,
			ModificationTag: &models.ModificationTag{Epoch: "epoch-0"},
		}
		unclaimed = &models.ActualLRP{
			ProcessGuid: "worker", Index: 0, Presence: models.ActualLRP_ORDINARY, Domain: "jobs",
			DefinitionId: "w1", State: models.ActualLRP_UNCLAIMED, PlacementError: "insufficient resources",
			ModificationTag: &models.ModificationTag{Epoch: "epoch-3"},
		}
		for _, lrp := range []*models.ActualLRP{unclaimed, evacuating, crashed, running} {
			b.putActual(lrp)
		}
	})

	list := func(filter db.ActualLRPFilter) []*models.ActualLRP {
		lrps, err := b.store.ActualLRPs(b.ctx, filter)
		Expect(err).NotTo(HaveOccurred())
		return lrps
	}
	expectLRPs := func(got []*models.ActualLRP, want ...*models.ActualLRP) {
		Expect(got).To(HaveLen(len(want)))
		for i := range want {
			Expect(got[i]).To(EqualProto(want[i]))
		}
	}

	It("lists every instance with every field, ordered by guid, index and presence name", func() {
		expectLRPs(list(db.ActualLRPFilter{}), evacuating, running, crashed, unclaimed)
	})

	DescribeTable("filters",
		func(filter func() db.ActualLRPFilter, want func() []*models.ActualLRP) {
			expectLRPs(list(filter()), want()...)
		},
		Entry("by domain",
			func() db.ActualLRPFilter { return db.ActualLRPFilter{Domain: "jobs"} },
			func() []*models.ActualLRP { return []*models.ActualLRP{unclaimed} }),
		Entry("by cell",
			func() db.ActualLRPFilter { return db.ActualLRPFilter{CellID: "cell-2"} },
			func() []*models.ActualLRP { return []*models.ActualLRP{evacuating, crashed} }),
		Entry("by guid",
			func() db.ActualLRPFilter { return db.ActualLRPFilter{ProcessGuid: "web"} },
			func() []*models.ActualLRP { return []*models.ActualLRP{evacuating, running, crashed} }),
		Entry("by index 0, which is not the same as no index",
			func() db.ActualLRPFilter { return db.ActualLRPFilter{Index: int32p(0)} },
			func() []*models.ActualLRP { return []*models.ActualLRP{evacuating, running, unclaimed} }),
		Entry("by guid and index",
			func() db.ActualLRPFilter { return db.ActualLRPFilter{ProcessGuid: "web", Index: int32p(1)} },
			func() []*models.ActualLRP { return []*models.ActualLRP{crashed} }),
		Entry("by every field at once",
			func() db.ActualLRPFilter {
				return db.ActualLRPFilter{Domain: "apps", CellID: "cell-1", ProcessGuid: "web", Index: int32p(0)}
			},
			func() []*models.ActualLRP { return []*models.ActualLRP{running} }),
		Entry("matching nothing",
			func() db.ActualLRPFilter { return db.ActualLRPFilter{CellID: "cell-9"} },
			func() []*models.ActualLRP { return nil }),
	)

	It("reports a stored net_info it cannot decode as InvalidRecord", func() {
		b.exec("UPDATE actual_lrps SET net_info = ? WHERE process_guid = ?", []byte{0xff, 0xff, 0xff}, "worker")
		_, err := b.store.ActualLRPs(b.ctx, db.ActualLRPFilter{})
		Expect(err).To(HaveErrorType(models.Error_InvalidRecord))
		Expect(err.Error()).To(ContainSubstring(`"worker"`))
	})
})
