package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/handlers"
	"github.com/corkboard/corkboard/internal/testdb"
	"github.com/corkboard/corkboard/models"
)

// failingAfterFirstPage is a store whose reads of desired LRPs fail after
// two LRPs, as when the database goes away in the middle of a stream, and
// at once after a cursor.
type failingAfterFirstPage struct {
	db.DB
}

var errDatabaseGone = errors.New("connection reset by peer")

func (s failingAfterFirstPage) EachDesiredLRP(ctx context.Context, filter db.DesiredLRPFilter, fn func(*models.DesiredLRP) error) error {
	if filter.After != "" {
		return errDatabaseGone
	}
	handed := 0
	return s.DB.EachDesiredLRP(ctx, filter, func(lrp *models.DesiredLRP) error {
		if handed == 2 {
			return errDatabaseGone
		}
		handed++
		return fn(lrp)
	})
}

var _ = Describe("Lists", func() {
	for _, dialect := range testdb.MustDialects() {
		for _, wire := range wires {
			Describe(dialect+" with "+wire.name+" bodies", func() {
				var (
					b      *board
					domain string
					guids  []string
				)

				BeforeEach(func() {
					// Pages of 2, so that a few LRPs make several.
					DeferCleanup(handlers.SetStreamPage(2))
					b = newBoard(stores[dialect], wire)
					domain = randomName("lists")
					guids = nil
					for i := range 5 {
						guid := fmt.Sprintf("%s-%d", domain, i)
						lrp := newLRP(guid, domain, 2)
						routes, err := structpb.NewStruct(map[string]any{
							"cf-router": []any{map[string]any{"hostnames": []any{guid + ".example.com"}, "port": 8080}},
						})
						Expect(err).NotTo(HaveOccurred())
						lrp.Routes = routes
						b.mustDesire(lrp)
						guids = append(guids, guid)
					}
				})

				lrpGuids := func(lrps []*models.DesiredLRP) []string {
					var out []string
					for _, l := range lrps {
						out = append(out, l.GetProcessGuid())
					}
					return out
				}

				It("answers a whole list, streamed page by page, as one message in guid order", func() {
					lrps := b.list(&models.DesiredLRPsRequest{Domain: domain})
					Expect(lrpGuids(lrps)).To(Equal(guids))
					for _, lrp := range lrps {
						Expect(lrp.GetDefinition().GetAction().GetPath()).NotTo(BeEmpty(), "with its definition")
						// Each item is encoded apart from the others, with
						// the sizes its page measured (appendSizedField).
						Expect(proto.Equal(lrp, b.mustGet(lrp.GetProcessGuid()))).To(BeTrue(), "%s as listed and as read alone", lrp.GetProcessGuid())
					}

					infos := &models.DesiredLRPSchedulingInfosResponse{}
					b.call(models.RouteDesiredLRPSchedulingInfos, &models.DesiredLRPSchedulingInfosRequest{Domain: domain}, infos)
					Expect(infos.GetError()).To(BeNil())
					Expect(infos.GetDesiredLrpSchedulingInfos()).To(HaveLen(5))
					Expect(infos.GetNextCursor()).To(BeEmpty())
					for i, info := range infos.GetDesiredLrpSchedulingInfos() {
						Expect(info.GetRoutes().GetFields()).To(HaveKey("cf-router"), "with its routes")
						Expect(proto.Equal(info.GetRoutes(), lrps[i].GetRoutes())).To(BeTrue(), "%s's routes as listed in both lists", info.GetProcessGuid())
					}
					paged := &models.DesiredLRPSchedulingInfosResponse{}
					b.call(models.RouteDesiredLRPSchedulingInfos, &models.DesiredLRPSchedulingInfosRequest{Domain: domain, Limit: 2}, paged)
					Expect(paged.GetDesiredLrpSchedulingInfos()).To(HaveLen(2))
					for i, info := range paged.GetDesiredLrpSchedulingInfos() {
						Expect(proto.Equal(info, infos.GetDesiredLrpSchedulingInfos()[i])).To(BeTrue(), "%s as paged and as streamed", info.GetProcessGuid())
					}

					actual := b.actualLRPs(&models.ActualLRPsRequest{Domain: domain})
					Expect(actual).To(HaveLen(10))
					Expect(actual[0].GetProcessGuid()).To(Equal(guids[0]))
					Expect(actual[9].GetProcessGuid()).To(Equal(guids[4]))
					Expect(actual[9].GetIndex()).To(BeEquivalentTo(1))
				})

				It("answers an empty list as the empty message", func() {
					Expect(b.list(&models.DesiredLRPsRequest{Domain: randomName("none")})).To(BeEmpty())
				})

				It("answers pages that follow each other to the end", func() {
					var read []string
					var cursors []string
					request := &models.DesiredLRPsRequest{Domain: domain, Limit: 2}
					for range 5 {
						resp := &models.DesiredLRPsResponse{}
						b.call(models.RouteDesiredLRPs, request, resp)
						Expect(resp.GetError()).To(BeNil())
						Expect(len(resp.GetDesiredLrps())).To(BeNumerically("<=", 2))
						for _, lrp := range resp.GetDesiredLrps() {
							Expect(lrp.GetDefinition().GetAction().GetPath()).NotTo(BeEmpty(), "with its definition")
							Expect(proto.Equal(lrp, b.mustGet(lrp.GetProcessGuid()))).To(BeTrue(), "%s as paged and as read alone", lrp.GetProcessGuid())
						}
						read = append(read, lrpGuids(resp.GetDesiredLrps())...)
						if resp.GetNextCursor() == "" {
							break
						}
						cursors = append(cursors, resp.GetNextCursor())
						request.Cursor = resp.GetNextCursor()
					}
					Expect(read).To(Equal(guids))
					Expect(cursors).To(HaveLen(2), "5 items in pages of 2: the third page is the last")

					By("streaming the rest after a cursor")
					rest := b.list(&models.DesiredLRPsRequest{Domain: domain, Cursor: cursors[0]})
					Expect(lrpGuids(rest)).To(Equal(guids[2:]))
				})

				It("ends a page asked for with a limit when its items reach the page's bytes, and the pages still follow each other to the end", func() {
					// Two and a half items' bytes end a page at its third.
					item := proto.Size(b.mustGet(guids[0]))
					DeferCleanup(handlers.SetOnePageBytes(2*item + item/2))
					var read []string
					var sizes []int
					request := &models.DesiredLRPsRequest{Domain: domain, Limit: 1000}
					for range 5 {
						resp := &models.DesiredLRPsResponse{}
						b.call(models.RouteDesiredLRPs, request, resp)
						Expect(resp.GetError()).To(BeNil())
						read = append(read, lrpGuids(resp.GetDesiredLrps())...)
						sizes = append(sizes, len(resp.GetDesiredLrps()))
						if resp.GetNextCursor() == "" {
							break
						}
						request.Cursor = resp.GetNextCursor()
					}
					Expect(read).To(Equal(guids))
					Expect(sizes).To(Equal([]int{3, 2}))
				})

				It("pages actual LRPs and cells the same way", func() {
					var read []*models.ActualLRP
					request := &models.ActualLRPsRequest{Domain: domain, Limit: 3}
					for range 10 {
						resp := &models.ActualLRPsResponse{}
						b.call(models.RouteActualLRPs, request, resp)
						Expect(resp.GetError()).To(BeNil())
						read = append(read, resp.GetActualLrps()...)
						if request.Cursor = resp.GetNextCursor(); request.Cursor == "" {
							break
						}
					}
					whole := b.actualLRPs(&models.ActualLRPsRequest{Domain: domain})
					Expect(read).To(HaveLen(len(whole)))
					for i := range whole {
						Expect(read[i].GetProcessGuid()).To(Equal(whole[i].GetProcessGuid()))
						Expect(read[i].GetIndex()).To(Equal(whole[i].GetIndex()))
					}

					for i := range 3 {
						Expect(stores[dialect].RegisterCell(context.Background(), &models.Cell{
							CellId: fmt.Sprintf("%s-cell-%d", domain, i), Capacity: &models.CellCapacity{MemoryMb: 1, DiskMb: 1, Instances: 1},
						}, time.Minute)).To(Succeed())
					}
					wholeCells := &models.CellsResponse{}
					b.call(models.RouteCells, &models.CellsRequest{}, wholeCells)
					Expect(wholeCells.GetError()).To(BeNil())
					var pagedCells []string
					cellRequest := &models.CellsRequest{Limit: 2}
					for range 1000 {
						resp := &models.CellsResponse{}
						b.call(models.RouteCells, cellRequest, resp)
						Expect(resp.GetError()).To(BeNil())
						for _, c := range resp.GetCells() {
							pagedCells = append(pagedCells, c.GetCellId())
						}
						if cellRequest.Cursor = resp.GetNextCursor(); cellRequest.Cursor == "" {
							break
						}
					}
					var wholeIDs []string
					for _, c := range wholeCells.GetCells() {
						wholeIDs = append(wholeIDs, c.GetCellId())
					}
					Expect(pagedCells).To(Equal(wholeIDs))
					Expect(wholeIDs).To(ContainElement(domain + "-cell-2"))
				})

				DescribeTable("refuses bad paging, naming the field",
					func(request proto.Message, route, field string) {
						resp := &models.DesiredLRPsResponse{}
						b.call(route, request, resp)
						Expect(resp.GetError().GetType()).To(Equal(models.Error_InvalidRequest))
						Expect(resp.GetError().GetMessage()).To(HavePrefix(field + ": "))
						Expect(resp.GetDesiredLrps()).To(BeEmpty())
					},
					Entry("a negative limit", &models.DesiredLRPsRequest{Limit: -1}, models.RouteDesiredLRPs, "limit"),
					Entry("a limit over the most", &models.ActualLRPsRequest{Limit: models.MaxListPage + 1}, models.RouteActualLRPs, "limit"),
					Entry("a cursor that is not one", &models.DesiredLRPsRequest{Cursor: "not a cursor!"}, models.RouteDesiredLRPs, "cursor"),
					Entry("a cursor of another list", &models.CellsRequest{Cursor: (&models.DesiredLRP{ProcessGuid: "web"}).ListCursor()}, models.RouteCells, "cursor"),
				)

				It("ends a stream that fails after its first page with the error, after the items it sent", func() {
					failing := newBoard(failingAfterFirstPage{stores[dialect]}, wire)
					resp := &models.DesiredLRPsResponse{}
					failing.call(models.RouteDesiredLRPs, &models.DesiredLRPsRequest{Domain: domain}, resp)
					Expect(resp.GetError().GetType()).To(Equal(models.Error_UnknownError))
					Expect(resp.GetError().GetMessage()).To(ContainSubstring("connection reset by peer"))
					Expect(lrpGuids(resp.GetDesiredLrps())).To(Equal(guids[:2]), "the first page went out before the failure")
					Expect(failing.logger.Buffer()).To(gbytes.Say(`"items_sent":2,.*"outcome":"UnknownError"`))
				})

				It("answers a failure on the first page as an ordinary error", func() {
					failing := newBoard(failingAfterFirstPage{stores[dialect]}, wire)
					request, err := wire.marshal(&models.DesiredLRPsRequest{
						Domain: domain, Cursor: (&models.DesiredLRP{ProcessGuid: guids[0]}).ListCursor(),
					})
					Expect(err).NotTo(HaveOccurred())
					resp, body := failing.postRaw(models.RouteDesiredLRPs, wire.contentType, request)
					Expect(resp.StatusCode).To(Equal(http.StatusOK))
					answer := &models.DesiredLRPsResponse{}
					Expect(wire.unmarshal(body, answer)).To(Succeed())
					Expect(answer.GetError().GetType()).To(Equal(models.Error_UnknownError))
					Expect(answer.GetDesiredLrps()).To(BeEmpty())
				})
			})
		}
	}
})

