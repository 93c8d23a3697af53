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
			got := convergence.DecideEvacuation("web", true, t, nil, deadline, now)
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
		Expect(convergence.DecideEvacuation("web", false, leaving, nil, 0, 60)).To(Equal(convergence.Evacuation{Go: true}))
	})
})

var _ = Describe("TallyGroup", func() {
	checkout := &models.BudgetGroup{Name: "checkout", MaxUnavailable: "2"}
	member := func(guid string, n, b int32, up, leaving int) convergence.GroupMember {
		return convergence.GroupMember{ProcessGuid: guid, Budget: convergence.TallyBudget(n, b, budgetIndices(int(n), up, leaving))}
	}

	DescribeTable("instances, budget, spent, stops and handovers of the group",
		func(g *models.BudgetGroup, members []convergence.GroupMember, instances, budget, spent, stops, handovers int32) {
			t := convergence.TallyGroup(g, members)
			Expect([]int32{t.Instances, t.MaxUnavailable, t.Spent, t.Stops(), t.Handovers()}).
				To(Equal([]int32{instances, budget, spent, stops, handovers}))
		},
		// The worked example of TallyGroup: web-a and web-b, 6 each.
		Entry("1. all 12 serve", checkout, []convergence.GroupMember{member("web-a", 6, 2, 6, 0), member("web-b", 6, 2, 6, 0)},
			int32(12), int32(2), int32(0), int32(2), int32(2)),
		Entry("3. one of web-a's stops under way", checkout, []convergence.GroupMember{member("web-a", 6, 2, 5, 1), member("web-b", 6, 2, 6, 0)},
			int32(12), int32(2), int32(1), int32(1), int32(1)),
		Entry("4. over budget by accident: a crash in web-b", checkout, []convergence.GroupMember{member("web-a", 6, 2, 4, 2), member("web-b", 6, 2, 5, 0)},
			int32(12), int32(2), int32(3), int32(0), int32(0)),
		Entry("a percent of the members' instances, rounded down", &models.BudgetGroup{Name: "g", MaxUnavailable: "10%"},
			[]convergence.GroupMember{member("a", 12, 0, 12, 0), member("b", 12, 0, 12, 0)}, int32(24), int32(2), int32(0), int32(2), int32(2)),
		Entry("a count above the instances counts as the instances", &models.BudgetGroup{Name: "g", MaxUnavailable: "40"},
			[]convergence.GroupMember{member("a", 3, 0, 3, 0)}, int32(3), int32(3), int32(0), int32(3), int32(3)),
		Entry("budget 0: no stop, one handover at a time", &models.BudgetGroup{Name: "g", MaxUnavailable: "0"},
			[]convergence.GroupMember{member("a", 3, 3, 3, 0), member("b", 3, 3, 3, 0)}, int32(6), int32(0), int32(0), int32(0), int32(1)),
		Entry("budget 0, one leaving: none", &models.BudgetGroup{Name: "g", MaxUnavailable: "0"},
			[]convergence.GroupMember{member("a", 3, 3, 3, 0), member("b", 3, 3, 2, 1)}, int32(6), int32(0), int32(1), int32(0), int32(0)),
	)

	It("is nil, with no limit, for a group nobody defined", func() {
		var g *convergence.GroupBudget = convergence.TallyGroup(nil, []convergence.GroupMember{member("a", 2, 0, 0, 0)})
		Expect(g).To(BeNil())
		own := convergence.TallyBudget(6, 1, budgetIndices(6, 6, 0))
		Expect(convergence.GroupStops(own, g)).To(Equal(int32(1)))
		Expect(convergence.GroupHandovers(own, g)).To(Equal(int32(1)))
	})

	It("lets an LRP disrupt only while both its own budget and its group's have room", func() {
		roomy := convergence.TallyBudget(6, 3, budgetIndices(6, 6, 0))
		spentOwn := convergence.TallyBudget(6, 1, budgetIndices(6, 5, 1))
		group := convergence.TallyGroup(checkout, []convergence.GroupMember{member("web-a", 6, 2, 6, 0)})
		Expect(convergence.GroupStops(roomy, group)).To(Equal(int32(2)), "the group's 2, not the LRP's 3")
		Expect(convergence.GroupStops(spentOwn, group)).To(Equal(int32(0)), "the LRP's own budget is spent")
		Expect(convergence.GroupHandovers(spentOwn, group)).To(Equal(int32(0)))
	})

	It("is drawn down as the pass decides, so two members cannot take its last unit", func() {
		group := convergence.TallyGroup(checkout, []convergence.GroupMember{member("web-b", 6, 2, 5, 0), member("web-a", 6, 2, 6, 0)})
		own := convergence.TallyBudget(6, 2, budgetIndices(6, 6, 0))
		Expect(convergence.GroupStops(own, group)).To(Equal(int32(1)))
		group.Draw("web-a", 1)
		Expect(convergence.GroupStops(own, group)).To(Equal(int32(0)), "web-a took the last unit")
		Expect(group.Holds()).To(Equal("group checkout: budget 2, spent 2 (web-a 1, web-b 1)"))
		var none *convergence.GroupBudget
		none.Draw("web-a", 1) // no group: nothing to draw
	})

	It("names at most five members that spend it", func() {
		var members []convergence.GroupMember
		for _, guid := range []string{"g", "f", "e", "d", "c", "b", "a"} {
			members = append(members, member(guid, 2, 0, 1, 0))
		}
		members = append(members, member("idle", 2, 0, 2, 0))
		t := convergence.TallyGroup(&models.BudgetGroup{Name: "wide", MaxUnavailable: "3"}, members)
		Expect(t.Holds()).To(Equal("group wide: budget 3, spent 7 (a 1, b 1, c 1, d 1, e 1, 2 more)"))
	})
})

