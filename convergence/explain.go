package convergence

import (
	"fmt"
	"strings"
)

// explainNoFit says, in words an operator can act on, why no cell fits an
// instance with need n and the tags of e. It names the first requirement,
// in the order tags, memory, disk, instance slot, that no present cell
// meets together with the ones before it.
func explainNoFit(t *cellTable, e *eligibility, n need) string {
	var tagged, withMemory, withDisk, draining, quarantined, startLimited bool
	for cell := range t.ids {
		if t.present[cell] && t.draining[cell] {
			draining = true
		}
		if t.present[cell] && t.quarantined[cell] {
			quarantined = true
		}
		if !t.takesInstances(int32(cell)) || !e.classOK[t.class[cell]] {
			continue
		}
		tagged = true
		f := t.free[cell]
		if f.memory >= int64(n.memory) {
			withMemory = true
			if f.disk >= int64(n.disk) {
				withDisk = true
				startLimited = startLimited || (f.slots >= 1 && !t.mayStart(int32(cell)))
			}
		}
	}
	switch {
	case !tagged && len(e.tags) == 0 && quarantined:
		return "every present cell is draining or quarantined"
	case !tagged && quarantined:
		return "no present cell that is neither draining nor quarantined has tags [" + strings.Join(e.tags, " ") + "]"
	case !tagged && len(e.tags) == 0 && draining:
		return "every present cell is draining"
	case !tagged && len(e.tags) == 0:
		return "no cell is present"
	case !tagged && draining:
		return "no present cell that is not draining has tags [" + strings.Join(e.tags, " ") + "]"
	case !tagged:
		return "no present cell has tags [" + strings.Join(e.tags, " ") + "]"
	}
	if startLimited {
		return startLimitReason(t.startLimit)
	}
	wants := []string{fmt.Sprintf("%d MB free memory", n.memory)}
	if withMemory {
		wants = append(wants, fmt.Sprintf("%d MB free disk", n.disk))
	}
	if withDisk {
		wants = append(wants, "a free instance slot")
	}
	if len(e.tags) > 0 {
		wants = append(wants, "tags ["+strings.Join(e.tags, " ")+"]")
	}
	return "no cell with " + joinWithAnd(wants)
}

// joinWithAnd joins "a", "b", "c" as "a, b and c".
func joinWithAnd(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// zoneShortfalls says, zone by zone (in zone order), what no cell of the
// zone that would take an instance with the tags of e has enough of for
// need n: memory, then disk among the cells with the memory, then a free
// instance slot among the cells with both. A zone where some cell fits is
// left out; so is one with no such cell at all.
func zoneShortfalls(t *cellTable, e *eligibility, n need) []ZoneShortfall {
	type best struct {
		any                   bool
		memory, disk, slots   int64
		withMemory, withDisks bool
	}
	zones := make([]best, len(t.zones))
	for cell := range t.ids {
		if !t.takesInstances(int32(cell)) || !e.classOK[t.class[cell]] {
			continue
		}
		z, f := &zones[t.zone[cell]], t.free[cell]
		if !z.any {
			z.any, z.memory = true, f.memory
		}
		z.memory = max(z.memory, f.memory)
		if f.memory < int64(n.memory) {
			continue
		}
		if !z.withMemory {
			z.withMemory, z.disk = true, f.disk
		}
		z.disk = max(z.disk, f.disk)
		if f.disk < int64(n.disk) {
			continue
		}
		z.withDisks = true
		z.slots = max(z.slots, f.slots)
	}
	var out []ZoneShortfall
	for i, z := range zones {
		switch {
		case !z.any:
		case !z.withMemory:
			out = append(out, ZoneShortfall{Zone: t.zones[i], Short: "memory", Free: max(z.memory, 0), Need: int64(n.memory)})
		case !z.withDisks:
			out = append(out, ZoneShortfall{Zone: t.zones[i], Short: "disk", Free: max(z.disk, 0), Need: int64(n.disk)})
		case z.slots < 1:
			out = append(out, ZoneShortfall{Zone: t.zones[i], Short: "instances", Free: max(z.slots, 0), Need: 1})
		}
	}
	return out
}

// refusedByTags reports whether no present cell that takes instances has
// the tags of e (and e asks for some).
func refusedByTags(t *cellTable, e *eligibility) bool {
	if len(e.tags) == 0 {
		return false
	}
	for cell := range t.ids {
		if t.takesInstances(int32(cell)) && e.classOK[t.class[cell]] {
			return false
		}
	}
	return true
}
