package sqldb_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("RemoveDesiredLRP", func(b *board) {
	BeforeEach(func() {
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 4))
		Expect(err).NotTo(HaveOccurred())
		_, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
			Definition: newDefinition("", "/bin/web-2"), UpdateIdentifier: "v2",
		})
		Expect(err).NotTo(HaveOccurred())
		_, err = b.store.DesireLRP(b.ctx, newLRP("other", "apps", 2))
		Expect(err).NotTo(HaveOccurred())
	})

	It("deletes the LRP and its UNCLAIMED instances, keeping claimed and running ones and every definition", func() {
		b.setState("web", 1, models.ActualLRP_RUNNING, "cell-1")
		b.setState("web", 3, models.ActualLRP_CLAIMED, "cell-2")
		b.putActual(&models.ActualLRP{
			ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_EVACUATING, Domain: "apps",
			DefinitionId: "v1", State: models.ActualLRP_UNCLAIMED, ModificationTag: &models.ModificationTag{Epoch: "e"},
		})

		Expect(b.store.RemoveDesiredLRP(b.ctx, "web")).To(Succeed())

		_, err := b.store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
		left := b.instances("web")
		Expect(left).To(HaveLen(2))
		Expect(left[0].Index).To(BeEquivalentTo(1))
		Expect(left[0].State).To(Equal(models.ActualLRP_RUNNING))
		Expect(left[1].Index).To(BeEquivalentTo(3))
		Expect(left[1].State).To(Equal(models.ActualLRP_CLAIMED))

		summaries, err := b.store.Definitions(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(summaries).To(HaveLen(2))
		for _, s := range summaries {
			Expect(s.Active).To(BeFalse(), "no LRP, nothing active")
		}
		def, err := b.store.Definition(b.ctx, "web", "v1")
		Expect(err).NotTo(HaveOccurred())
		Expect(def.Action.Path).To(Equal("/bin/web"))
	})

	It("leaves other LRPs alone", func() {
		Expect(b.store.RemoveDesiredLRP(b.ctx, "web")).To(Succeed())
		_, err := b.store.DesiredLRPByProcessGuid(b.ctx, "other")
		Expect(err).NotTo(HaveOccurred())
		Expect(b.instances("other")).To(HaveLen(2))
	})

	It("is ResourceNotFound for an unknown guid, and for a second remove", func() {
		Expect(b.store.RemoveDesiredLRP(b.ctx, "nope")).To(HaveErrorType(models.Error_ResourceNotFound))
		Expect(b.store.RemoveDesiredLRP(b.ctx, "web")).To(Succeed())
		Expect(b.store.RemoveDesiredLRP(b.ctx, "web")).To(HaveErrorType(models.Error_ResourceNotFound))
		Expect(b.instances("other")).To(HaveLen(2))
	})
})