var _ = Describe("DecideEvacuation in a budget group", func() {
	It("waits while the group has no handover left, naming the group", func() {
		own := convergence.TallyBudget(4, 1, budgetIndices(4, 4, 0))
		group := convergence.TallyGroup(&models.BudgetGroup{Name: "checkout", MaxUnavailable: "1"}, []convergence.GroupMember{
			{ProcessGuid: "web", Budget: own},
			{ProcessGuid: "api", Budget: convergence.DisruptionBudget{Instances: 4, MaxUnavailable: 1, Leaving: 1, Since: 7}},
		})
		got := convergence.DecideEvacuation("web", true, own, group, 600, 60)
		Expect(got.Go).To(BeFalse())
		Expect(got.Blocked.GetDetail()).To(Equal("web's disruption budget group checkout: budget 1, spent 1 (api 1)"))
		Expect(got.Blocked.GetSince()).To(Equal(int64(7)))
		Expect(got.Blocked.GetEstimate()).To(Equal(int64(600)))
		Expect(convergence.DecideEvacuation("web", true, own, group, 600, 600)).To(Equal(convergence.Evacuation{Go: true, Overdue: true}))
	})

	It("names the LRP's own budget when that holds too", func() {
		own := convergence.TallyBudget(4, 0, budgetIndices(4, 3, 1))
		group := convergence.TallyGroup(&models.BudgetGroup{Name: "checkout", MaxUnavailable: "1"}, []convergence.GroupMember{{ProcessGuid: "web", Budget: own}})
		got := convergence.DecideEvacuation("web", true, own, group, 0, 60)
		Expect(got.Blocked.GetDetail()).To(HavePrefix("web's disruption budget: budget 0, spent 1"))
	})

	It("goes while both have room", func() {
		own := convergence.TallyBudget(4, 1, budgetIndices(4, 4, 0))
		group := convergence.TallyGroup(&models.BudgetGroup{Name: "checkout", MaxUnavailable: "1"}, []convergence.GroupMember{{ProcessGuid: "web", Budget: own}})
		Expect(convergence.DecideEvacuation("web", true, own, group, 0, 60)).To(Equal(convergence.Evacuation{Go: true}))
	})
})
