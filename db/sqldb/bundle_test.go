package sqldb_test

import (
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/db/sqldb"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("event bundles", func() {
	// spans builds a table case from "type key" pairs.
	spans := func(events ...string) []int {
		var types, keys []string
		for _, e := range events {
			typ, key, _ := strings.Cut(e, " ")
			types, keys = append(types, typ), append(keys, key)
		}
		return sqldb.BundleSpans(types, keys)
	}

	DescribeTable("how many events each outbox row holds",
		func(events []string, want []int) {
			Expect(spans(events...)).To(Equal(want))
		},
		Entry("nothing", nil, []int(nil)),
		Entry("one event", []string{"desired_lrp_changed web"}, []int{1}),
		Entry("a desire: the LRP, its instances and its operation, one row",
			[]string{"desired_lrp_created web", "actual_lrp_created web", "actual_lrp_created web", "operation_changed web"}, []int{4}),
		Entry("the worked example: a cell's event between two of web's",
			[]string{"desired_lrp_changed web", "actual_lrp_created web", "cell_changed c1", "operation_changed web"}, []int{2, 1, 1}),
		Entry("two LRPs of one coalesced transaction, each its own rows, in order",
			[]string{"desired_lrp_changed web", "desired_lrp_changed api", "operation_changed api", "operation_changed web"}, []int{1, 2, 1}),
		Entry("cell events of one cell, never bundled", []string{"cell_changed c1", "cell_changed c1"}, []int{1, 1}),
		Entry("freeze window and budget group events, never bundled",
			[]string{"freeze_changed freeze/x", "freeze_changed freeze/x", "budget_group_changed budget_group/g", "budget_group_changed budget_group/g"}, []int{1, 1, 1, 1}),
		Entry("an LRP named like a cell: its key is the same, its cell's event still apart",
			[]string{"actual_lrp_changed c1", "cell_changed c1", "actual_lrp_changed c1"}, []int{1, 1, 1}),
	)

	It("holds at most MaxBundle events in a row, and the spans add up to the events", func() {
		events := slices.Repeat([]string{"actual_lrp_changed web"}, 2*sqldb.MaxBundle+3)
		Expect(spans(events...)).To(Equal([]int{sqldb.MaxBundle, sqldb.MaxBundle, 3}))
	})

	It("reads back a bundle's events as they were written, and refuses a blob that is not one", func() {
		types := []string{models.EventDesiredLRPChanged, models.EventActualLRPCreated, models.EventOperationChanged}
		raws := [][]byte{[]byte("before and after"), {}, []byte(strings.Repeat("x", 300))}
		blob := sqldb.AppendBundle(nil, types, raws)

		gotTypes, gotRaws, err := sqldb.ReadBundle(blob, 3)
		Expect(err).NotTo(HaveOccurred())
		Expect(gotTypes).To(Equal(types))
		Expect(gotRaws).To(HaveLen(3))
		for i := range raws {
			Expect(gotRaws[i]).To(BeEquivalentTo(raws[i]))
		}

		for _, bad := range []struct {
			blob  []byte
			count int
			says  string
		}{
			{blob, 2, "more than event_count 2 events"},
			{blob, 4, "3 events, event_count 4"},
			{blob[:len(blob)-1], 3, "event 3's payload"},
			{append(slices.Clone(blob), 0x00), 3, "more than event_count 3"},
			{sqldb.AppendBundle(nil, []string{"", "x"}, [][]byte{nil, nil}), 2, "event 1's type"},
			{blob, 1, "event_count 1"},
			{blob, sqldb.MaxBundle + 1, "event_count 65"},
		} {
			_, _, err := sqldb.ReadBundle(bad.blob, bad.count)
			Expect(err).To(MatchError(ContainSubstring("malformed event bundle")), "count %d", bad.count)
			Expect(err).To(MatchError(ContainSubstring(bad.says)), "count %d", bad.count)
		}
	})
})
