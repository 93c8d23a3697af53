package handlers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("API", func() {
	for _, dialect := range testdb.MustDialects() {
		for _, wire := range wires {
			Describe(dialect+" with "+wire.name+" bodies", func() {
				var (
					b      *board
					guid   string
					domain string
				)

				BeforeEach(func() {
					b = newBoard(stores[dialect], wire)
					guid = randomName("lrp")
					domain = randomName("domain")
				})

				It("answers ping", func() {
					resp := &models.PingResponse{}
					b.call(models.RoutePing, &models.PingRequest{}, resp)
					Expect(resp.GetError()).To(BeNil())
					Expect(resp.GetAvailable()).To(BeTrue())
				})

				Describe("desiring an LRP", func() {
					var desired *models.DesiredLRP

					BeforeEach(func() {
						desired = b.mustDesire(newLRP(guid, domain, 3))
					})

					It("stores it with its definition active and reads it back", func() {
						Expect(desired.GetProcessGuid()).To(Equal(guid))
						Expect(desired.GetActiveDefinitionId()).NotTo(BeEmpty())
						Expect(desired.GetModificationTag()).NotTo(BeNil())

						got := b.mustGet(guid)
						Expect(got.GetDomain()).To(Equal(domain))
						Expect(got.GetInstances()).To(BeEquivalentTo(3))
						Expect(got.GetAnnotation()).To(Equal("made by the handlers suite"))
						Expect(got.GetActiveDefinitionId()).To(Equal(desired.GetActiveDefinitionId()))
						Expect(got.GetDefinition().GetAction().GetPath()).To(Equal("/bin/app"))
						Expect(got.GetDefinition().GetDefinitionId()).To(Equal(desired.GetActiveDefinitionId()))
					})

					It("lists it by domain and by guid", func() {
						other := b.mustDesire(newLRP(randomName("lrp"), randomName("domain"), 1))

						byDomain := b.list(&models.DesiredLRPsRequest{Domain: domain})
						Expect(byDomain).To(HaveLen(1))
						Expect(byDomain[0].GetProcessGuid()).To(Equal(guid))
						Expect(byDomain[0].GetDefinition().GetAction().GetPath()).To(Equal("/bin/app"))

						byGuid := b.list(&models.DesiredLRPsRequest{ProcessGuids: []string{guid, other.GetProcessGuid()}})
						Expect(guidsOf(byGuid)).To(ConsistOf(guid, other.GetProcessGuid()))
					})

					It("lists its scheduling info with the definition's resources", func() {
						resp := &models.DesiredLRPSchedulingInfosResponse{}
						b.call(models.RouteDesiredLRPSchedulingInfos, &models.DesiredLRPSchedulingInfosRequest{Domain: domain}, resp)
						Expect(resp.GetError()).To(BeNil())
						Expect(resp.GetDesiredLrpSchedulingInfos()).To(HaveLen(1))
						info := resp.GetDesiredLrpSchedulingInfos()[0]
						Expect(info.GetProcessGuid()).To(Equal(guid))
						Expect(info.GetInstances()).To(BeEquivalentTo(3))
						Expect(info.GetMemoryMb()).To(BeEquivalentTo(256))
						Expect(info.GetDiskMb()).To(BeEquivalentTo(1024))
						Expect(info.GetActiveDefinitionId()).To(Equal(desired.GetActiveDefinitionId()))
					})

					It("creates one UNCLAIMED actual LRP per index on the definition, found by every filter", func() {
						actual := b.actualLRPs(&models.ActualLRPsRequest{ProcessGuid: guid})
						Expect(actual).To(HaveLen(3))
						for _, a := range actual {
							Expect(a.GetState()).To(Equal(models.ActualLRP_UNCLAIMED))
							Expect(a.GetDefinitionId()).To(Equal(desired.GetActiveDefinitionId()))
							Expect(a.GetDomain()).To(Equal(domain))
						}
						Expect(indicesOf(actual)).To(ConsistOf(int32(0), int32(1), int32(2)))

						Expect(b.actualLRPs(&models.ActualLRPsRequest{Domain: domain})).To(HaveLen(3))

						one := b.actualLRPs(&models.ActualLRPsRequest{ProcessGuid: guid, Index: proto.Int32(1)})
						Expect(one).To(HaveLen(1))
						Expect(one[0].GetIndex()).To(BeEquivalentTo(1))

						zero := b.actualLRPs(&models.ActualLRPsRequest{ProcessGuid: guid, Index: proto.Int32(0)})
						Expect(indicesOf(zero)).To(ConsistOf(int32(0)))

						Expect(b.actualLRPs(&models.ActualLRPsRequest{ProcessGuid: guid, CellId: "cell-nobody-has"})).To(BeEmpty())
					})

					It("lists and gets its one definition", func() {
						definitions := b.definitions(guid)
						Expect(definitions.GetError()).To(BeNil())
						Expect(definitions.GetDefinitions()).To(HaveLen(1))
						summary := definitions.GetDefinitions()[0]
						Expect(summary.GetDefinitionId()).To(Equal(desired.GetActiveDefinitionId()))
						Expect(summary.GetActive()).To(BeTrue())
						Expect(summary.GetMemoryMb()).To(BeEquivalentTo(256))

						resp := &models.DefinitionResponse{}
						b.call(models.RouteDefinition, &models.DefinitionRequest{ProcessGuid: guid, DefinitionId: summary.GetDefinitionId()}, resp)
						Expect(resp.GetError()).To(BeNil())
						Expect(resp.GetDefinition().GetAction().GetPath()).To(Equal("/bin/app"))
						Expect(resp.GetDefinition().GetPorts()).To(Equal([]uint32{8080}))
					})

					It("refuses the same guid again with ResourceExists, changing nothing", func() {
						before := b.snapshot(guid)
						again := newLRP(guid, domain, 7)
						again.Definition = newDefinition("/bin/other")

						resp := b.desire(again)
						Expect(resp.GetError().GetType()).To(Equal(models.Error_ResourceExists))
						b.expectUnchanged(guid, before)
					})

					It("scales with a classic update, creating and deleting UNCLAIMED instances without a new definition", func() {
						resp := b.update(guid, &models.DesiredLRPUpdate{Instances: proto.Int32(5), Annotation: proto.String("scaled up")})
						Expect(resp.GetError()).To(BeNil())
						Expect(resp.GetDesiredLrp().GetInstances()).To(BeEquivalentTo(5))

						got := b.mustGet(guid)
						Expect(got.GetInstances()).To(BeEquivalentTo(5))
						Expect(got.GetAnnotation()).To(Equal("scaled up"))
						Expect(got.GetActiveDefinitionId()).To(Equal(desired.GetActiveDefinitionId()))
						Expect(indicesOf(b.actualLRPs(&models.ActualLRPsRequest{ProcessGuid: guid}))).To(ConsistOf(int32(0), int32(1), int32(2), int32(3), int32(4)))

						resp = b.update(guid, &models.DesiredLRPUpdate{Instances: proto.Int32(1)})
						Expect(resp.GetError()).To(BeNil())
						Expect(indicesOf(b.actualLRPs(&models.ActualLRPsRequest{ProcessGuid: guid}))).To(ConsistOf(int32(0)))
						Expect(b.definitions(guid).GetDefinitions()).To(HaveLen(1))
					})

					It("updates routes", func() {
						routes, err := structpb.NewStruct(map[string]any{"http": []any{map[string]any{"hostname": "a.example"}}})
						Expect(err).NotTo(HaveOccurred())
						Expect(b.update(guid, &models.DesiredLRPUpdate{Routes: routes}).GetError()).To(BeNil())
						Expect(proto.Equal(b.mustGet(guid).GetRoutes(), routes)).To(BeTrue())
					})

					Describe("an update with a new definition", func() {
						var v2 *models.LRPDefinition

						BeforeEach(func() {
							v2 = newDefinition("/bin/app-v2")
							v2.MemoryMb = 512
						})

						It("stores a second definition and makes it active", func() {
							resp := b.update(guid, &models.DesiredLRPUpdate{Definition: v2, UpdateIdentifier: "v2"})
							Expect(resp.GetError()).To(BeNil())
							Expect(resp.GetDesiredLrp().GetActiveDefinitionId()).To(Equal("v2"))

							got := b.mustGet(guid)
							Expect(got.GetActiveDefinitionId()).To(Equal("v2"))
							Expect(got.GetDefinition().GetAction().GetPath()).To(Equal("/bin/app-v2"))

							definitions := b.definitions(guid).GetDefinitions()
							Expect(definitions).To(HaveLen(2))
							Expect(definitions[0].GetDefinitionId()).To(Equal("v2"), "newest first")
							Expect(definitions[0].GetActive()).To(BeTrue())
							Expect(definitions[0].GetMemoryMb()).To(BeEquivalentTo(512))
							Expect(definitions[1].GetDefinitionId()).To(Equal(desired.GetActiveDefinitionId()))
							Expect(definitions[1].GetActive()).To(BeFalse())

							one := &models.DefinitionResponse{}
							b.call(models.RouteDefinition, &models.DefinitionRequest{ProcessGuid: guid, DefinitionId: "v2"}, one)
							Expect(one.GetError()).To(BeNil())
							Expect(one.GetDefinition().GetAction().GetPath()).To(Equal("/bin/app-v2"))
						})

						It("is idempotent for the same identifier and content", func() {
							Expect(b.update(guid, &models.DesiredLRPUpdate{Definition: v2, UpdateIdentifier: "v2"}).GetError()).To(BeNil())
							before := b.snapshot(guid)

							resp := b.update(guid, &models.DesiredLRPUpdate{Definition: v2, UpdateIdentifier: "v2"})
							Expect(resp.GetError()).To(BeNil())
							Expect(resp.GetDesiredLrp().GetActiveDefinitionId()).To(Equal("v2"))
							Expect(b.snapshot(guid).definitions).To(HaveLen(len(before.definitions)))
						})

						It("is a ResourceConflict for the same identifier with other content, changing nothing", func() {
							Expect(b.update(guid, &models.DesiredLRPUpdate{Definition: v2, UpdateIdentifier: "v2"}).GetError()).To(BeNil())
							before := b.snapshot(guid)

							resp := b.update(guid, &models.DesiredLRPUpdate{Definition: newDefinition("/bin/something-else"), UpdateIdentifier: "v2"})
							Expect(resp.GetError().GetType()).To(Equal(models.Error_ResourceConflict))
							b.expectUnchanged(guid, before)
						})

						It("is a ResourceConflict for a stale modification tag, changing nothing", func() {
							staleTag := proto.Clone(desired.GetModificationTag()).(*models.ModificationTag)
							Expect(b.update(guid, &models.DesiredLRPUpdate{Annotation: proto.String("moves the tag on")}).GetError()).To(BeNil())
							before := b.snapshot(guid)

							resp := b.update(guid, &models.DesiredLRPUpdate{Definition: v2, UpdateIdentifier: "v2", ModificationTag: staleTag})
							Expect(resp.GetError().GetType()).To(Equal(models.Error_ResourceConflict))
							b.expectUnchanged(guid, before)
						})

						It("applies with the current modification tag", func() {
							current := b.mustGet(guid).GetModificationTag()
							resp := b.update(guid, &models.DesiredLRPUpdate{Definition: v2, UpdateIdentifier: "v2", ModificationTag: current})
							Expect(resp.GetError()).To(BeNil())
							Expect(b.mustGet(guid).GetActiveDefinitionId()).To(Equal("v2"))
						})
					})

					It("removes it with its UNCLAIMED instances", func() {
						resp := &models.RemoveDesiredLRPResponse{}
						b.call(models.RouteRemoveDesiredLRP, &models.RemoveDesiredLRPRequest{ProcessGuid: guid}, resp)
						Expect(resp.GetError()).To(BeNil())

						Expect(b.get(guid).GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
						Expect(b.list(&models.DesiredLRPsRequest{Domain: domain})).To(BeEmpty())
						Expect(b.actualLRPs(&models.ActualLRPsRequest{ProcessGuid: guid})).To(BeEmpty())

						again := &models.RemoveDesiredLRPResponse{}
						b.call(models.RouteRemoveDesiredLRP, &models.RemoveDesiredLRPRequest{ProcessGuid: guid}, again)
						Expect(again.GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
					})
				})

				Describe("an LRP that does not exist", func() {
					It("is ResourceNotFound for get, update, definitions and one definition", func() {
						Expect(b.get(guid).GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
						Expect(b.update(guid, &models.DesiredLRPUpdate{Instances: proto.Int32(2)}).GetError().GetType()).To(Equal(models.Error_ResourceNotFound))

						one := &models.DefinitionResponse{}
						b.call(models.RouteDefinition, &models.DefinitionRequest{ProcessGuid: guid, DefinitionId: "v1"}, one)
						Expect(one.GetError().GetType()).To(Equal(models.Error_ResourceNotFound))

						b.expectNothingDesired(guid, domain)
					})

					It("is ResourceNotFound for its definitions list", func() {
						resp := b.definitions(guid)
						Expect(resp.GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
						Expect(resp.GetDefinitions()).To(BeEmpty())
					})
				})

				Describe("domains", func() {
					It("upserts and lists fresh domains", func() {
						resp := &models.UpsertDomainResponse{}
						b.call(models.RouteUpsertDomain, &models.UpsertDomainRequest{Domain: domain, TtlSeconds: 0}, resp)
						Expect(resp.GetError()).To(BeNil())
						expiring := randomName("domain")
						b.call(models.RouteUpsertDomain, &models.UpsertDomainRequest{Domain: expiring, TtlSeconds: 3600}, resp)
						Expect(resp.GetError()).To(BeNil())

						list := &models.DomainsResponse{}
						b.call(models.RouteDomains, &models.DomainsRequest{}, list)
						Expect(list.GetError()).To(BeNil())
						byName := map[string]*models.Domain{}
						for _, d := range list.GetDomains() {
							byName[d.GetDomain()] = d
						}
						Expect(byName).To(HaveKey(domain))
						Expect(byName[domain].GetExpiresAt()).To(BeZero())
						Expect(byName).To(HaveKey(expiring))
						Expect(byName[expiring].GetExpiresAt()).To(BeNumerically(">", 0))
					})
				})
			})
		}
	}
})

func guidsOf(lrps []*models.DesiredLRP) []string {
	var guids []string
	for _, l := range lrps {
		guids = append(guids, l.GetProcessGuid())
	}
	return guids
}

func indicesOf(lrps []*models.ActualLRP) []int32 {
	var indices []int32
	for _, l := range lrps {
		indices = append(indices, l.GetIndex())
	}
	return indices
}
