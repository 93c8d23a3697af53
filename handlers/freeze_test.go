package handlers_test

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Freeze windows API", func() {
	for _, dialect := range testdb.MustDialects() {
		for _, wire := range wires {
			Describe(dialect+" with "+wire.name+" bodies", func() {
				var b *board
				BeforeEach(func() {
					b = newBoard(stores[dialect], wire)
				})

				list := func() *models.FreezeWindowsResponse {
					GinkgoHelper()
					resp := &models.FreezeWindowsResponse{}
					b.call(models.RouteFreezeWindows, &models.FreezeWindowsRequest{}, resp)
					Expect(resp.GetError()).To(BeNil())
					return resp
				}
				named := func(resp *models.FreezeWindowsResponse, name string) *models.FreezeWindow {
					for _, w := range resp.GetWindows() {
						if w.GetName() == name {
							return w
						}
					}
					return nil
				}

				It("adds a window, lists it as active until it ends, refuses it twice, and removes it", func() {
					b.header = http.Header{models.RequestedByHeader: {specCaller}}
					name := randomName("release-freeze")
					until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
					window := &models.FreezeWindow{Name: name, From: time.Now().Add(-time.Minute).UTC().Format(time.RFC3339),
						Until: until.Format(time.RFC3339)}
					added := &models.AddFreezeWindowResponse{}
					b.call(models.RouteAddFreezeWindow, &models.AddFreezeWindowRequest{Window: window}, added)
					Expect(added.GetError()).To(BeNil())
					Expect(added.GetWindow().GetName()).To(Equal(name))
					Expect(added.GetWindow().GetCreatedAt()).NotTo(BeZero())
					Expect(added.GetWindow().GetRequestedBy()).To(MatchRegexp(recordedCaller.String()), "who added it")

					resp := list()
					Expect(proto.Equal(named(resp, name), added.GetWindow())).To(BeTrue())
					Expect(resp.GetActive()).NotTo(BeEmpty(), "the window covers now")
					Expect(resp.GetActiveUntil()).To(BeNumerically(">=", until.UnixNano()))

					again := &models.AddFreezeWindowResponse{}
					b.call(models.RouteAddFreezeWindow, &models.AddFreezeWindowRequest{Window: window}, again)
					Expect(again.GetError().GetType()).To(Equal(models.Error_ResourceExists))

					removed := &models.RemoveFreezeWindowResponse{}
					b.call(models.RouteRemoveFreezeWindow, &models.RemoveFreezeWindowRequest{Name: name}, removed)
					Expect(removed.GetError()).To(BeNil())
					Expect(named(list(), name)).To(BeNil())

					b.call(models.RouteRemoveFreezeWindow, &models.RemoveFreezeWindowRequest{Name: name}, removed)
					Expect(removed.GetError().GetType()).To(Equal(models.Error_ResourceNotFound))
				})

				It("refuses a bad window naming the field, and stores nothing", func() {
					name := randomName("nightly")
					resp := &models.AddFreezeWindowResponse{}
					b.call(models.RouteAddFreezeWindow, &models.AddFreezeWindowRequest{Window: &models.FreezeWindow{
						Name: name, Schedule: "0 25 * * *", DurationMs: 1000}}, resp)
					Expect(proto.Equal(resp.GetError(), models.ErrInvalidField("window.schedule", `hour field "25": "25" is outside 0-23`))).To(BeTrue(), "%v", resp.GetError())
					Expect(named(list(), name)).To(BeNil())
				})

				It("refuses an update overriding the freeze without a reason, naming the field", func() {
					guid := randomName("lrp")
					b.mustDesire(newLRP(guid, randomName("domain"), 1))
					update := newDefinitionUpdate("v2")
					update.OverrideFreeze = true
					resp := &models.UpdateDesiredLRPResponse{}
					b.call(models.RouteUpdateDesiredLRP, &models.UpdateDesiredLRPRequest{ProcessGuid: guid, Update: update}, resp)
					Expect(proto.Equal(resp.GetError(), models.ErrInvalidField("update.override_reason", "required with override_freeze"))).To(BeTrue(), "%v", resp.GetError())
				})
			})
		}
	}
})
