package client_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/client"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Client against a real board", func() {
	var (
		ctx context.Context
		c   *client.Client
	)

	BeforeEach(func() {
		ctx = context.Background()
		c = client.New(startBoard().URL)
	})

	It("pings", func() {
		Expect(c.Ping(ctx)).To(BeTrue())
	})

	Describe("domains", func() {
		It("upserts a domain and lists it while it is fresh", func() {
			before := time.Now()
			Expect(c.UpsertDomain(ctx, "cork", time.Hour)).To(Succeed())
			Expect(c.UpsertDomain(ctx, "forever", 0)).To(Succeed())

			domains, err := c.Domains(ctx)
			Expect(err).NotTo(HaveOccurred())
			byName := map[string]int64{}
			for _, d := range domains {
				byName[d.GetDomain()] = d.GetExpiresAt()
			}
			Expect(byName).To(HaveKeyWithValue("forever", int64(0)))
			Expect(byName).To(HaveKey("cork"))
			Expect(time.Unix(0, byName["cork"])).To(BeTemporally(">=", before.Add(time.Hour).Add(-time.Second)))
			Expect(time.Unix(0, byName["cork"])).To(BeTemporally("<=", time.Now().Add(time.Hour).Add(time.Second)))
		})

		It("rounds a sub-second TTL up instead of down to 'forever'", func() {
			Expect(c.UpsertDomain(ctx, "brief", 300*time.Millisecond)).To(Succeed())
			domains, err := c.Domains(ctx)
			Expect(err).NotTo(HaveOccurred())
			for _, d := range domains {
				if d.GetDomain() == "brief" {
					Expect(d.GetExpiresAt()).NotTo(BeZero())
				}
			}
		})

		It("surfaces InvalidRequest for a bad domain", func() {
			err := c.UpsertDomain(ctx, "", time.Minute)
			Expect(err).To(errorOfType(models.Error_InvalidRequest))
			Expect(err.Error()).To(ContainSubstring("domain"))
		})
	})

	Describe("desired LRPs", func() {
		It("desires an LRP and reads it back with its active definition", func() {
			stored, err := c.DesireLRP(ctx, helloLRP("hello"))
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.GetProcessGuid()).To(Equal("hello"))
			Expect(stored.GetActiveDefinitionId()).To(Equal(models.GenerateDefinitionID(helloDefinition("v1"))))

			got, err := c.DesiredLRPByProcessGuid(ctx, "hello")
			Expect(err).NotTo(HaveOccurred())
			Expect(got.GetInstances()).To(BeEquivalentTo(2))
			Expect(got.GetAnnotation()).To(Equal("from the client suite"))
			Expect(got.GetDefinition().GetAction().GetEnv()[0].GetValue()).To(Equal("v1"))
			Expect(got.GetDefinition().GetDefinitionId()).To(Equal(stored.GetActiveDefinitionId()))
		})

		It("answers ResourceExists for a second desire of the same guid, and keeps the first", func() {
			_, err := c.DesireLRP(ctx, helloLRP("hello"))
			Expect(err).NotTo(HaveOccurred())
			again := helloLRP("hello")
			again.Instances = 7
			_, err = c.DesireLRP(ctx, again)
			Expect(err).To(errorOfType(models.Error_ResourceExists))

			got, err := c.DesiredLRPByProcessGuid(ctx, "hello")
			Expect(err).NotTo(HaveOccurred())
			Expect(got.GetInstances()).To(BeEquivalentTo(2))
		})

		It("answers InvalidRequest naming the field for a bad LRP, and stores nothing", func() {
			bad := helloLRP("hello")
			bad.Instances = -1
			_, err := c.DesireLRP(ctx, bad)
			Expect(err).To(errorOfType(models.Error_InvalidRequest))
			Expect(err.Error()).To(ContainSubstring("instances"))

			_, err = c.DesiredLRPByProcessGuid(ctx, "hello")
			Expect(err).To(errorOfType(models.Error_ResourceNotFound))
		})

		It("answers ResourceNotFound for an unknown guid", func() {
			_, err := c.DesiredLRPByProcessGuid(ctx, "nobody")
			Expect(err).To(errorOfType(models.Error_ResourceNotFound))
			Expect(models.IsErrorType(err, models.Error_ResourceNotFound)).To(BeTrue())
		})

		It("lists LRPs, filtered by domain and by guid", func() {
			other := helloLRP("other")
			other.Domain = "elsewhere"
			for _, lrp := range []*models.DesiredLRP{helloLRP("hello"), helloLRP("hello-2"), other} {
				_, err := c.DesireLRP(ctx, lrp)
				Expect(err).NotTo(HaveOccurred())
			}

			all, err := c.DesiredLRPs(ctx, client.DesiredLRPFilter{})
			Expect(err).NotTo(HaveOccurred())
			Expect(guidsOf(all)).To(ConsistOf("hello", "hello-2", "other"))
			for _, lrp := range all {
				Expect(lrp.GetDefinition().GetAction().GetPath()).To(Equal("./hello"))
			}

			inCork, err := c.DesiredLRPs(ctx, client.DesiredLRPFilter{Domain: "cork"})
			Expect(err).NotTo(HaveOccurred())
			Expect(guidsOf(inCork)).To(ConsistOf("hello", "hello-2"))

			picked, err := c.DesiredLRPs(ctx, client.DesiredLRPFilter{ProcessGuids: []string{"other", "hello"}})
			Expect(err).NotTo(HaveOccurred())
			Expect(guidsOf(picked)).To(ConsistOf("hello", "other"))
		})

		It("reads lists a page at a time, following the cursor to the end", func() {
			for _, guid := range []string{"c", "a", "e", "b", "d"} {
				_, err := c.DesireLRP(ctx, helloLRP(guid))
				Expect(err).NotTo(HaveOccurred())
			}
			var read []string
			page := client.Page{Limit: 2}
			for range 5 {
				lrps, next, err := c.DesiredLRPsPage(ctx, client.DesiredLRPFilter{Domain: "cork"}, page)
				Expect(err).NotTo(HaveOccurred())
				read = append(read, guidsOf(lrps)...)
				if page.Cursor = next; next == "" {
					break
				}
			}
			Expect(read).To(Equal([]string{"a", "b", "c", "d", "e"}))

			instances, next, err := c.ActualLRPsPage(ctx, client.ActualLRPFilter{ProcessGuid: "a"}, client.Page{Limit: 1})
			Expect(err).NotTo(HaveOccurred())
			Expect(instances).To(HaveLen(1))
			Expect(next).NotTo(BeEmpty(), "a has more than one instance")

			_, _, err = c.CellsPage(ctx, client.Page{Limit: models.MaxListPage + 1})
			Expect(err).To(MatchError(ContainSubstring("limit: must be between 0")))
		})

		It("lists scheduling infos without run definitions", func() {
			_, err := c.DesireLRP(ctx, helloLRP("hello"))
			Expect(err).NotTo(HaveOccurred())
			infos, err := c.DesiredLRPSchedulingInfos(ctx, client.DesiredLRPFilter{Domain: "cork"})
			Expect(err).NotTo(HaveOccurred())
			Expect(infos).To(HaveLen(1))
			Expect(infos[0].GetProcessGuid()).To(Equal("hello"))
			Expect(infos[0].GetMemoryMb()).To(BeEquivalentTo(64))
			Expect(infos[0].GetDiskMb()).To(BeEquivalentTo(32))

			none, err := c.DesiredLRPSchedulingInfos(ctx, client.DesiredLRPFilter{Domain: "elsewhere"})
			Expect(err).NotTo(HaveOccurred())
			Expect(none).To(BeEmpty())
		})

		It("removes an LRP; a second removal is ResourceNotFound", func() {
			_, err := c.DesireLRP(ctx, helloLRP("hello"))
			Expect(err).NotTo(HaveOccurred())
			Expect(c.RemoveDesiredLRP(ctx, "hello")).To(Succeed())

			_, err = c.DesiredLRPByProcessGuid(ctx, "hello")
			Expect(err).To(errorOfType(models.Error_ResourceNotFound))
			Expect(c.RemoveDesiredLRP(ctx, "hello")).To(errorOfType(models.Error_ResourceNotFound))
			actual, err := c.ActualLRPs(ctx, client.ActualLRPFilter{ProcessGuid: "hello"})
			Expect(err).NotTo(HaveOccurred())
			Expect(actual).To(BeEmpty(), "unclaimed instances go with the LRP")
		})
	})

	Describe("updates and definitions", func() {
		var desired *models.DesiredLRP

		BeforeEach(func() {
			var err error
			desired, err = c.DesireLRP(ctx, helloLRP("hello"))
			Expect(err).NotTo(HaveOccurred())
		})

		It("changes instances and annotation without a new definition", func() {
			instances, annotation := int32(4), "scaled"
			updated, err := c.UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{Instances: &instances, Annotation: &annotation})
			Expect(err).NotTo(HaveOccurred())
			Expect(updated.GetInstances()).To(BeEquivalentTo(4))
			Expect(updated.GetAnnotation()).To(Equal("scaled"))
			Expect(updated.GetActiveDefinitionId()).To(Equal(desired.GetActiveDefinitionId()))

			actual, err := c.ActualLRPs(ctx, client.ActualLRPFilter{ProcessGuid: "hello"})
			Expect(err).NotTo(HaveOccurred())
			Expect(actual).To(HaveLen(4))
			definitions, err := c.Definitions(ctx, "hello")
			Expect(err).NotTo(HaveOccurred())
			Expect(definitions).To(HaveLen(1))
		})

		It("stores a new definition under its identifier, makes it active, and keeps the old one", func() {
			updated, err := c.UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2"})
			Expect(err).NotTo(HaveOccurred())
			Expect(updated.GetActiveDefinitionId()).To(Equal("v2"))
			Expect(updated.GetDefinition().GetAction().GetEnv()[0].GetValue()).To(Equal("v2"))

			definitions, err := c.Definitions(ctx, "hello")
			Expect(err).NotTo(HaveOccurred())
			Expect(definitions).To(HaveLen(2))
			Expect(definitions[0].GetDefinitionId()).To(Equal("v2"), "newest first")
			Expect(definitions[0].GetActive()).To(BeTrue())
			Expect(definitions[1].GetDefinitionId()).To(Equal(desired.GetActiveDefinitionId()))
			Expect(definitions[1].GetActive()).To(BeFalse())

			old, err := c.Definition(ctx, "hello", desired.GetActiveDefinitionId())
			Expect(err).NotTo(HaveOccurred())
			Expect(old.GetAction().GetEnv()[0].GetValue()).To(Equal("v1"))
			current, err := c.Definition(ctx, "hello", "v2")
			Expect(err).NotTo(HaveOccurred())
			Expect(current.GetAction().GetEnv()[0].GetValue()).To(Equal("v2"))
			Expect(current.GetCreatedAt()).NotTo(BeZero())
		})

		It("reports a rollout, rolls back to a kept definition, and refuses what cannot be done, naming the field", func() {
			v1 := desired.GetActiveDefinitionId()
			status, err := c.RolloutStatus(ctx, "hello")
			Expect(err).NotTo(HaveOccurred())
			Expect(status.GetState()).To(Equal(models.RolloutStatus_NONE))
			Expect(status.GetHealthyDefinitionId()).To(Equal(v1))

			_, err = c.UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2"})
			Expect(err).NotTo(HaveOccurred())
			status, err = c.RolloutStatus(ctx, "hello")
			Expect(err).NotTo(HaveOccurred())
			Expect(status.GetState()).To(Equal(models.RolloutStatus_PROGRESSING))
			Expect(status.GetActiveDefinitionId()).To(Equal("v2"))
			Expect(status.GetReason()).To(Equal("rolling from " + v1 + " to v2"))

			_, _, err = c.Rollback(ctx, "hello", "nope", false)
			Expect(err).To(errorOfType(models.Error_ResourceNotFound))
			_, _, err = c.Rollback(ctx, "hello", "bad id!", false)
			Expect(err).To(errorOfType(models.Error_InvalidRequest))
			Expect(err.Error()).To(ContainSubstring("definition_id"))

			status, err = c.AbortRollout(ctx, "hello", false)
			Expect(err).NotTo(HaveOccurred())
			Expect(status.GetActiveDefinitionId()).To(Equal(v1))
			Expect(status.GetReason()).To(Equal("rolling back from v2 to " + v1))
			_, err = c.AbortRollout(ctx, "hello", false)
			Expect(err).To(errorOfType(models.Error_InvalidStateTransition), "the healthy definition is active again")

			var warning string
			status, warning, err = c.Rollback(ctx, "hello", "v2", false)
			Expect(err).NotTo(HaveOccurred())
			Expect(status.GetActiveDefinitionId()).To(Equal("v2"))
			Expect(warning).To(HavePrefix("v2 never became healthy"), "its rollout was aborted: the answer warns")
			_, err = c.RolloutStatus(ctx, "missing")
			Expect(err).To(errorOfType(models.Error_ResourceNotFound))
		})

		It("treats the same identifier with the same content as a no-op, and other content as ResourceConflict", func() {
			update := &models.DesiredLRPUpdate{Definition: helloDefinition("v2"), UpdateIdentifier: "v2"}
			_, err := c.UpdateDesiredLRP(ctx, "hello", update)
			Expect(err).NotTo(HaveOccurred())
			_, err = c.UpdateDesiredLRP(ctx, "hello", update)
			Expect(err).NotTo(HaveOccurred())

			_, err = c.UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{Definition: helloDefinition("v3"), UpdateIdentifier: "v2"})
			Expect(err).To(errorOfType(models.Error_ResourceConflict))

			definitions, err := c.Definitions(ctx, "hello")
			Expect(err).NotTo(HaveOccurred())
			Expect(definitions).To(HaveLen(2))
			stored, err := c.Definition(ctx, "hello", "v2")
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.GetAction().GetEnv()[0].GetValue()).To(Equal("v2"))
		})

		It("answers ResourceConflict for a stale modification tag and changes nothing", func() {
			instances := int32(3)
			_, err := c.UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{Instances: &instances})
			Expect(err).NotTo(HaveOccurred())

			five := int32(5)
			_, err = c.UpdateDesiredLRP(ctx, "hello", &models.DesiredLRPUpdate{Instances: &five, ModificationTag: desired.GetModificationTag()})
			Expect(err).To(errorOfType(models.Error_ResourceConflict))
			got, err := c.DesiredLRPByProcessGuid(ctx, "hello")
			Expect(err).NotTo(HaveOccurred())
			Expect(got.GetInstances()).To(BeEquivalentTo(3))
		})

		It("answers ResourceNotFound for updates and definitions of an unknown guid", func() {
			instances := int32(3)
			_, err := c.UpdateDesiredLRP(ctx, "nobody", &models.DesiredLRPUpdate{Instances: &instances})
			Expect(err).To(errorOfType(models.Error_ResourceNotFound))
			_, err = c.Definitions(ctx, "nobody")
			Expect(err).To(errorOfType(models.Error_ResourceNotFound))
			_, err = c.Definition(ctx, "hello", "no-such-definition")
			Expect(err).To(errorOfType(models.Error_ResourceNotFound))
		})
	})

	Describe("actual LRPs", func() {
		BeforeEach(func() {
			other := helloLRP("other")
			other.Domain = "elsewhere"
			other.Instances = 1
			for _, lrp := range []*models.DesiredLRP{helloLRP("hello"), other} {
				_, err := c.DesireLRP(ctx, lrp)
				Expect(err).NotTo(HaveOccurred())
			}
		})

		It("lists one UNCLAIMED instance per index, stamped with the active definition", func() {
			actual, err := c.ActualLRPs(ctx, client.ActualLRPFilter{ProcessGuid: "hello"})
			Expect(err).NotTo(HaveOccurred())
			Expect(actual).To(HaveLen(2))
			for _, lrp := range actual {
				Expect(lrp.GetState()).To(Equal(models.ActualLRP_UNCLAIMED))
				Expect(lrp.GetPresence()).To(Equal(models.ActualLRP_ORDINARY))
				Expect(lrp.GetDefinitionId()).To(Equal(models.GenerateDefinitionID(helloDefinition("v1"))))
			}
		})

		It("filters by domain, guid, index and cell", func() {
			all, err := c.ActualLRPs(ctx, client.ActualLRPFilter{})
			Expect(err).NotTo(HaveOccurred())
			Expect(all).To(HaveLen(3))

			byDomain, err := c.ActualLRPs(ctx, client.ActualLRPFilter{Domain: "elsewhere"})
			Expect(err).NotTo(HaveOccurred())
			Expect(byDomain).To(HaveLen(1))
			Expect(byDomain[0].GetProcessGuid()).To(Equal("other"))

			one := int32(1)
			byIndex, err := c.ActualLRPs(ctx, client.ActualLRPFilter{ProcessGuid: "hello", Index: &one})
			Expect(err).NotTo(HaveOccurred())
			Expect(byIndex).To(HaveLen(1))
			Expect(byIndex[0].GetIndex()).To(BeEquivalentTo(1))

			zero := int32(0)
			indexZero, err := c.ActualLRPs(ctx, client.ActualLRPFilter{Index: &zero})
			Expect(err).NotTo(HaveOccurred())
			Expect(indexZero).To(HaveLen(2), "a set index of 0 is a filter, not 'any'")

			onCell, err := c.ActualLRPs(ctx, client.ActualLRPFilter{CellID: "cell-1"})
			Expect(err).NotTo(HaveOccurred())
			Expect(onCell).To(BeEmpty(), "nothing is claimed yet")
		})

		It("answers InvalidRequest naming the field for a negative index", func() {
			minusOne := int32(-1)
			_, err := c.ActualLRPs(ctx, client.ActualLRPFilter{Index: &minusOne})
			Expect(err).To(errorOfType(models.Error_InvalidRequest))
			Expect(err.Error()).To(ContainSubstring("index"))
		})
	})
})

func guidsOf(lrps []*models.DesiredLRP) []string {
	var guids []string
	for _, lrp := range lrps {
		guids = append(guids, lrp.GetProcessGuid())
	}
	return guids
}
