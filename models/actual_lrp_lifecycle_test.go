package models_test

import (
	"os"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

const lifecycleNow = int64(2_000)

var (
	lifecycleNet  = &models.NetInfo{Address: "10.0.0.1", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}
	lifecycleNet2 = &models.NetInfo{Address: "10.0.0.2"}
	lifecycleRP   = []*models.RoutePort{{Router: "http", Route: "web.example.com", ContainerPort: 8080}}
	// lifecycleRP as a row with lifecycleNet stores it.
	lifecycleRPOnNet = []*models.RoutePort{{Router: "http", Route: "web.example.com", ContainerPort: 8080, HostPort: 61001}}
)

// lifecycleRow is web/<index> (<presence>) in state, owned by ig-1 on
// cell-1 unless UNCLAIMED (then placed on cell-1) or CRASHED (then
// nobody's), at tag index 4 and since 1000.
func lifecycleRow(state models.ActualLRP_State, edit ...func(*models.ActualLRP)) *models.ActualLRP {
	lrp := &models.ActualLRP{
		ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY, DefinitionId: "v1",
		State: state, CellId: "cell-1", Since: 1000,
		ModificationTag: &models.ModificationTag{Epoch: "e", Index: 4},
	}
	switch state {
	case models.ActualLRP_CLAIMED:
		lrp.InstanceGuid = "ig-1"
	case models.ActualLRP_RUNNING:
		lrp.InstanceGuid = "ig-1"
		lrp.NetInfo, lrp.Routable, lrp.Occupied = lifecycleNet, true, true
		lrp.RoutePorts = []*models.RoutePort{{Router: "http", Route: "old.example.com", ContainerPort: 9090}}
	case models.ActualLRP_CRASHED:
		lrp.CellId, lrp.CrashCount, lrp.CrashReason = "", 1, "OOM"
	}
	for _, e := range edit {
		e(lrp)
	}
	return lrp
}

func call(verb models.LifecycleVerb, instanceGuid, cellID string, edit ...func(*models.LifecycleCall)) models.LifecycleCall {
	c := models.LifecycleCall{Verb: verb, InstanceGuid: instanceGuid, CellID: cellID}
	for _, e := range edit {
		e(&c)
	}
	return c
}

func withNet(n *models.NetInfo, routable bool) func(*models.LifecycleCall) {
	return func(c *models.LifecycleCall) { c.NetInfo, c.Routable, c.RoutePorts = n, routable, lifecycleRP }
}

// next is before's next version with edit applied: what a write stores.
func next(before *models.ActualLRP, edit func(*models.ActualLRP)) *models.ActualLRP {
	after := proto.Clone(before).(*models.ActualLRP)
	after.ModificationTag.Index++
	edit(after)
	return after
}

var _ = Describe("DecideLifecycle", func() {
	type outcome struct {
		after   func(before *models.ActualLRP) *models.ActualLRP // nil: nothing written
		removed bool
		events  []string
		errType models.Error_Type
		message string
	}
	writes := func(events []string, edit func(*models.ActualLRP)) outcome {
		return outcome{after: func(b *models.ActualLRP) *models.ActualLRP { return next(b, edit) }, events: events}
	}
	changed := []string{models.EventActualLRPChanged}
	repeat := outcome{}
	refused := func(t models.Error_Type, message string) outcome { return outcome{errType: t, message: message} }
	refusedMove := func(message string) outcome { return refused(models.Error_InvalidStateTransition, message) }

	DescribeTable("decides a call from the row as read",
		func(before *models.ActualLRP, c models.LifecycleCall, want outcome) {
			kept := proto.Clone(before)
			change, err := models.DecideLifecycle(before, c, lifecycleNow)
			Expect(proto.Equal(kept, before)).To(BeTrue(), "the decider changed the row it read")
			if want.message != "" {
				Expect(err).To(MatchError(want.message))
				Expect(models.ConvertError(err).GetType()).To(Equal(want.errType))
				Expect(change).To(BeZero())
				return
			}
			Expect(err).NotTo(HaveOccurred())
			Expect(change.Removed).To(Equal(want.removed))
			var types []string
			for _, e := range change.Events {
				types = append(types, e.Type)
			}
			Expect(types).To(Equal(want.events))
			if want.after == nil {
				Expect(change.After).To(BeNil())
				return
			}
			Expect(proto.Equal(change.After, want.after(before))).To(BeTrue(), "after: %v\nwant:  %v", change.After, want.after(before))
		},
		// Claim.
		Entry("claim: UNCLAIMED placed here → CLAIMED by the caller, placement error cleared",
			lifecycleRow(models.ActualLRP_UNCLAIMED, func(l *models.ActualLRP) { l.PlacementError = "full" }),
			call(models.LifecycleClaim, "ig-1", "cell-1"),
			writes(changed, func(a *models.ActualLRP) {
				a.State, a.InstanceGuid, a.PlacementError, a.Since = models.ActualLRP_CLAIMED, "ig-1", "", lifecycleNow
			})),
		Entry("claim: repeated by its owner, CLAIMED", lifecycleRow(models.ActualLRP_CLAIMED),
			call(models.LifecycleClaim, "ig-1", "cell-1"), repeat),
		Entry("claim: by its owner while RUNNING", lifecycleRow(models.ActualLRP_RUNNING),
			call(models.LifecycleClaim, "ig-1", "cell-1"), repeat),
		Entry("claim: placed on another cell", lifecycleRow(models.ActualLRP_UNCLAIMED),
			call(models.LifecycleClaim, "ig-2", "cell-2"),
			refusedMove(`InvalidStateTransition: cannot claim actual LRP web/0 (ORDINARY) on cell "cell-2": it is placed on cell "cell-1"`)),
		Entry("claim: placed on no cell", lifecycleRow(models.ActualLRP_UNCLAIMED, func(l *models.ActualLRP) { l.CellId = "" }),
			call(models.LifecycleClaim, "ig-1", "cell-1"),
			refusedMove(`InvalidStateTransition: cannot claim actual LRP web/0 (ORDINARY) on cell "cell-1": it is not placed on any cell yet`)),
		Entry("claim: another instance's", lifecycleRow(models.ActualLRP_CLAIMED),
			call(models.LifecycleClaim, "ig-2", "cell-1"),
			refusedMove(`InvalidStateTransition: cannot move actual LRP web/0 from CLAIMED to CLAIMED: it belongs to instance "ig-1" on cell "cell-1", not instance "ig-2" on cell "cell-1"`)),
		Entry("claim: CRASHED", lifecycleRow(models.ActualLRP_CRASHED),
			call(models.LifecycleClaim, "ig-1", "cell-1"),
			refusedMove(`InvalidStateTransition: cannot move actual LRP web/0 from CRASHED to CLAIMED: a crashed instance restarts by being unclaimed and placed again`)),

		// Start.
		Entry("start: CLAIMED → RUNNING with net info, the definition's routes, since now",
			lifecycleRow(models.ActualLRP_CLAIMED), call(models.LifecycleStart, "ig-1", "cell-1", withNet(lifecycleNet, true)),
			writes(changed, func(a *models.ActualLRP) {
				a.State, a.NetInfo, a.Routable, a.RoutePorts, a.Since = models.ActualLRP_RUNNING, lifecycleNet, true, lifecycleRPOnNet, lifecycleNow
			})),
		Entry("start: UNCLAIMED placed here → RUNNING straight away",
			lifecycleRow(models.ActualLRP_UNCLAIMED), call(models.LifecycleStart, "ig-1", "cell-1", withNet(lifecycleNet, false)),
			writes(changed, func(a *models.ActualLRP) {
				a.State, a.InstanceGuid, a.NetInfo, a.RoutePorts, a.Since = models.ActualLRP_RUNNING, "ig-1", lifecycleNet, lifecycleRPOnNet, lifecycleNow
			})),
		Entry("start: UNCLAIMED placed elsewhere", lifecycleRow(models.ActualLRP_UNCLAIMED),
			call(models.LifecycleStart, "ig-2", "cell-2", withNet(lifecycleNet, true)),
			refusedMove(`InvalidStateTransition: cannot start actual LRP web/0 (ORDINARY) on cell "cell-2": it is placed on cell "cell-1"`)),
		Entry("start: repeated with the same net info and routable", lifecycleRow(models.ActualLRP_RUNNING),
			call(models.LifecycleStart, "ig-1", "cell-1", withNet(lifecycleNet, true)), repeat),
		Entry("start: RUNNING with new net info keeps since and its routes",
			lifecycleRow(models.ActualLRP_RUNNING), call(models.LifecycleStart, "ig-1", "cell-1", withNet(lifecycleNet2, false)),
			writes(changed, func(a *models.ActualLRP) { a.NetInfo, a.Routable = lifecycleNet2, false })),
		Entry("start: RUNNING with unset net info is not the same as set, and keeps no routes",
			lifecycleRow(models.ActualLRP_RUNNING), call(models.LifecycleStart, "ig-1", "cell-1", withNet(nil, true)),
			writes(changed, func(a *models.ActualLRP) { a.NetInfo, a.RoutePorts = nil, nil })),
		Entry("start: a validation instance is never routable",
			lifecycleRow(models.ActualLRP_CLAIMED, func(l *models.ActualLRP) { l.Index = models.ValidationIndex }),
			call(models.LifecycleStart, "ig-1", "cell-1", withNet(lifecycleNet, true)),
			writes(changed, func(a *models.ActualLRP) {
				a.State, a.NetInfo, a.RoutePorts, a.Since = models.ActualLRP_RUNNING, lifecycleNet, lifecycleRPOnNet, lifecycleNow
			})),
		Entry("start: RETIRING and RUNNING rewrites net info",
			lifecycleRow(models.ActualLRP_RUNNING, func(l *models.ActualLRP) { l.Presence = models.ActualLRP_RETIRING }),
			call(models.LifecycleStart, "ig-1", "cell-1", withNet(lifecycleNet2, true)),
			writes(changed, func(a *models.ActualLRP) { a.NetInfo = lifecycleNet2 })),
		Entry("start: EVACUATING and CLAIMED",
			lifecycleRow(models.ActualLRP_CLAIMED, func(l *models.ActualLRP) { l.Presence = models.ActualLRP_EVACUATING }),
			call(models.LifecycleStart, "ig-1", "cell-1", withNet(lifecycleNet, true)),
			refusedMove(`InvalidStateTransition: cannot start actual LRP web/0 (EVACUATING): it is CLAIMED, and a row other than ORDINARY only changes its routable and net info while RUNNING`)),
		Entry("start: CRASHED", lifecycleRow(models.ActualLRP_CRASHED),
			call(models.LifecycleStart, "ig-1", "cell-1", withNet(lifecycleNet, true)),
			refusedMove(`InvalidStateTransition: cannot move actual LRP web/0 from CRASHED to RUNNING: a crashed instance restarts by being unclaimed and placed again`)),

		// Crash.
		Entry("crash: RUNNING → CRASHED, counted, nobody's, nothing routable or held",
			lifecycleRow(models.ActualLRP_RUNNING), call(models.LifecycleCrash, "ig-1", "cell-1", func(c *models.LifecycleCall) { c.CrashReason = "exit 1" }),
			writes([]string{models.EventActualLRPCrashed, models.EventActualLRPChanged}, func(a *models.ActualLRP) {
				a.State, a.CrashCount, a.CrashReason, a.Since = models.ActualLRP_CRASHED, 1, "exit 1", lifecycleNow
				a.InstanceGuid, a.CellId, a.NetInfo, a.Routable, a.Occupied, a.RoutePorts = "", "", nil, false, false, nil
			})),
		Entry("crash: CLAIMED too", lifecycleRow(models.ActualLRP_CLAIMED, func(l *models.ActualLRP) { l.CrashCount = 2 }),
			call(models.LifecycleCrash, "ig-1", "cell-1"),
			writes([]string{models.EventActualLRPCrashed, models.EventActualLRPChanged}, func(a *models.ActualLRP) {
				a.State, a.CrashCount, a.Since, a.InstanceGuid, a.CellId = models.ActualLRP_CRASHED, 3, lifecycleNow, "", ""
			})),
		Entry("crash: UNCLAIMED", lifecycleRow(models.ActualLRP_UNCLAIMED), call(models.LifecycleCrash, "ig-1", "cell-1"),
			refusedMove(`InvalidStateTransition: cannot move actual LRP web/0 from UNCLAIMED to CRASHED: nothing runs there to crash`)),
		Entry("crash: CRASHED again", lifecycleRow(models.ActualLRP_CRASHED), call(models.LifecycleCrash, "ig-1", "cell-1"),
			refusedMove(`InvalidStateTransition: cannot move actual LRP web/0 from CRASHED to CRASHED: a crashed instance restarts by being unclaimed and placed again`)),
		Entry("crash: another instance's", lifecycleRow(models.ActualLRP_RUNNING), call(models.LifecycleCrash, "ig-1", "cell-2"),
			refusedMove(`InvalidStateTransition: cannot move actual LRP web/0 from RUNNING to CRASHED: it belongs to instance "ig-1" on cell "cell-1", not instance "ig-1" on cell "cell-2"`)),

		// Fail.
		Entry("fail: UNCLAIMED placed here → off the cell, with the error",
			lifecycleRow(models.ActualLRP_UNCLAIMED), call(models.LifecycleFail, "", "cell-1", func(c *models.LifecycleCall) { c.PlacementError = "no disk" }),
			writes(changed, func(a *models.ActualLRP) { a.CellId, a.PlacementError, a.Since = "", "no disk", lifecycleNow })),
		Entry("fail: placed elsewhere", lifecycleRow(models.ActualLRP_UNCLAIMED), call(models.LifecycleFail, "", "cell-2"),
			refusedMove(`InvalidStateTransition: cannot fail actual LRP web/0 (ORDINARY) on cell "cell-2": it is placed on cell "cell-1"`)),
		Entry("fail: CLAIMED", lifecycleRow(models.ActualLRP_CLAIMED), call(models.LifecycleFail, "", "cell-1"),
			refusedMove(`InvalidStateTransition: cannot fail actual LRP web/0 (ORDINARY): it is CLAIMED, and only an UNCLAIMED instance placed on a cell can fail there; crash a claimed or running one`)),

		// Remove.
		Entry("remove: the owner's row, whatever its state", lifecycleRow(models.ActualLRP_RUNNING),
			call(models.LifecycleRemove, "ig-1", "cell-1"),
			outcome{removed: true, events: []string{models.EventActualLRPRemoved}}),
		Entry("remove: an unowned row", lifecycleRow(models.ActualLRP_UNCLAIMED), call(models.LifecycleRemove, "ig-1", "cell-1"),
			refusedMove(`InvalidStateTransition: cannot remove actual LRP web/0 (ORDINARY): it belongs to instance "" on cell "cell-1", not instance "ig-1" on cell "cell-1"`)),

		Entry("an unknown verb", lifecycleRow(models.ActualLRP_UNCLAIMED), call("adopt", "ig-1", "cell-1"),
			refused(models.Error_InvalidRequest, `InvalidRequest: verb: unknown lifecycle call "adopt"`)),
	)

	It("plays the worked example of its doc comment", func() {
		row := lifecycleRow(models.ActualLRP_UNCLAIMED)
		decide := func(c models.LifecycleCall) (models.LifecycleChange, error) {
			change, err := models.DecideLifecycle(row, c, lifecycleNow)
			if err == nil && change.After != nil {
				row = change.After
			}
			return change, err
		}
		_, err := decide(call(models.LifecycleClaim, "ig-1", "cell-2"))
		Expect(err).To(MatchError(`InvalidStateTransition: cannot claim actual LRP web/0 (ORDINARY) on cell "cell-2": it is placed on cell "cell-1"`))
		change, err := decide(call(models.LifecycleClaim, "ig-1", "cell-1"))
		Expect(err).NotTo(HaveOccurred())
		Expect(change.Events).To(HaveLen(1))
		Expect(row.State).To(Equal(models.ActualLRP_CLAIMED))
		Expect(row.ModificationTag.Index).To(BeEquivalentTo(5))
		Expect(decide(call(models.LifecycleClaim, "ig-1", "cell-1"))).To(BeZero())
		_, err = decide(call(models.LifecycleStart, "ig-1", "cell-1", withNet(lifecycleNet, true)))
		Expect(err).NotTo(HaveOccurred())
		Expect(row.State).To(Equal(models.ActualLRP_RUNNING))
		Expect(row.ModificationTag.Index).To(BeEquivalentTo(6))
		Expect(decide(call(models.LifecycleStart, "ig-1", "cell-1", withNet(lifecycleNet, true)))).To(BeZero())
		row.Since = 1500
		_, err = decide(call(models.LifecycleStart, "ig-1", "cell-1", withNet(lifecycleNet2, false)))
		Expect(err).NotTo(HaveOccurred())
		Expect(row.Since).To(BeEquivalentTo(1500))
		Expect(row.ModificationTag.Index).To(BeEquivalentTo(7))
		change, err = decide(call(models.LifecycleCrash, "ig-1", "cell-1", func(c *models.LifecycleCall) { c.CrashReason = "OOM" }))
		Expect(err).NotTo(HaveOccurred())
		Expect(change.Events[0].Type).To(Equal(models.EventActualLRPCrashed))
		Expect(row.CrashCount).To(BeEquivalentTo(1))
		Expect(row.InstanceGuid + row.CellId).To(BeEmpty())
		Expect(row.ModificationTag.Index).To(BeEquivalentTo(8))
		_, err = decide(call(models.LifecycleClaim, "ig-1", "cell-1"))
		Expect(err).To(MatchError(ContainSubstring("a crashed instance restarts by being unclaimed and placed again")))
	})
})

// RepeatWritesNothing is held to DecideLifecycle: for every verb and every
// row a call of it writes from, the call decided again on the row written
// writes nothing, without error, exactly when the verb says so.
var _ = Describe("RepeatWritesNothing", func() {
	verbs := []models.LifecycleVerb{models.LifecycleClaim, models.LifecycleStart, models.LifecycleCrash,
		models.LifecycleFail, models.LifecycleRemove}
	rows := map[string]*models.ActualLRP{
		"UNCLAIMED placed on cell-1": lifecycleRow(models.ActualLRP_UNCLAIMED),
		"CLAIMED by ig-1":            lifecycleRow(models.ActualLRP_CLAIMED),
		"RUNNING by ig-1":            lifecycleRow(models.ActualLRP_RUNNING),
		"RUNNING by ig-1, evacuating": lifecycleRow(models.ActualLRP_RUNNING, func(l *models.ActualLRP) {
			l.Presence = models.ActualLRP_EVACUATING
		}),
	}
	calls := func(verb models.LifecycleVerb) []models.LifecycleCall {
		switch verb {
		case models.LifecycleStart:
			return []models.LifecycleCall{call(verb, "ig-1", "cell-1", withNet(lifecycleNet, true)),
				call(verb, "ig-1", "cell-1", withNet(lifecycleNet2, false))}
		case models.LifecycleCrash:
			return []models.LifecycleCall{call(verb, "ig-1", "cell-1", func(c *models.LifecycleCall) { c.CrashReason = "OOM" })}
		case models.LifecycleFail:
			return []models.LifecycleCall{call(verb, "", "cell-1", func(c *models.LifecycleCall) { c.PlacementError = "no room" })}
		}
		return []models.LifecycleCall{call(verb, "ig-1", "cell-1")}
	}
	for _, verb := range verbs {
		It(string(verb)+" says what deciding it again on its own write does", func() {
			wrote := 0
			for name, row := range rows {
				for _, c := range calls(verb) {
					first, err := models.DecideLifecycle(row, c, lifecycleNow)
					if err != nil || (first.After == nil && !first.Removed) {
						continue // refused, or a repeat already: nothing to repeat
					}
					wrote++
					repeatWritesNothing := false
					if first.After != nil {
						again, err := models.DecideLifecycle(first.After, c, lifecycleNow+1)
						repeatWritesNothing = err == nil && again.After == nil && !again.Removed && len(again.Events) == 0
					}
					Expect(verb.RepeatWritesNothing()).To(Equal(repeatWritesNothing), "%s from %s", verb, name)
				}
			}
			Expect(wrote).To(BeNumerically(">", 0), "some row takes a %s", verb)
		})
	}
})

// The transition table in actual_lrp_transitions.go's doc comment, read
// from the source and held against CheckTransition on rows as the
// lifecycle calls leave them: a cell that names a caller the rows cannot
// have (an owner of a CRASHED row) or allows what CheckTransition refuses
// fails here.
var _ = Describe("the transition table in CheckTransition's doc comment", func() {
	src, err := os.ReadFile("actual_lrp_transitions.go")
	if err != nil {
		panic(err)
	}
	var header []string
	table := map[string]map[string]string{} // from → to → who
	for _, line := range strings.Split(string(src), "\n") {
		if !strings.HasPrefix(line, "//\t") {
			continue
		}
		cells := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(strings.TrimPrefix(line, "//\t")), -1)
		if cells[0] == `from \ to` {
			header = cells[1:]
			continue
		}
		if header == nil || len(cells) != len(header)+1 {
			continue
		}
		table[cells[0]] = map[string]string{}
		for i, to := range header {
			table[cells[0]][to] = cells[i+1]
		}
	}

	// rows as DecideLifecycle leaves them, from an UNCLAIMED row placed on
	// cell-1 and claimed, started and crashed by ig-1.
	rows := map[string]*models.ActualLRP{}
	row := lifecycleRow(models.ActualLRP_UNCLAIMED)
	rows["UNCLAIMED"] = row
	for _, c := range []models.LifecycleCall{
		call(models.LifecycleClaim, "ig-1", "cell-1"),
		call(models.LifecycleStart, "ig-1", "cell-1", withNet(lifecycleNet, true)),
		call(models.LifecycleCrash, "ig-1", "cell-1"),
	} {
		change, err := models.DecideLifecycle(row, c, lifecycleNow)
		if err != nil {
			panic(err)
		}
		row = change.After
		rows[row.State.String()] = row
	}

	It("has a row for every state and a column for every state", func() {
		Expect(header).To(ConsistOf("UNCLAIMED", "CLAIMED", "RUNNING", "CRASHED"))
		Expect(table).To(HaveLen(4))
		for from := range table {
			Expect(rows).To(HaveKey(from))
		}
	})

	type asker struct {
		name, instanceGuid, cellID string
	}
	for _, from := range []string{"UNCLAIMED", "CLAIMED", "RUNNING", "CRASHED"} {
		for _, to := range []string{"UNCLAIMED", "CLAIMED", "RUNNING", "CRASHED"} {
			It(from+" → "+to+" is as the table says", func() {
				who, ok := table[from][to]
				Expect(ok).To(BeTrue(), "no cell %s → %s", from, to)
				current := rows[from]
				next := models.ActualLRP_State(models.ActualLRP_State_value[to])
				allowed := func(a asker) bool {
					return models.CheckTransition(current, next, a.instanceGuid, a.cellID) == nil
				}
				theBoard := asker{"the board", "", ""}
				strangers := []asker{
					{"another instance on cell-1", "ig-9", "cell-1"},
					{"another instance elsewhere", "ig-9", "cell-9"},
				}
				if current.InstanceGuid != "" {
					strangers = append(strangers, asker{"its instance guid on another cell", current.InstanceGuid, "cell-9"})
				}
				theOwner := asker{"its owner", current.InstanceGuid, current.CellId}
				hasOwner := current.InstanceGuid != ""

				switch who {
				case "anyone":
					Expect(allowed(theBoard)).To(BeTrue())
					for _, a := range strangers {
						Expect(allowed(a)).To(BeTrue(), a.name)
					}
				case "any cell":
					for _, a := range strangers {
						Expect(allowed(a)).To(BeTrue(), a.name)
					}
				case "same", "board/same":
					Expect(hasOwner).To(BeTrue(), "a %s row has no owner", from)
					Expect(allowed(theOwner)).To(BeTrue())
					Expect(allowed(theBoard)).To(Equal(who == "board/same"))
					for _, a := range strangers {
						Expect(allowed(a)).To(BeFalse(), a.name)
					}
				case "board":
					Expect(hasOwner).To(BeFalse(), "a %s row has an owner, whom the table leaves out", from)
					Expect(allowed(theBoard)).To(BeTrue())
					for _, a := range strangers {
						Expect(allowed(a)).To(BeFalse(), a.name)
					}
				case "no":
					Expect(allowed(theBoard)).To(BeFalse())
					Expect(hasOwner && allowed(theOwner)).To(BeFalse())
					for _, a := range strangers {
						Expect(allowed(a)).To(BeFalse(), a.name)
					}
				default:
					Fail("unknown cell " + who)
				}
			})
		}
	}
})
