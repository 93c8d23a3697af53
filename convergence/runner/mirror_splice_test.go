package runner_test

import (
	"fmt"
	"math/rand/v2"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/convergence/runner"
	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Mirror splicing", func() {
	DescribeTable("replaces the runs of the changed LRPs with what was read again",
		func(rows, fresh, changed, want []string) {
			Expect(runner.SpliceGuids(rows, fresh, changed)).To(Equal(want))
		},
		Entry("nothing changed", []string{"a", "b"}, nil, nil, []string{"a", "b"}),
		Entry("same lengths: in place", []string{"a", "b", "c", "c"}, []string{"b", "c", "c"}, []string{"b", "c"},
			[]string{"a", "b", "c", "c"}),
		Entry("a run grows", []string{"a", "b", "c"}, []string{"b", "b"}, []string{"b"}, []string{"a", "b", "b", "c"}),
		Entry("a run goes (the LRP was removed)", []string{"a", "b", "b", "c"}, nil, []string{"b"}, []string{"a", "c"}),
		Entry("a new LRP between others", []string{"a", "c"}, []string{"b"}, []string{"b"}, []string{"a", "b", "c"}),
		Entry("new LRPs first and last", []string{"b"}, []string{"a", "c"}, []string{"a", "c"}, []string{"a", "b", "c"}),
		Entry("the example of spliceRuns", []string{"a", "a", "b", "c", "c", "d"}, []string{"b", "b", "e"},
			[]string{"b", "c", "e"}, []string{"a", "a", "b", "b", "d", "e"}),
		Entry("a changed LRP with no rows before or after", []string{"a"}, nil, []string{"z"}, []string{"a"}),
		Entry("one run grows and a later one shrinks", []string{"a", "b", "c", "d", "d", "e"}, []string{"b", "b", "d"},
			[]string{"b", "d"}, []string{"a", "b", "b", "c", "d", "e"}),
		Entry("one run shrinks and a later one grows", []string{"a", "b", "b", "c", "d", "e"}, []string{"b", "d", "d"},
			[]string{"b", "d"}, []string{"a", "b", "c", "d", "d", "e"}),
	)

	// In the rows' own array or in a new one, the result is the same: the
	// rows of the unchanged LRPs and fresh's, in guid order. Seeded: 500
	// random mirrors of up to 40 rows, with no room to spare or some.
	It("gives what a sort of the kept rows and the fresh ones gives, whatever the array's room", func() {
		r := rand.New(rand.NewPCG(28, 1))
		guid := func() string { return fmt.Sprintf("g%02d", r.IntN(30)) }
		runs := func(n int) []string {
			var out []string
			for range n {
				g := guid()
				for range r.IntN(4) {
					out = append(out, g)
				}
			}
			slices.Sort(out)
			return out
		}
		inPlace := 0
		for i := range 500 {
			rows := runs(r.IntN(12))
			changed := slices.Compact(slices.Sorted(slices.Values(runs(r.IntN(6)))))
			var fresh []string
			for _, g := range changed {
				for range r.IntN(4) {
					fresh = append(fresh, g)
				}
			}
			var want []string
			for _, g := range rows {
				if !slices.Contains(changed, g) {
					want = append(want, g)
				}
			}
			want = slices.Sorted(slices.Values(append(want, fresh...)))
			room := r.IntN(6)
			array := make([]string, len(rows)+room)
			copy(array, rows)
			got := runner.SpliceGuids(array[:len(rows)], fresh, changed)
			Expect(slices.Equal(got, want)).To(BeTrue(), "case %d: rows %v, changed %v, fresh %v, room %d: got %v, want %v",
				i, rows, changed, fresh, room, got, want)
			if len(got) > 0 && len(array) > 0 && &got[0] == &array[0] {
				inPlace++
				Expect(slices.ContainsFunc(array[len(got):], func(g string) bool { return g != "" })).To(BeFalse(),
					"case %d: rows past the end are cleared: %v", i, array)
			}
		}
		Expect(inPlace).To(BeNumerically(">", 200), "cases spliced in the rows' own array")
	})
})

var _ = Describe("A partial snapshot", func() {
	desired := []convergence.DesiredSchedule{
		{ProcessGuid: "a", DisruptionBudget: &models.DisruptionBudget{Group: "checkout"}},
		{ProcessGuid: "b"},
		{ProcessGuid: "c", DisruptionBudget: &models.DisruptionBudget{MaxUnavailable: "1", Group: "checkout"}},
		{ProcessGuid: "d", DisruptionBudget: &models.DisruptionBudget{Group: "search"}},
	}
	DescribeTable("holds every LRP of each budget group one of its LRPs names",
		func(guids, want []string) {
			Expect(runner.PartialDesired(desired, guids)).To(Equal(want))
		},
		Entry("an LRP in no group: itself", []string{"b"}, []string{"b"}),
		Entry("an LRP of checkout: the whole group", []string{"c"}, []string{"a", "c"}),
		Entry("two groups", []string{"a", "d"}, []string{"a", "c", "d"}),
	)
})
