package convergence_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/convergence"
	"github.com/corkboard/corkboard/models"
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
		Expect(t.Holds()).To(Equal("budget 1, spent 2: 1 leaving (evacuating or told to stop), 1 down"))
	})
})

var _ = Describe("TallyRows", func() {
	const (
		ord = models.ActualLRP_ORDINARY
		ret = models.ActualLRP_RETIRING
		eva = models.ActualLRP_EVACUATING
		sus = models.ActualLRP_SUSPECT
		run = models.ActualLRP_RUNNING
		unc = models.ActualLRP_UNCLAIMED
	)
	serving := func(index int32, presence models.ActualLRP_Presence) convergence.BudgetRow {
		return convergence.BudgetRow{Index: index, Presence: presence, State: run, Routable: true, OnPresentCell: true, Since: 5}
	}
	DescribeTable("up, leaving and down by the index's rows",
		func(rows []convergence.BudgetRow, down, leaving int32) {
			t := convergence.TallyRows(1, 1, rows, nil)
			Expect([]int32{t.Down, t.Leaving}).To(Equal([]int32{down, leaving}))
		},
		Entry("ORDINARY serving: up", []convergence.BudgetRow{serving(0, ord)}, int32(0), int32(0)),
		Entry("ORDINARY serving on a lost cell: down", []convergence.BudgetRow{{Index: 0, Presence: ord, State: run, Routable: true}}, int32(1), int32(0)),
		Entry("ORDINARY not routable: down", []convergence.BudgetRow{{Index: 0, Presence: ord, State: run, OnPresentCell: true}}, int32(1), int32(0)),
		Entry("no row: down", nil, int32(1), int32(0)),
		Entry("EVACUATING serving, ORDINARY unclaimed: leaving",
			[]convergence.BudgetRow{serving(0, eva), {Index: 0, Presence: ord, State: unc}}, int32(0), int32(1)),
		Entry("EVACUATING serving, ORDINARY serving: up", []convergence.BudgetRow{serving(0, eva), serving(0, ord)}, int32(0), int32(0)),
		Entry("RETIRING kept serving (a surge or a move): up", []convergence.BudgetRow{serving(0, ret), {Index: 0, Presence: ord, State: unc}}, int32(0), int32(0)),
		Entry("RETIRING told to stop, successor not serving: leaving",
			[]convergence.BudgetRow{{Index: 0, Presence: ret, State: run, Routable: true, StopRequested: true, OnPresentCell: true}}, int32(0), int32(1)),
		Entry("RETIRING serving on a lost cell: down",
			[]convergence.BudgetRow{{Index: 0, Presence: ret, State: run, Routable: true}, {Index: 0, Presence: ord, State: unc}}, int32(1), int32(0)),
		Entry("RETIRING told to stop on a lost cell: down",
			[]convergence.BudgetRow{{Index: 0, Presence: ret, State: run, Routable: true, StopRequested: true}}, int32(1), int32(0)),
		Entry("SUSPECT serving only: down", []convergence.BudgetRow{serving(0, sus)}, int32(1), int32(0)),
		Entry("an extra index plays no part", []convergence.BudgetRow{serving(0, ord), {Index: 3, Presence: ord, State: unc}}, int32(0), int32(0)),
	)

	It("counts covered indices up and keeps the earliest since of what spends the budget", func() {
		rows := []convergence.BudgetRow{
			{Index: 0, Presence: ord, State: unc, Since: 30},
			{Index: 1, Presence: eva, State: run, Routable: true, OnPresentCell: true, Since: 1},
			{Index: 1, Presence: ord, State: unc, Since: 20},
		}
		t := convergence.TallyRows(3, 1, rows, map[int32]bool{2: true})
		Expect(t).To(Equal(convergence.DisruptionBudget{Instances: 3, MaxUnavailable: 1, Down: 1, Leaving: 1, Since: 20}))
	})
})

var _ = Describe("DecideEvacuation", func() {
	// The worked example: web, 4 instances, budget 0, deadline at 600.
	const deadline = int64(600)
	leaving := convergence.DisruptionBudget{Instances: 4, Leaving: 1, Since: 1}
	DescribeTable("go, go overdue, or wait and say why",
		func(t convergence.DisruptionBudget, deadline, now int64, want convergence.Evacuation) {
			got := convergence.DecideEvacuation("web", true, t, deadline, now)
			Expect(got.Go).To(Equal(want.Go))
			Expect(got.Overdue).To(Equal(want.Overdue))
			if want.Blocked == nil {
				Expect(got.Blocked).To(BeNil())
			} else {
				Expect(proto.Equal(got.Blocked, want.Blocked)).To(BeTrue(), "%v", got.Blocked)
			}
		},
		Entry("1. web/1 leaving: web/3 waits", leaving, deadline, int64(60), convergence.Evacuation{Blocked: &models.BlockedBy{
			Reason: models.BlockedBudgetExhausted, Since: 1, Estimate: deadline,
			Detail: "web's disruption budget: budget 0, spent 1: 1 leaving (evacuating or told to stop), 0 down",
		}}),
		Entry("2. web/1 serves again: web/3 goes", convergence.DisruptionBudget{Instances: 4}, deadline, int64(120), convergence.Evacuation{Go: true}),
		Entry("3. at the deadline: goes, overdue", leaving, deadline, deadline, convergence.Evacuation{Go: true, Overdue: true}),
		Entry("no deadline: waits, no estimate", leaving, int64(0), int64(1_000_000), convergence.Evacuation{Blocked: &models.BlockedBy{
			Reason: models.BlockedBudgetExhausted, Since: 1,
			Detail: "web's disruption budget: budget 0, spent 1: 1 leaving (evacuating or told to stop), 0 down",
		}}),
	)

	It("0. lets an instance that serves nothing go, whatever the budget", func() {
		Expect(convergence.DecideEvacuation("web", false, leaving, 0, 60)).To(Equal(convergence.Evacuation{Go: true}))
	})
})
