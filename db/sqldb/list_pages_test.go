package sqldb_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db"
	"github.com/corkboard/corkboard/models"
)

// Lists read a page at a time (handlers stream whole lists this way): the
// pages, followed from one to the next, must be the whole list in the same
// order on every dialect — guids, presence names and cell ids as bytes,
// so "B" before "a" and "é" last whatever the database's locale.
var _ = forEachDialect("reading lists a page at a time", func(b *board) {
	// Byte order; a locale would put "a" before "B" and "é" before "z".
	guids := []string{"B", "Z", "a", "a-1", "b", "z", "é"}

	BeforeEach(func() {
		// Desired in another order than the list's.
		for _, i := range []int{4, 0, 6, 2, 5, 1, 3} {
			_, err := b.store.DesireLRP(b.ctx, newLRP(guids[i], "apps", 2))
			Expect(err).NotTo(HaveOccurred())
		}
	})

	desiredPages := func(filter db.DesiredLRPFilter, limit int) []string {
		GinkgoHelper()
		var read []string
		filter.Limit = limit
		for pages := 0; ; pages++ {
			Expect(pages).To(BeNumerically("<", 20), "paging does not end")
			lrps, err := b.store.DesiredLRPs(b.ctx, filter)
			Expect(err).NotTo(HaveOccurred())
			Expect(len(lrps)).To(BeNumerically("<=", limit))
			infos, err := b.store.DesiredLRPSchedulingInfos(b.ctx, filter)
			Expect(err).NotTo(HaveOccurred())
			Expect(infos).To(HaveLen(len(lrps)), "scheduling infos page like LRPs")
			for i, lrp := range lrps {
				Expect(infos[i].ProcessGuid).To(Equal(lrp.ProcessGuid))
				read = append(read, lrp.ProcessGuid)
			}
			if len(lrps) < limit {
				return read
			}
			filter.After = lrps[len(lrps)-1].ProcessGuid
		}
	}

	It("pages through desired LRPs in byte order, whatever the page size", func() {
		whole, err := b.store.DesiredLRPs(b.ctx, db.DesiredLRPFilter{})
		Expect(err).NotTo(HaveOccurred())
		var order []string
		for _, lrp := range whole {
			order = append(order, lrp.ProcessGuid)
		}
		Expect(order).To(Equal(guids))
		for _, limit := range []int{1, 2, 3, 7, 100} {
			Expect(desiredPages(db.DesiredLRPFilter{}, limit)).To(Equal(guids), "pages of %d", limit)
		}
	})

	It("pages within the filters", func() {
		_, err := b.store.DesireLRP(b.ctx, newLRP("c", "jobs", 1))
		Expect(err).NotTo(HaveOccurred())
		Expect(desiredPages(db.DesiredLRPFilter{Domain: "jobs"}, 1)).To(Equal([]string{"c"}))
		Expect(desiredPages(db.DesiredLRPFilter{ProcessGuids: []string{"é", "a", "B", "a", "nope"}}, 2)).
			To(Equal([]string{"B", "a", "é"}), "a guid filter, given unsorted and with a repeat")
		Expect(desiredPages(db.DesiredLRPFilter{Domain: "apps", After: "a-1"}, 2)).To(Equal([]string{"b", "z", "é"}))
	})

	It("pages through actual LRPs by guid, index and presence name", func() {
		b.putActual(&models.ActualLRP{
			ProcessGuid: "a", Index: 1, Presence: models.ActualLRP_EVACUATING, Domain: "apps",
			InstanceGuid: "ig-e", CellId: "cell-1", DefinitionId: "v1", State: models.ActualLRP_RUNNING,
			ModificationTag: &models.ModificationTag{Epoch: "e"},
		})
		b.setState("a", 0, models.ActualLRP_RUNNING, "cell-2")
		type key struct {
			guid     string
			index    int32
			presence models.ActualLRP_Presence
		}
		var want []key
		for _, guid := range guids {
			if guid == "a" {
				want = append(want, key{"a", 0, models.ActualLRP_ORDINARY}, key{"a", 1, models.ActualLRP_EVACUATING}, key{"a", 1, models.ActualLRP_ORDINARY})
				continue
			}
			want = append(want, key{guid, 0, models.ActualLRP_ORDINARY}, key{guid, 1, models.ActualLRP_ORDINARY})
		}
		keys := func(lrps []*models.ActualLRP) []key {
			var out []key
			for _, l := range lrps {
				out = append(out, key{l.ProcessGuid, l.Index, l.Presence})
			}
			return out
		}
		whole, err := b.store.ActualLRPs(b.ctx, db.ActualLRPFilter{})
		Expect(err).NotTo(HaveOccurred())
		Expect(keys(whole)).To(Equal(want))

		for _, limit := range []int{1, 2, 5, 100} {
			var read []*models.ActualLRP
			filter := db.ActualLRPFilter{Limit: limit}
			for pages := 0; ; pages++ {
				Expect(pages).To(BeNumerically("<", 40), "paging does not end")
				page, err := b.store.ActualLRPs(b.ctx, filter)
				Expect(err).NotTo(HaveOccurred())
				read = append(read, page...)
				if len(page) < limit {
					break
				}
				last := page[len(page)-1]
				filter.After = &models.ActualLRPKey{ProcessGuid: last.ProcessGuid, Index: last.Index, Presence: last.Presence}
			}
			Expect(keys(read)).To(Equal(want), "pages of %d", limit)
		}

		page, err := b.store.ActualLRPs(b.ctx, db.ActualLRPFilter{
			CellID: "cell-1", Limit: 5,
			After: &models.ActualLRPKey{ProcessGuid: "a", Index: 0, Presence: models.ActualLRP_ORDINARY},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(keys(page)).To(Equal([]key{{"a", 1, models.ActualLRP_EVACUATING}}), "after a key, within a filter")
	})

	It("pages through a domain's and a cell's items across the items of others", func() {
		// Domains and cells alternate in key order, so each page of a
		// filtered list skips the others' items between its own.
		for i, guid := range []string{"c", "d", "e"} {
			_, err := b.store.DesireLRP(b.ctx, newLRP(guid+"-jobs", "jobs", 1))
			Expect(err).NotTo(HaveOccurred())
			b.setState(guid+"-jobs", 0, models.ActualLRP_RUNNING, fmt.Sprintf("cell-%d", i%2))
		}
		for i, guid := range guids {
			b.setState(guid, 1, models.ActualLRP_RUNNING, fmt.Sprintf("cell-%d", i%2))
		}
		jobs := []string{"c-jobs", "d-jobs", "e-jobs"}
		for _, limit := range []int{1, 2, 4} {
			Expect(desiredPages(db.DesiredLRPFilter{Domain: "jobs"}, limit)).To(Equal(jobs), "pages of %d", limit)
			Expect(desiredPages(db.DesiredLRPFilter{Domain: "apps"}, limit)).To(Equal(guids), "pages of %d", limit)
		}

		actualKey := func(l *models.ActualLRP) string { return fmt.Sprintf("%s/%d/%s", l.ProcessGuid, l.Index, l.Presence) }
		for _, filter := range []db.ActualLRPFilter{{Domain: "jobs"}, {Domain: "apps"}, {CellID: "cell-0"}, {CellID: "cell-1"}, {Domain: "apps", CellID: "cell-1"}} {
			whole, err := b.store.ActualLRPs(b.ctx, filter)
			Expect(err).NotTo(HaveOccurred())
			Expect(whole).NotTo(BeEmpty())
			var want []string
			for _, l := range whole {
				Expect(filter.Domain == "" || l.Domain == filter.Domain).To(BeTrue())
				Expect(filter.CellID == "" || l.CellId == filter.CellID).To(BeTrue())
				want = append(want, actualKey(l))
			}
			for _, limit := range []int{1, 2, 3} {
				var read []string
				paged := filter
				paged.Limit = limit
				for pages := 0; ; pages++ {
					Expect(pages).To(BeNumerically("<", 40), "paging does not end")
					page, err := b.store.ActualLRPs(b.ctx, paged)
					Expect(err).NotTo(HaveOccurred())
					Expect(len(page)).To(BeNumerically("<=", limit))
					for _, l := range page {
						read = append(read, actualKey(l))
					}
					if len(page) < limit {
						break
					}
					last := page[len(page)-1]
					paged.After = &models.ActualLRPKey{ProcessGuid: last.ProcessGuid, Index: last.Index, Presence: last.Presence}
				}
				Expect(read).To(Equal(want), "%+v in pages of %d", filter, limit)
			}
		}
	})

	It("pages through cells in byte order, each with the usage Cells gives it", func() {
		for _, id := range []string{"cell-b", "Cell-Z", "cell-é", "cell-A", "cell-a"} {
			Expect(b.store.RegisterCell(b.ctx, &models.Cell{
				CellId: id, RepUrl: "http://" + id, Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Instances: 10},
			}, time.Minute)).To(Succeed())
		}
		b.setState("a", 0, models.ActualLRP_RUNNING, "cell-a")
		b.setState("b", 1, models.ActualLRP_CLAIMED, "cell-a")
		b.setState("é", 0, models.ActualLRP_RUNNING, "cell-é")

		whole, err := b.store.Cells(b.ctx)
		Expect(err).NotTo(HaveOccurred())
		var ids []string
		for _, c := range whole {
			ids = append(ids, c.CellId)
		}
		Expect(ids).To(Equal([]string{"Cell-Z", "cell-A", "cell-a", "cell-b", "cell-é"}))
		Expect(whole[2].Free.Instances).To(BeEquivalentTo(8), "cell-a runs two instances")

		for _, limit := range []int{1, 2, 5} {
			var read []*models.Cell
			after := ""
			for pages := 0; ; pages++ {
				Expect(pages).To(BeNumerically("<", 10), "paging does not end")
				page, err := b.store.CellsAfter(b.ctx, after, limit)
				Expect(err).NotTo(HaveOccurred())
				read = append(read, page...)
				if len(page) < limit {
					break
				}
				after = page[len(page)-1].CellId
			}
			Expect(read).To(HaveLen(len(whole)), "pages of %d", limit)
			for i := range whole {
				Expect(read[i]).To(EqualProto(whole[i]), "pages of %d", limit)
			}
		}
	})

	It("refuses a page of no cells, naming the limit", func() {
		_, err := b.store.CellsAfter(b.ctx, "", 0)
		Expect(err).To(HaveErrorType(models.Error_InvalidRequest))
		Expect(err.Error()).To(ContainSubstring("limit"))
	})
})
