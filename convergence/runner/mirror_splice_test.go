package runner_test

import (
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
	)
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
