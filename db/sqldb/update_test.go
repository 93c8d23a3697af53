package sqldb_test

import (
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

var _ = forEachDialect("UpdateDesiredLRP", func(b *board) {
	var desired *models.DesiredLRP

	BeforeEach(func() {
		var err error
		desired, err = b.store.DesireLRP(b.ctx, newLRP("web", "apps", 3))
		Expect(err).NotTo(HaveOccurred())
		b.clock.Advance(1000)
	})

	get := func() *models.DesiredLRP {
		lrp, err := b.store.DesiredLRPByProcessGuid(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		return lrp
	}
	definitionIDs := func() []string {
		summaries, err := b.store.Definitions(b.ctx, "web")
		Expect(err).NotTo(HaveOccurred())
		var ids []string
		for _, s := range summaries {
			ids = append(ids, s.DefinitionId)
		}
		return ids
	}
	// expectUnchanged checks that a refused update left every table as it was.
	expectUnchanged := func(before *models.DesiredLRP, instances []*models.ActualLRP, definitions []string) {
		Expect(get()).To(EqualProto(before))
		after := b.instances("web")
		Expect(after).To(HaveLen(len(instances)))
		for i := range instances {
			Expect(after[i]).To(EqualProto(instances[i]))
		}
		Expect(definitionIDs()).To(Equal(definitions))
	}

	Describe("the classic fields", func() {
		It("changes only the fields that are set and bumps the tag index", func() {
			updated, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Annotation: stringp("new note")})
			Expect(err).NotTo(HaveOccurred())
			Expect(updated.Annotation).To(Equal("new note"))
			Expect(updated.Routes).To(EqualProto(desired.Routes))
			Expect(updated.Instances).To(BeEquivalentTo(3))
			Expect(updated.ModificationTag.Epoch).To(Equal(desired.ModificationTag.Epoch))
			Expect(updated.ModificationTag.Index).To(BeEquivalentTo(1))
			Expect(get()).To(EqualProto(updated))

			routes, err := structpb.NewStruct(map[string]any{"tcp": []any{map[string]any{"port": 8080}}})
			Expect(err).NotTo(HaveOccurred())
			updated, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Routes: routes})
			Expect(err).NotTo(HaveOccurred())
			Expect(updated.Routes).To(EqualProto(routes))
			Expect(updated.Annotation).To(Equal("new note"))
			Expect(updated.ModificationTag.Index).To(BeEquivalentTo(2))
		})

		It("counts an empty update as an update", func() {
			updated, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{})
			Expect(err).NotTo(HaveOccurred())
			Expect(updated.ModificationTag.Index).To(BeEquivalentTo(1))
			want := proto.Clone(desired).(*models.DesiredLRP)
			want.ModificationTag.Index = 1
			Expect(updated).To(EqualProto(want))
		})

		It("stores a given update strategy", func() {
			strategy := &models.UpdateStrategy{MaxSurge: "2", MaxUnavailable: "10%", MinReadyMs: 500, HistoryLimit: 3}
			updated, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{UpdateStrategy: strategy})
			Expect(err).NotTo(HaveOccurred())
			Expect(updated.UpdateStrategy).To(EqualProto(strategy))
			Expect(get().UpdateStrategy).To(EqualProto(strategy))
		})

		It("stores a disruption budget, says so in the operation, and an empty one goes back to the strategy's", func() {
			budget := &models.DisruptionBudget{MaxUnavailable: "25%"}
			updated, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{DisruptionBudget: budget})
			Expect(err).NotTo(HaveOccurred())
			Expect(updated.DisruptionBudget).To(EqualProto(budget))
			Expect(get()).To(EqualProto(updated))
			ops, _, err := b.store.Operations(b.ctx, db.OperationFilter{ProcessGuid: "web"})
			Expect(err).NotTo(HaveOccurred())
			Expect(ops[0].History[0].Message).To(Equal("disruption budget: max_unavailable 25%"))

			updated, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{DisruptionBudget: &models.DisruptionBudget{}})
			Expect(err).NotTo(HaveOccurred())
			Expect(updated.DisruptionBudget).To(BeNil())
			Expect(get()).To(EqualProto(updated))
		})

		It("is ResourceNotFound for an unknown guid", func() {
			_, err := b.store.UpdateDesiredLRP(b.ctx, "nope", &models.DesiredLRPUpdate{Instances: int32p(1)})
			Expect(err).To(HaveErrorType(models.Error_ResourceNotFound))
			Expect(b.instances("nope")).To(BeEmpty())
		})

		It("refuses negative instances, naming the field, and changes nothing", func() {
			instances := b.instances("web")
			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Instances: int32p(-1)})
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(err.Error()).To(ContainSubstring("update.instances"))
			expectUnchanged(desired, instances, []string{"v1"})
		})
	})

	Describe("scaling", func() {
		It("adds UNCLAIMED instances for the new indices and leaves the others alone", func() {
			b.setState("web", 0, models.ActualLRP_RUNNING, "cell-1")
			before := b.instances("web")

			updated, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Instances: int32p(5)})
			Expect(err).NotTo(HaveOccurred())
			Expect(updated.Instances).To(BeEquivalentTo(5))

			after := b.instances("web")
			Expect(after).To(HaveLen(5))
			for i := range before {
				Expect(after[i]).To(EqualProto(before[i]))
			}
			for _, added := range after[3:] {
				Expect(added.State).To(Equal(models.ActualLRP_UNCLAIMED))
				Expect(added.Presence).To(Equal(models.ActualLRP_ORDINARY))
				Expect(added.DefinitionId).To(Equal("v1"))
				Expect(added.Domain).To(Equal("apps"))
				Expect(added.Since).To(Equal(b.clock.Now().UnixNano()))
			}
		})

		It("deletes UNCLAIMED instances at or above the count and leaves claimed and running ones", func() {
			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Instances: int32p(6)})
			Expect(err).NotTo(HaveOccurred())
			b.setState("web", 2, models.ActualLRP_RUNNING, "cell-1")
			b.setState("web", 4, models.ActualLRP_CLAIMED, "cell-2")

			_, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Instances: int32p(1)})
			Expect(err).NotTo(HaveOccurred())

			after := b.instances("web")
			Expect(after).To(HaveLen(3))
			Expect(after[0].Index).To(BeEquivalentTo(0))
			Expect(after[0].State).To(Equal(models.ActualLRP_UNCLAIMED))
			Expect(after[1].Index).To(BeEquivalentTo(2))
			Expect(after[1].State).To(Equal(models.ActualLRP_RUNNING))
			Expect(after[2].Index).To(BeEquivalentTo(4))
			Expect(after[2].State).To(Equal(models.ActualLRP_CLAIMED))
		})

		It("scales to zero", func() {
			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Instances: int32p(0)})
			Expect(err).NotTo(HaveOccurred())
			Expect(b.instances("web")).To(BeEmpty())
		})

		It("scaling back up keeps a running instance left above the count instead of adding a second one", func() {
			b.setState("web", 2, models.ActualLRP_RUNNING, "cell-1")
			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Instances: int32p(1)})
			Expect(err).NotTo(HaveOccurred())
			_, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Instances: int32p(4)})
			Expect(err).NotTo(HaveOccurred())

			after := b.instances("web")
			Expect(after).To(HaveLen(4))
			Expect(after[2].State).To(Equal(models.ActualLRP_RUNNING))
			Expect(after[2].CellId).To(Equal("cell-1"))
			Expect(b.count("SELECT COUNT(*) FROM actual_lrps WHERE process_guid = ? AND instance_index = 2", "web")).To(Equal(1))
		})

		It("leaves non-ORDINARY instances alone", func() {
			b.putActual(&models.ActualLRP{
				ProcessGuid: "web", Index: 2, Presence: models.ActualLRP_EVACUATING, Domain: "apps",
				DefinitionId: "v1", State: models.ActualLRP_UNCLAIMED, ModificationTag: &models.ModificationTag{Epoch: "e"},
			})
			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Instances: int32p(1)})
			Expect(err).NotTo(HaveOccurred())
			after := b.instances("web")
			Expect(after).To(HaveLen(2))
			Expect(after[1].Presence).To(Equal(models.ActualLRP_EVACUATING))
		})
	})

	Describe("a new definition", func() {
		It("stores a new version under the update identifier, active at once, without touching the instances", func() {
			before := b.instances("web")
			def := newDefinition("", "/bin/web-2")
			def.MemoryMb = 512
			updated, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Definition: def, UpdateIdentifier: "v2"})
			Expect(err).NotTo(HaveOccurred())

			Expect(updated.ActiveDefinitionId).To(Equal("v2"))
			Expect(updated.Definition.DefinitionId).To(Equal("v2"))
			Expect(updated.Definition.CreatedAt).To(Equal(b.clock.Now().UnixNano()))
			Expect(updated.Definition.Action.Path).To(Equal("/bin/web-2"))
			Expect(updated.Definition.MemoryMb).To(BeEquivalentTo(512))
			Expect(updated.ModificationTag.Index).To(BeEquivalentTo(1))
			Expect(get()).To(EqualProto(updated))
			Expect(definitionIDs()).To(Equal([]string{"v2", "v1"}))

			after := b.instances("web")
			for i := range before {
				Expect(after[i]).To(EqualProto(before[i]), "no restart")
			}
		})

		It("stamps instances added in the same update with the new definition", func() {
			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
				Definition: newDefinition("", "/bin/web-2"), UpdateIdentifier: "v2", Instances: int32p(4),
			})
			Expect(err).NotTo(HaveOccurred())
			after := b.instances("web")
			Expect(after[2].DefinitionId).To(Equal("v1"))
			Expect(after[3].DefinitionId).To(Equal("v2"))
		})

		It("names the definition by its content when no identifier is given", func() {
			def := newDefinition("", "/bin/web-2")
			updated, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Definition: def})
			Expect(err).NotTo(HaveOccurred())
			Expect(updated.ActiveDefinitionId).To(Equal(models.GenerateDefinitionID(def)))
		})

		It("treats the same identifier and content sent twice as one version", func() {
			update := &models.DesiredLRPUpdate{Definition: newDefinition("", "/bin/web-2"), UpdateIdentifier: "v2"}
			first, err := b.store.UpdateDesiredLRP(b.ctx, "web", update)
			Expect(err).NotTo(HaveOccurred())
			b.clock.Advance(1000)
			second, err := b.store.UpdateDesiredLRP(b.ctx, "web", update)
			Expect(err).NotTo(HaveOccurred())

			Expect(second.ActiveDefinitionId).To(Equal("v2"))
			Expect(second.Definition).To(EqualProto(first.Definition), "created_at is the first store's")
			Expect(definitionIDs()).To(Equal([]string{"v2", "v1"}))
		})

		It("refuses an identifier reused with other content and changes nothing", func() {
			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
				Definition: newDefinition("", "/bin/web-2"), UpdateIdentifier: "v2",
			})
			Expect(err).NotTo(HaveOccurred())
			before, instances := get(), b.instances("web")

			_, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
				Definition: newDefinition("", "/bin/web-3"), UpdateIdentifier: "v2",
				Instances: int32p(5), Annotation: stringp("should not land"),
			})
			Expect(err).To(HaveErrorType(models.Error_ResourceConflict))
			Expect(err.Error()).To(ContainSubstring(`"v2"`))
			expectUnchanged(before, instances, []string{"v2", "v1"})
			def, err := b.store.Definition(b.ctx, "web", "v2")
			Expect(err).NotTo(HaveOccurred())
			Expect(def.Action.Path).To(Equal("/bin/web-2"))
		})

		It("rolls back by re-sending a kept definition under its identifier", func() {
			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
				Definition: newDefinition("", "/bin/web-2"), UpdateIdentifier: "v2",
			})
			Expect(err).NotTo(HaveOccurred())
			b.clock.Advance(1000)

			rolledBack, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
				Definition: newDefinition("", "/bin/web"), UpdateIdentifier: "v1",
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(rolledBack.ActiveDefinitionId).To(Equal("v1"))
			Expect(rolledBack.Definition).To(EqualProto(desired.Definition))
			Expect(definitionIDs()).To(Equal([]string{"v2", "v1"}))

			summaries, err := b.store.Definitions(b.ctx, "web")
			Expect(err).NotTo(HaveOccurred())
			Expect(summaries[0].Active).To(BeFalse())
			Expect(summaries[1].Active).To(BeTrue())
		})

		It("refuses an identifier wider than its column, naming the field, and changes nothing", func() {
			instances := b.instances("web")
			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
				Definition: newDefinition("", "/bin/web-2"), UpdateIdentifier: strings.Repeat("v", 65),
			})
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(err.Error()).To(ContainSubstring("update.update_identifier"))
			expectUnchanged(desired, instances, []string{"v1"})
		})

		It("refuses a definition protobuf cannot encode, naming the field, and changes nothing", func() {
			instances := b.instances("web")
			_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
				Definition: newDefinition("", "\xff"), UpdateIdentifier: "v2",
			})
			Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
			Expect(err.Error()).To(ContainSubstring("update.definition"))
			expectUnchanged(desired, instances, []string{"v1"})
		})
	})

	Describe("the modification tag", func() {
		It("applies an update carrying the current tag", func() {
			updated, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
				Instances: int32p(4), ModificationTag: desired.ModificationTag,
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(updated.ModificationTag.Index).To(BeEquivalentTo(1))
		})

		DescribeTable("refuses a stale tag with ResourceConflict and changes nothing",
			func(stale func(current *models.ModificationTag) *models.ModificationTag) {
				_, err := b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Annotation: stringp("moved on")})
				Expect(err).NotTo(HaveOccurred())
				before, instances := get(), b.instances("web")

				_, err = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
					Instances: int32p(7), Definition: newDefinition("", "/bin/web-2"), UpdateIdentifier: "v2",
					ModificationTag: stale(before.ModificationTag),
				})
				Expect(err).To(HaveErrorType(models.Error_ResourceConflict))
				expectUnchanged(before, instances, []string{"v1"})
			},
			Entry("an older index", func(c *models.ModificationTag) *models.ModificationTag {
				return &models.ModificationTag{Epoch: c.Epoch, Index: c.Index - 1}
			}),
			Entry("another tag epoch", func(c *models.ModificationTag) *models.ModificationTag {
				return &models.ModificationTag{Epoch: "someone-else", Index: c.Index}
			}),
			Entry("an empty tag", func(*models.ModificationTag) *models.ModificationTag {
				return &models.ModificationTag{}
			}),
		)

		It("lets exactly one of two racing updates with the same tag win", func() {
			for round := 0; round < 5; round++ {
				current := get()
				errs := make([]error, 2)
				var wg sync.WaitGroup
				for i := range errs {
					wg.Add(1)
					go func() {
						defer GinkgoRecover()
						defer wg.Done()
						_, errs[i] = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{
							Instances: int32p(int32(3 + i)), ModificationTag: current.ModificationTag,
						})
					}()
				}
				wg.Wait()

				var wins, conflicts int
				for _, err := range errs {
					if err == nil {
						wins++
					} else if models.IsErrorType(err, models.Error_ResourceConflict) {
						conflicts++
					}
				}
				Expect(wins).To(Equal(1), "round %d: %v", round, errs)
				Expect(conflicts).To(Equal(1), "round %d: %v", round, errs)
				Expect(get().ModificationTag.Index).To(Equal(current.ModificationTag.Index + 1))
			}
		})

		It("applies every one of concurrent updates that carry no tag", func() {
			const writers = 8
			var wg sync.WaitGroup
			errs := make([]error, writers)
			for i := range writers {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					_, errs[i] = b.store.UpdateDesiredLRP(b.ctx, "web", &models.DesiredLRPUpdate{Annotation: stringp("writer")})
				}()
			}
			wg.Wait()
			for _, err := range errs {
				Expect(err).NotTo(HaveOccurred())
			}
			Expect(get().ModificationTag.Index).To(BeEquivalentTo(writers))
		})
	})
})
