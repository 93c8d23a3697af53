package convergence_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/convergence"
)

// budgetIndices builds n wanted indices: up of them Up, leaving of them
// Leaving, the rest down.
func budgetIndices(n, up, leaving int) []convergence.BudgetIndex {
	indices := make([]convergence.BudgetIndex, n)
	for i := range indices {
		switch {
		case i < up:
			indices[i].Up = true
		case i < up+leaving:
			indices[i].Leaving = true
		}
	}
	return indices
}

var _ = Describe("TallyBudget", func() {
	DescribeTable("spent, stops, handovers and floor",
		func(n, b int32, up, leaving int, spent, stops, handovers, floor int32) {
			t := convergence.TallyBudget(n, b, budgetIndices(int(n), up, leaving))
			Expect(t.Spent()).To(Equal(spent), "spent")
			Expect(t.Stops()).To(Equal(stops), "stops")
			Expect(t.Handovers()).To(Equal(handovers), "handovers")
			Expect(t.Floor()).To(Equal(floor), "floor")
		},
		// The worked example of TallyBudget, 6 instances, budget 1.
		Entry("1. all up", int32(6), int32(1), 6, 0, int32(0), int32(1), int32(1), int32(5)),
		Entry("2. one evacuating", int32(6), int32(1), 5, 1, int32(1), int32(0), int32(0), int32(5)),
		Entry("3. one evacuating, one crashed", int32(6), int32(1), 4, 1, int32(2), int32(0), int32(0), int32(5)),
		Entry("4. replacements serve", int32(6), int32(1), 6, 0, int32(0), int32(1), int32(1), int32(5)),
		// Budget 0: no stop ever, one handover at a time.
		Entry("budget 0, all up", int32(6), int32(0), 6, 0, int32(0), int32(0), int32(1), int32(6)),
		Entry("budget 0, one leaving", int32(6), int32(0), 5, 1, int32(1), int32(0), int32(0), int32(6)),
		Entry("budget 0, one crashed", int32(6), int32(0), 5, 0, int32(1), int32(0), int32(0), int32(6)),
		Entry("budget 3, one down, one leaving", int32(10), int32(3), 8, 1, int32(2), int32(1), int32(1), int32(7)),
		Entry("over budget by accident", int32(4), int32(1), 1, 0, int32(3), int32(0), int32(0), int32(3)),
		Entry("budget of every instance", int32(3), int32(3), 3, 0, int32(0), int32(3), int32(3), int32(0)),
		Entry("no instances", int32(0), int32(0), 0, 0, int32(0), int32(0), int32(1), int32(0)),
	)

	It("counts an index up before leaving, and whatever the order", func() {
		indices := []convergence.BudgetIndex{{Up: true, Leaving: true}, {}, {Leaving: true}}
		t := convergence.TallyBudget(3, 1, indices)
		Expect(t).To(Equal(convergence.DisruptionBudget{Instances: 3, MaxUnavailable: 1, Down: 1, Leaving: 1}))
		reversed := []convergence.BudgetIndex{indices[2], indices[1], indices[0]}
		Expect(convergence.TallyBudget(3, 1, reversed)).To(Equal(t))
	})

	It("says what holds the budget", func() {
		t := convergence.TallyBudget(6, 1, budgetIndices(6, 4, 1))
		Expect(t.Holds()).To(Equal("budget 2 of 1 spent: 1 leaving (evacuating or told to stop), 1 down"))
	})
})
