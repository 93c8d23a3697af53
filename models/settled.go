package models

import "fmt"

// Settled says whether an LRP's instances are exactly what it wants, as
// cork wait waits for: every index from 0 to instances−1 has one
// instance, ORDINARY, RUNNING and routable, on the active definition, on a
// cell that is not draining (its rep is about to move it), and there is
// nothing else — no RETIRING, EVACUATING or SUSPECT instance still
// serving beside a replacement, no instance at or past instances (a
// scale-down's extras, a validation instance). When it is not, the reason
// names the first index in the way, in index order.
//
// Worked example, 3 instances wanted on v2:
//
//  1. 0 RUNNING v2, 1 RUNNING v2, 2 UNCLAIMED v2 (placed, not yet
//     claimed): not settled, "index 2 is UNCLAIMED".
//  2. 2 has started: 0, 1, 2 RUNNING v2 and routable, but 1 also has a
//     RETIRING instance on v1 that drains: not settled, "index 1 also
//     has an instance that is RETIRING".
//  3. That one has gone: settled.
//  4. The LRP scaled to 2 and 2 is still stopping: not settled, "index
//     2 is beyond the 2 instances wanted".
//  5. 2 has gone, and cell-a, where 0 runs, is drained: not settled,
//     "index 0 is on cell-a, which is draining", until 0 runs elsewhere
//     and its EVACUATING instance has gone.
func Settled(instances int32, activeDefinitionID string, lrps []*ActualLRP, draining map[string]bool) (bool, string) {
	// problems holds the first thing found wrong at each index.
	problems := map[int32]string{}
	note := func(index int32, why string) {
		if _, ok := problems[index]; !ok {
			problems[index] = why
		}
	}
	ordinary := map[int32]*ActualLRP{}
	for _, lrp := range lrps {
		switch i := lrp.GetIndex(); {
		case i >= instances:
			note(i, fmt.Sprintf("is beyond the %d instances wanted", instances))
		case lrp.GetPresence() != ActualLRP_ORDINARY:
			note(i, "also has an instance that is "+lrp.GetPresence().String())
		default:
			ordinary[i] = lrp
		}
	}
	for i := int32(0); i < instances; i++ {
		switch lrp := ordinary[i]; {
		case lrp == nil:
			note(i, "has no instance")
		case lrp.GetState() != ActualLRP_RUNNING:
			note(i, "is "+lrp.GetState().String())
		case lrp.GetDefinitionId() != activeDefinitionID:
			note(i, fmt.Sprintf("runs %s, not the active %s", lrp.GetDefinitionId(), activeDefinitionID))
		case !lrp.GetRoutable():
			note(i, "is not routable")
		case draining[lrp.GetCellId()]:
			note(i, "is on "+lrp.GetCellId()+", which is draining")
		}
	}
	if len(problems) == 0 {
		return true, ""
	}
	first := int32(-1)
	for i := range problems {
		if first == -1 || i < first {
			first = i
		}
	}
	return false, fmt.Sprintf("index %d %s", first, problems[first])
}