var _ = DescribeTable("a streamed list's next page limit",
	func(read, asked, max, want int) {
		Expect(handlers.NextPageLimit(read, asked, max)).To(Equal(want))
	},
	Entry("a page that ended on its count asks for twice as many", 100, 100, 500, 200),
	Entry("up to the largest page", 300, 300, 500, 500),
	Entry("the largest page stays", 500, 500, 500, 500),
	Entry("a page that ended on its bytes asks for an eighth more than fitted, and one", 230, 500, 500, 259),
	Entry("one item that filled a page alone: two next", 1, 500, 500, 2),
	Entry("never more than the largest page", 480, 500, 500, 500),
)

// pageLimits is a store that writes down the limit of each read of actual
// LRPs: a streamed list's page queries.
type pageLimits struct {
	db.DB
	mu     sync.Mutex
	limits []int
}

func (p *pageLimits) EachActualLRP(ctx context.Context, filter db.ActualLRPFilter, fn func(*models.ActualLRP) error) error {
	p.mu.Lock()
	p.limits = append(p.limits, filter.Limit)
	p.mu.Unlock()
	return p.DB.EachActualLRP(ctx, filter, fn)
}

var _ = Describe("A streamed list of small items", func() {
	It("asks for pages twice as large as the last one that ended on its count, up to the largest page, and answers every item once", func() {
		DeferCleanup(handlers.SetStreamPages(2, 8))
		store := &pageLimits{DB: stores[testdb.MustDialects()[0]]}
		b := newBoard(store, protobufWire)
		domain := randomName("grow")
		b.mustDesire(newLRP(randomName("web"), domain, 25))

		actual := b.actualLRPs(&models.ActualLRPsRequest{Domain: domain})
		keys := map[string]bool{}
		for _, lrp := range actual {
			keys[fmt.Sprintf("%s/%d", lrp.GetProcessGuid(), lrp.GetIndex())] = true
		}
		Expect(actual).To(HaveLen(25))
		Expect(keys).To(HaveLen(25), "no instance twice")
		// 2 + 4 + 8 + 8 read 22 instances in full pages; the last page
		// holds the other 3.
		Expect(store.limits).To(Equal([]int{2, 4, 8, 8, 8}))
	})
})
