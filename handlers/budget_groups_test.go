package handlers_test

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Budget groups API", func() {
	for _, dialect := range testdb.MustDialects() {
		for _, wire := range wires {
			Describe(dialect+" with "+wire.name+" bodies", func() {
				var b *board
				BeforeEach(func() {
					b = newBoard(stores[dialect], wire)
				})

				named := func(name string) *models.BudgetGroup {
					GinkgoHelper()
					resp := &models.BudgetGroupsResponse{}
					b.call(models.RouteBudgetGroups, &models.BudgetGroupsRequest{}, resp)
					Expect(resp.GetError()).To(BeNil())
					for _, g := range resp.GetGroups() {
						if g.GetName() == name {
							return g
						}
					}
					return nil
				}

				It("sets a group, lists it, replaces it and removes it", func() {
					b.header = http.Header{models.RequestedByHeader: {specCaller}}
					name := randomName("checkout")
					set := &models.SetBudgetGroupResponse{}
					b.call(models.RouteSetBudgetGroup, &models.SetBudgetGroupRequest{Group: &models.BudgetGroup{Name: name, MaxUnavailable: "2"}}, set)
					Expect(set.GetError()).To(BeNil())
					Expect(set.GetGroup().GetMaxUnavailable()).To(Equal("2"))
					Expect(set.GetGroup().GetCreatedAt()).NotTo(BeZero())
					Expect(set.GetGroup().GetRequestedBy()).To(MatchRegexp(recordedCaller.String()), "who set it")
					Expect(proto.Equal(named(name), set.GetGroup())).To(BeTrue())

					b.call(models.RouteSetBudgetGroup, &models.SetBudgetGroupRequest{Group: &models.BudgetGroup{Name: name, MaxUnavailable: "10%"}}, set)
					Expect(set.GetError()).To(BeNil())
					Expect(named(name).GetMaxUnavailable()).To(Equal("10%"))

					removed := &models.RemoveBudgetGroupResponse{}
					b.call(models.RouteRemoveBudgetGroup, &models.RemoveBudgetGroupRequest{Name: name}, removed)
					Expect(removed.GetError()).To(BeNil())
					Expect(named(name)).To(BeNil())
					b.call(models.RouteRemoveBudgetGroup, &models.RemoveBudgetGroupRequest{Name: name}, removed)
					Expect(removed.GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
				})

				It("refuses a bad group naming the field, and stores nothing", func() {
					name := randomName("checkout")
					resp := &models.SetBudgetGroupResponse{}
					b.call(models.RouteSetBudgetGroup, &models.SetBudgetGroupRequest{Group: &models.BudgetGroup{Name: name, MaxUnavailable: "101%"}}, resp)
					Expect(proto.Equal(resp.GetError(), models.ErrInvalidField("group.max_unavailable",
						`must be a count like "2" or a percent like "25%" (0-100%), got "101%"`))).To(BeTrue(), "%v", resp.GetError())
					Expect(named(name)).To(BeNil())
				})

				It("refuses an LRP naming a bad group, naming the field", func() {
					lrp := newLRP(randomName("lrp"), randomName("domain"), 1)
					lrp.DisruptionBudget = &models.DisruptionBudget{Group: " checkout"}
					resp := &models.DesireLRPResponse{}
					b.call(models.RouteDesireDesiredLRP, &models.DesireLRPRequest{DesiredLrp: lrp}, resp)
					Expect(proto.Equal(resp.GetError(), models.ErrInvalidField("desired_lrp.disruption_budget.group",
						`must not start or end with a space, got " checkout"`))).To(BeTrue(), "%v", resp.GetError())
				})
			})
		}
	}
})
