package models_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Settled", func() {
	instance := func(index int32, presence models.ActualLRP_Presence, state models.ActualLRP_State, definition string, routable bool) *models.ActualLRP {
		return &models.ActualLRP{Index: index, Presence: presence, State: state, DefinitionId: definition, Routable: routable}
	}
	running := func(index int32, definition string) *models.ActualLRP {
		lrp := instance(index, models.ActualLRP_ORDINARY, models.ActualLRP_RUNNING, definition, true)
		lrp.CellId = "cell-b"
		return lrp
	}
	onCellA := func(lrp *models.ActualLRP) *models.ActualLRP {
		lrp.CellId = "cell-a"
		return lrp
	}
	DescribeTable("whether every wanted index runs the active definition, and nothing else is left",
		func(instances int32, lrps []*models.ActualLRP, settled bool, reason string) {
			ok, why := models.Settled(instances, "v2", lrps, map[string]bool{"cell-a": true})
			Expect(ok).To(Equal(settled))
			Expect(why).To(Equal(reason))
		},
		Entry("1. an index not yet claimed", int32(3),
			[]*models.ActualLRP{running(0, "v2"), running(1, "v2"), instance(2, models.ActualLRP_ORDINARY, models.ActualLRP_UNCLAIMED, "v2", false)},
			false, "index 2 is UNCLAIMED"),
		Entry("2. a RETIRING instance still draining", int32(3),
			[]*models.ActualLRP{running(0, "v2"), running(1, "v2"), instance(1, models.ActualLRP_RETIRING, models.ActualLRP_RUNNING, "v1", true), running(2, "v2")},
			false, "index 1 also has an instance that is RETIRING"),
		Entry("3. settled", int32(3),
			[]*models.ActualLRP{running(2, "v2"), running(0, "v2"), running(1, "v2")},
			true, ""),
		Entry("4. an extra still stopping after a scale-down", int32(2),
			[]*models.ActualLRP{running(0, "v2"), running(1, "v2"), running(2, "v2")},
			false, "index 2 is beyond the 2 instances wanted"),
		Entry("5. an instance on a draining cell", int32(2),
			[]*models.ActualLRP{onCellA(running(0, "v2")), running(1, "v2")},
			false, "index 0 is on cell-a, which is draining"),
		Entry("an index with no instance", int32(2),
			[]*models.ActualLRP{running(1, "v2")},
			false, "index 0 has no instance"),
		Entry("an index on an older definition", int32(1),
			[]*models.ActualLRP{running(0, "v1")},
			false, "index 0 runs v1, not the active v2"),
		Entry("a running instance not routable (its rep is stopping it)", int32(1),
			[]*models.ActualLRP{instance(0, models.ActualLRP_ORDINARY, models.ActualLRP_RUNNING, "v2", false)},
			false, "index 0 is not routable"),
		Entry("an EVACUATING instance beside its replacement", int32(1),
			[]*models.ActualLRP{running(0, "v2"), instance(0, models.ActualLRP_EVACUATING, models.ActualLRP_RUNNING, "v2", true)},
			false, "index 0 also has an instance that is EVACUATING"),
		Entry("a validation instance", int32(1),
			[]*models.ActualLRP{running(0, "v2"), instance(100000, models.ActualLRP_ORDINARY, models.ActualLRP_CLAIMED, "v3", false)},
			false, "index 100000 is beyond the 1 instances wanted"),
		Entry("no instances wanted and none left", int32(0), nil, true, ""),
	)
})
