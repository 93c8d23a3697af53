package models_test

import (
	"encoding/base64"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("list cursors", func() {
	It("names an item's key and reads it back", func() {
		guid, err := models.ParseDesiredLRPCursor("cursor", (&models.DesiredLRP{ProcessGuid: "web-1_X"}).ListCursor())
		Expect(err).NotTo(HaveOccurred())
		Expect(guid).To(Equal("web-1_X"))

		info := (&models.DesiredLRPSchedulingInfo{ProcessGuid: "web"}).ListCursor()
		Expect(info).To(Equal((&models.DesiredLRP{ProcessGuid: "web"}).ListCursor()), "scheduling infos page like their LRPs")

		lrp := &models.ActualLRP{ProcessGuid: "web", Index: 12, Presence: models.ActualLRP_EVACUATING}
		g, index, presence, ok, err := models.ParseActualLRPCursor("cursor", lrp.ListCursor())
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect([]any{g, index, presence}).To(Equal([]any{"web", int32(12), models.ActualLRP_EVACUATING}))

		id, err := models.ParseCellCursor("cursor", (&models.Cell{CellId: "cell-1"}).ListCursor())
		Expect(err).NotTo(HaveOccurred())
		Expect(id).To(Equal("cell-1"))
	})

	It("reads an empty cursor as the list's start", func() {
		guid, err := models.ParseDesiredLRPCursor("cursor", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(guid).To(BeEmpty())
		_, _, _, ok, err := models.ParseActualLRPCursor("cursor", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeFalse())
	})

	raw := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

	DescribeTable("refuses what is not a cursor of the list, naming the field",
		func(parse func(string) error, cursor, message string) {
			err := parse(cursor)
			Expect(err).To(HaveOccurred())
			Expect(err.(*models.Error).GetType()).To(Equal(models.Error_InvalidRequest))
			Expect(err.(*models.Error).GetMessage()).To(HavePrefix("cursor: "))
			Expect(err.(*models.Error).GetMessage()).To(HaveSuffix(message))
		},
		Entry("not base64", parseCell, "%%%", "not a cursor: use the next_cursor of the page before"),
		Entry("not a cursor at all", parseCell, raw("hello"), "not a cursor: use the next_cursor of the page before"),
		Entry("another list's", parseCell, (&models.DesiredLRP{ProcessGuid: "web"}).ListCursor(), "not a cursor of this list: it is from the desired list"),
		Entry("too few parts", parseActual, raw("actual\x00web\x000"), "not a cursor: use the next_cursor of the page before"),
		Entry("a bad index", parseActual, raw("actual\x00web\x00-1\x00ORDINARY"), "not a cursor of this list: bad index"),
		Entry("an unknown presence", parseActual, raw("actual\x00web\x000\x00GONE"), "not a cursor of this list: bad presence"),
		Entry("a name no LRP could have", parseDesired, raw("desired\x00 web"), `must not start or end with a space, got " web"`),
	)
})

func parseDesired(cursor string) error {
	_, err := models.ParseDesiredLRPCursor("cursor", cursor)
	return err
}

func parseActual(cursor string) error {
	_, _, _, _, err := models.ParseActualLRPCursor("cursor", cursor)
	return err
}

func parseCell(cursor string) error {
	_, err := models.ParseCellCursor("cursor", cursor)
	return err
}
