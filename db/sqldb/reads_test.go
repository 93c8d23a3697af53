package sqldb_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("reading desired LRPs and definitions", func(b *board) {
	var web, worker, api *models.DesiredLRP

	BeforeEach(func() {
		var err error
		_, err = b.store.DesireLRP(b.ctx, newLRP("web", "apps", 2))
		Expect(err).NotTo(HaveOccurred())
		b.clock.Advance(1000)
		def := newDefinition("", "/bin/web-2")
		def.MemoryMb, def.DiskMb = 2048, 4096
		web, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Definition: def, UpdateIdentifier: "v2"})
		Expect(err).NotTo(HaveOccurred())
		worker, err = b.store.DesireLRP(b.ctx, newLRP("worker", "jobs", 1))
		Expect(err).NotTo(HaveOccurred())
		api, err = b.store.DesireLRP(b.ctx, newLRP("api", "apps", 0))
		Expect(err).NotTo(HaveOccurred())
	})

	guids := func(lrps []*models.DesiredLRP) []string {
		var out []string
		for _, l := range lrps {
			out = append(out, l.ProcessGuid)
		}
		return out
	}

	Describe("DesiredLRPByProcessGuid", func() {
		It("returns the LRP with its active definition", func() {
			got, err := b.store.DesiredLRPByProcessGuid(b.ctx, "web")
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(EqualProto(web))
			Expect(got.Definition.DefinitionId).To(Equal("v2"))
			Expect(got.Definition.Action.Path).To(Equal("/bin/web-2"))
		})

		It("is ResourceNotFound for an unknown guid", func() {
			_, err := b.store.DesiredLRPByProcessGuid(b.ctx, "nope")
			Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
			Expect(err.Error()).To(ContainSubstring(`"nope"`))
		})
	})

	Describe("DesiredLRPs", func() {
		It("lists every LRP by guid, each with its active definition", func() {
			lrps, err := b.store.DesiredLRPs(b.ctx, db.DesiredLRPFilter{})
			Expect(err).NotTo(HaveOccurred())
			Expect(lrps).To(HaveLen(3))
			Expect(lrps[0]).To(EqualProto(api))
			Expect(lrps[1]).To(EqualProto(web))
			Expect(lrps[2]).To(EqualProto(worker))
		})

		It("filters by domain", func() {
			lrps, err := b.store.DesiredLRPs(b.ctx, db.DesiredLRPFilter{Domain: "apps"})
			Expect(err).NotTo(HaveOccurred())
			Expect(guids(lrps)).To(Equal([]string{"api", "web"}))
		})

		It("filters by guids, in batches, ignoring repeats and unknown guids", func() {
			wanted := []string{"worker", "web", "worker"}
			for i := range 2500 {
				wanted = append(wanted, fmt.Sprintf("missing-%d", i))
			}
			lrps, err := b.store.DesiredLRPs(b.ctx, db.DesiredLRPFilter{ProcessGuids: wanted})
			Expect(err).NotTo(HaveOccurred())
			Expect(guids(lrps)).To(Equal([]string{"web", "worker"}))
			Expect(lrps[0]).To(EqualProto(web))
		})

		It("filters by domain and guids together", func() {
			lrps, err := b.store.DesiredLRPs(b.ctx, db.DesiredLRPFilter{Domain: "apps", ProcessGuids: []string{"worker", "web"}})
			Expect(err).NotTo(HaveOccurred())
			Expect(guids(lrps)).To(Equal([]string{"web"}))
		})

		It("returns nothing for a domain without LRPs", func() {
			lrps, err := b.store.DesiredLRPs(b.ctx, db.DesiredLRPFilter{Domain: "empty"})
			Expect(err).NotTo(HaveOccurred())
			Expect(lrps).To(BeEmpty())
		})
	})

	Describe("DesiredLRPSchedulingInfos", func() {
		It("lists the plain fields with the active definition's resources", func() {
			infos, err := b.store.DesiredLRPSchedulingInfos(b.ctx, db.DesiredLRPFilter{})
			Expect(err).NotTo(HaveOccurred())
			Expect(infos).To(HaveLen(3))
			Expect(infos[1]).To(EqualProto(&models.DesiredLRPSchedulingInfo{
				ProcessGuid:         "web",
				Domain:              "apps",
				Instances:           2,
				PlacementTags:       web.PlacementTags,
				Routes:              web.Routes,
				Annotation:          web.Annotation,
				ActiveDefinitionId:  "v2",
				HealthyDefinitionId: "v1",
				ModificationTag:     web.ModificationTag,
				MemoryMb:            2048,
				DiskMb:              4096,
			}))
			Expect(infos[2].MemoryMb).To(BeEquivalentTo(256))
		})

		It("filters by domain and guids", func() {
			infos, err := b.store.DesiredLRPSchedulingInfos(b.ctx, db.DesiredLRPFilter{Domain: "jobs"})
			Expect(err).NotTo(HaveOccurred())
			Expect(infos).To(HaveLen(1))
			Expect(infos[0].ProcessGuid).To(Equal("worker"))

			infos, err = b.store.DesiredLRPSchedulingInfos(b.ctx, db.DesiredLRPFilter{ProcessGuids: []string{"api", "nope"}})
			Expect(err).NotTo(HaveOccurred())
			Expect(infos).To(HaveLen(1))
			Expect(infos[0].ProcessGuid).To(Equal("api"))
		})
	})

	Describe("Definitions", func() {
		It("lists summaries newest first with the active and healthy marks and each one's history", func() {
			b.exec("UPDATE desired_lrps SET healthy_definition_id = ? WHERE process_guid = ?", "v1", "web")
			b.exec("UPDATE run_infos SET failed_validation = ? WHERE process_guid = ? AND definition_id = ?", true, "web", "v2")
			summaries, err := b.store.Definitions(b.ctx, "web")
			Expect(err).NotTo(HaveOccurred())
			Expect(summaries).To(HaveLen(2))
			Expect(summaries[0]).To(EqualProto(&models.DefinitionSummary{
				DefinitionId: "v2", CreatedAt: web.Definition.CreatedAt, Active: true, MemoryMb: 2048, DiskMb: 4096,
				FailedValidation: true,
			}))
			Expect(summaries[1]).To(EqualProto(&models.DefinitionSummary{
				DefinitionId: "v1", CreatedAt: web.Definition.CreatedAt - 1000, Healthy: true, MemoryMb: 256, DiskMb: 1024,
				BecameHealthy: true,
			}), "the desired definition is the healthy baseline")
		})

		It("is ResourceNotFound for an LRP without definitions", func() {
			_, err := b.store.Definitions(b.ctx, "nope")
			Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
		})
	})

	Describe("Definition", func() {
		It("returns one stored definition whole", func() {
			def, err := b.store.Definition(b.ctx, "web", "v1")
			Expect(err).NotTo(HaveOccurred())
			want := newDefinition("v1", "/bin/web")
			want.CreatedAt = web.Definition.CreatedAt - 1000
			Expect(def).To(EqualProto(want))
		})

		It("is ResourceNotFound for an unknown id or guid", func() {
			_, err := b.store.Definition(b.ctx, "web", "v9")
			Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
			_, err = b.store.Definition(b.ctx, "nope", "v1")
			Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
		})
	})
})
