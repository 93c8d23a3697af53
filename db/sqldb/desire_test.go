package sqldb_test

import (
	"fmt"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("DesireLRP", func(b *board) {
	It("stores the LRP, its first definition as active, and one UNCLAIMED instance per index", func() {
		lrp := newLRP("web", "apps", 3)
		lrp.UpdateStrategy = &models.UpdateStrategy{MaxSurge: "25%", MaxUnavailable: "1", AutoRevert: true}
		lrp.DisruptionBudget = &models.DisruptionBudget{MaxUnavailable: "2"}
		stored, err := b.store.DesireLRP(b.ctx, lrp)
		Expect(err).NotTo(HaveOccurred())

		now := b.clock.Now().UnixNano()
		Expect(stored.ActiveDefinitionId).To(Equal("v1"))
		Expect(stored.HealthyDefinitionId).To(Equal("v1"), "the first definition is the baseline")
		Expect(stored.CreatedAt).To(Equal(now))
		Expect(stored.Definition.DefinitionId).To(Equal("v1"))
		Expect(stored.Definition.CreatedAt).To(Equal(now))
		Expect(stored.ModificationTag.Epoch).To(MatchRegexp(`^[A-Za-z0-9_-]{16}$`), "16 characters of base64url")
		Expect(stored.ModificationTag.Index).To(BeZero())

		got, err := b.store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(EqualProto(stored))
		Expect(got.Routes).To(EqualProto(lrp.Routes))
		Expect(got.PlacementTags).To(Equal([]string{"zone-a", "ssd"}))
		Expect(got.UpdateStrategy).To(EqualProto(lrp.UpdateStrategy))
		Expect(got.DisruptionBudget).To(EqualProto(lrp.DisruptionBudget))

		instances := b.instances("web")
		Expect(instances).To(HaveLen(3))
		epochs := map[string]bool{}
		for i, instance := range instances {
			Expect(instance.Index).To(BeEquivalentTo(i))
			Expect(instance.State).To(Equal(models.ActualLRP_UNCLAIMED))
			Expect(instance.Presence).To(Equal(models.ActualLRP_ORDINARY))
			Expect(instance.DefinitionId).To(Equal("v1"))
			Expect(instance.Domain).To(Equal("apps"))
			Expect(instance.Since).To(Equal(now))
			Expect(instance.CellId).To(BeEmpty())
			Expect(instance.NetInfo).To(BeNil())
			Expect(instance.ModificationTag.Index).To(BeZero())
			epochs[instance.ModificationTag.Epoch] = true
		}
		Expect(epochs).To(HaveLen(3), "every instance gets its own tag epoch")
	})

	It("leaves the caller's LRP untouched", func() {
		lrp := newLRP("web", "apps", 1)
		before := proto.Clone(lrp)
		_, err := b.store.DesireLRP(b.ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		Expect(lrp).To(EqualProto(before))
	})

	It("names an unnamed definition by its content", func() {
		lrp := newLRP("web", "apps", 1)
		lrp.Definition.DefinitionId = ""
		stored, err := b.store.DesireLRP(b.ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		Expect(stored.ActiveDefinitionId).To(Equal(models.GenerateDefinitionID(lrp.Definition)))
		Expect(b.instances("web")[0].DefinitionId).To(Equal(stored.ActiveDefinitionId))
	})

	It("stores an LRP with no instances and no optional fields", func() {
		lrp := &models.DesiredLRP{ProcessGuid: "bare", Domain: "apps", Definition: newDefinition("v1", "/bin/bare")}
		stored, err := b.store.DesireLRP(b.ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		got, err := b.store.DesiredLRPByProcessGuid(b.ctx, "bare")
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(EqualProto(stored))
		Expect(got.Routes).To(BeNil())
		Expect(got.PlacementTags).To(BeEmpty())
		Expect(got.UpdateStrategy).To(BeNil())
		Expect(b.instances("bare")).To(BeEmpty())
	})

	It("keeps an empty update strategy apart from none", func() {
		lrp := newLRP("web", "apps", 0)
		lrp.UpdateStrategy = &models.UpdateStrategy{}
		_, err := b.store.DesireLRP(b.ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		got, err := b.store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(got.UpdateStrategy).NotTo(BeNil())
	})

	It("creates instances past one insert batch", func() {
		_, err := b.store.DesireLRP(b.ctx, newLRP("big", "apps", 2500))
		Expect(err).NotTo(HaveOccurred())
		instances := b.instances("big")
		Expect(instances).To(HaveLen(2500))
		Expect(instances[2499].Index).To(BeEquivalentTo(2499))
	})

	It("refuses an existing guid with ResourceExists and changes nothing", func() {
		first, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 2))
		Expect(err).NotTo(HaveOccurred())

		again := newLRP("web", "other", 5)
		again.Definition = newDefinition("v2", "/bin/other")
		b.clock.Advance(1)
		_, err = b.store.DesireLRP(b.ctx, again)
		Expect(err).To(HaveErrorType(models.Error_ResourceExists))
		Expect(err.Error()).To(ContainSubstring(`"web"`))

		got, err := b.store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(EqualProto(first))
		Expect(b.instances("web")).To(HaveLen(2))
		definitions, err := b.store.Definitions(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(definitions).To(HaveLen(1))
	})

	DescribeTable("refuses input that would store a broken record, naming the field, and stores nothing",
		func(mutate func(*models.DesiredLRP), field string) {
			lrp := newLRP("web", "apps", 2)
			mutate(lrp)
			_, err := b.store.DesireLRP(b.ctx, lrp)
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(err.Error()).To(ContainSubstring(field))
			Expect(b.count("SELECT COUNT(*) FROM desired_lrps")).To(BeZero())
			Expect(b.count("SELECT COUNT(*) FROM run_infos")).To(BeZero())
			Expect(b.count("SELECT COUNT(*) FROM actual_lrps")).To(BeZero())
		},
		Entry("no definition", func(l *models.DesiredLRP) { l.Definition = nil }, "desired_lrp.definition"),
		Entry("negative instances", func(l *models.DesiredLRP) { l.Instances = -1 }, "desired_lrp.instances"),
		Entry("no process guid", func(l *models.DesiredLRP) { l.ProcessGuid = "" }, "desired_lrp.process_guid"),
		Entry("a definition protobuf cannot encode", func(l *models.DesiredLRP) { l.Definition.Action.Path = "\xff" }, "desired_lrp.definition"),
		Entry("a process guid wider than its column", func(l *models.DesiredLRP) { l.ProcessGuid = strings.Repeat("g", 129) }, "desired_lrp.process_guid"),
		Entry("a domain wider than its column", func(l *models.DesiredLRP) { l.Domain = strings.Repeat("d", 256) }, "desired_lrp.domain"),
		Entry("a definition id wider than its column", func(l *models.DesiredLRP) { l.Definition.DefinitionId = strings.Repeat("v", 65) }, "desired_lrp.definition.definition_id"),
	)

	It("accepts values exactly as wide as their columns", func() {
		lrp := newLRP(strings.Repeat("g", 128), strings.Repeat("d", 255), 1)
		lrp.Definition.DefinitionId = strings.Repeat("v", 64)
		stored, err := b.store.DesireLRP(b.ctx, lrp)
		Expect(err).NotTo(HaveOccurred())
		got, err := b.store.DesiredLRPByProcessGuid(b.ctx, lrp.ProcessGuid)
		Expect(err).NotTo(HaveOccurred())
		Expect(got).To(EqualProto(stored))
	})

	It("lets exactly one of concurrent desires of one guid succeed", func() {
		const racers = 4
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				_, errs[i] = b.store.DesireLRP(b.ctx, newLRP("web", "apps", int32(i+1)))
			}()
		}
		wg.Wait()
		var wins, exists int
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case models.IsErrorType(err, models.Error_ResourceExists):
				exists++
			}
		}
		Expect(wins).To(Equal(1), "%v", errs)
		Expect(exists).To(Equal(racers-1), "%v", errs)
		got, err := b.store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(b.instances("web")).To(HaveLen(int(got.Instances)))
	})

	It("stores only the winner's definition and instances when desires of one guid race", func() {
		const racers = 8
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				lrp := newLRP("web", "apps", int32(i+1))
				lrp.Definition = newDefinition(fmt.Sprintf("v%d", i), fmt.Sprintf("/bin/web-%d", i))
				_, errs[i] = b.store.DesireLRP(b.ctx, lrp)
			}()
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			if err == nil {
				Expect(winner).To(Equal(-1), "a second desire succeeded: %v", errs)
				winner = i
				continue
			}
			Expect(err).To(HaveErrorType(models.Error_ResourceExists))
		}
		Expect(winner).NotTo(Equal(-1), "no desire succeeded: %v", errs)

		got, err := b.store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(got.ActiveDefinitionId).To(Equal(fmt.Sprintf("v%d", winner)))
		Expect(got.Definition.Action.Path).To(Equal(fmt.Sprintf("/bin/web-%d", winner)))
		definitions, err := b.store.Definitions(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		Expect(definitions).To(HaveLen(1), "a losing desire left its definition behind")
		instances := b.instances("web")
		Expect(instances).To(HaveLen(winner + 1))
		for _, instance := range instances {
			Expect(instance.DefinitionId).To(Equal(got.ActiveDefinitionId))
		}
	})

	It("refuses a nil LRP", func() {
		_, err := b.store.DesireLRP(b.ctx, nil)
		Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
	})

	Context("when the guid was desired and removed before", func() {
		BeforeEach(func() {
			_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 3))
			Expect(err).NotTo(HaveOccurred())
			b.setState("web", 1, models.ActualLRP_RUNNING, "cell-1")
			Expect(b.store.RemoveDesiredLRP(b.ctx, "web")).To(Succeed())
			b.clock.Advance(1000)
		})

		It("reuses the kept definition of the same content and keeps the running instance at its index", func() {
			// As if it had never been healthy: a desire makes it the
			// healthy baseline again, and so marks it.
			b.exec("UPDATE run_infos SET became_healthy = ? WHERE process_guid = 'web'", false)
			stored, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 3))
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.Definition.CreatedAt).To(Equal(b.clock.Now().UnixNano() - 1000))
			definitions, err := b.store.Definitions(b.ctx, "web")
			Expect(err).NotTo(HaveOccurred())
			Expect(definitions).To(HaveLen(1))
			Expect(definitions[0].BecameHealthy).To(BeTrue())

			instances := b.instances("web")
			Expect(instances).To(HaveLen(3))
			Expect(instances[1].State).To(Equal(models.ActualLRP_RUNNING))
			Expect(instances[1].CellId).To(Equal("cell-1"))
			Expect(instances[0].State).To(Equal(models.ActualLRP_UNCLAIMED))
			Expect(instances[2].State).To(Equal(models.ActualLRP_UNCLAIMED))
		})

		It("stores a definition of a new id next to the kept one and keeps the running instance at its index", func() {
			lrp := newLRP("web", "apps", 3)
			lrp.Definition = newDefinition("v2", "/bin/web-2")
			stored, err := b.store.DesireLRP(b.ctx, lrp)
			Expect(err).NotTo(HaveOccurred())
			now := b.clock.Now().UnixNano()
			Expect(stored.ActiveDefinitionId).To(Equal("v2"))
			Expect(stored.Definition.CreatedAt).To(Equal(now))

			got, err := b.store.DesiredLRPByProcessGuid(b.ctx, "web")
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(EqualProto(stored))
			definitions, err := b.store.Definitions(b.ctx, "web")
			Expect(err).NotTo(HaveOccurred())
			Expect(definitions).To(HaveLen(2))
			old, err := b.store.Definition(b.ctx, "web", "v1")
			Expect(err).NotTo(HaveOccurred())
			Expect(old.Action.Path).To(Equal("/bin/web"))

			instances := b.instances("web")
			Expect(instances).To(HaveLen(3))
			Expect(instances[1].State).To(Equal(models.ActualLRP_RUNNING))
			Expect(instances[1].DefinitionId).To(Equal("v1"), "the leftover keeps running what it ran")
			for _, i := range []int{0, 2} {
				Expect(instances[i].State).To(Equal(models.ActualLRP_UNCLAIMED))
				Expect(instances[i].DefinitionId).To(Equal("v2"))
				Expect(instances[i].Since).To(Equal(now))
			}
		})

		DescribeTable("stores no instance for zero instances and keeps the running leftover",
			func(definitionID string) {
				lrp := newLRP("web", "apps", 0)
				lrp.Definition.DefinitionId = definitionID
				stored, err := b.store.DesireLRP(b.ctx, lrp)
				Expect(err).NotTo(HaveOccurred())
				Expect(stored.Instances).To(BeZero())
				instances := b.instances("web")
				Expect(instances).To(HaveLen(1))
				Expect(instances[0].Index).To(BeEquivalentTo(1))
				Expect(instances[0].State).To(Equal(models.ActualLRP_RUNNING))
			},
			Entry("reusing the kept definition", "v1"),
			Entry("with a new definition", "v2"),
		)

		It("lets exactly one of concurrent re-desires succeed", func() {
			const racers = 4
			errs := make([]error, racers)
			var wg sync.WaitGroup
			for i := range racers {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					_, errs[i] = b.store.DesireLRP(b.ctx, newLRP("web", "apps", 3))
				}()
			}
			wg.Wait()
			var wins int
			for _, err := range errs {
				if err == nil {
					wins++
					continue
				}
				Expect(err).To(HaveErrorType(models.Error_ResourceExists))
			}
			Expect(wins).To(Equal(1), "%v", errs)
			Expect(b.instances("web")).To(HaveLen(3))
			definitions, err := b.store.Definitions(b.ctx, "web")
			Expect(err).NotTo(HaveOccurred())
			Expect(definitions).To(HaveLen(1))
		})

		It("refuses the same definition id with other content and stores nothing", func() {
			lrp := newLRP("web", "apps", 3)
			lrp.Definition.Action.Path = "/bin/something-else"
			_, err := b.store.DesireLRP(b.ctx, lrp)
			Expect(err).To(HaveErrorType(models.Error_ResourceConflict))

			_, err = b.store.DesiredLRPByProcessGuid(b.ctx, "web")
			Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
			Expect(b.instances("web")).To(HaveLen(1), "only the running leftover")
			def, err := b.store.Definition(b.ctx, "web", "v1")
			Expect(err).NotTo(HaveOccurred())
			Expect(def.Action.Path).To(Equal("/bin/web"))
		})
	})

	It("is visible in lists right away", func() {
		_, err := b.store.DesireLRP(b.ctx, newLRP("web", "apps", 1))
		Expect(err).NotTo(HaveOccurred())
		lrps, err := b.store.DesiredLRPs(b.ctx, db.DesiredLRPFilter{})
		Expect(err).NotTo(HaveOccurred())
		Expect(lrps).To(HaveLen(1))
	})
})
