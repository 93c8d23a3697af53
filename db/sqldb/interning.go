package sqldb

import "math"

// interner keeps one copy of each distinct string: a reader of many rows
// (the convergence snapshot, an instance list) shares one string among
// the rows that store the same value.
type interner map[string]string

func (in interner) get(b []byte) string {
	return in.getUpTo(b, math.MaxInt)
}

// getUpTo is get that keeps no new value once in holds most: past that,
// a value not kept is copied for each call, as without an interner.
func (in interner) getUpTo(b []byte, most int) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(in) < most {
		in[s] = s
	}
	return s
}

// listStrings makes an instance list's strings from its rows' columns,
// keeping one copy of each value that repeats across rows.
type listStrings struct {
	// lastGuid and lastDefinition are the row before's: an LRP's
	// instances are consecutive rows in the list's order.
	lastGuid, lastDefinition string
	// kept holds values of columns with few distinct values (domains,
	// cells, reasons), up to maxListStrings of them.
	kept interner
}

// maxListStrings bounds listStrings.kept: a column with more distinct
// values than that (reasons each naming an instance, say) gets a copy a
// row past it, as without keeping.
const maxListStrings = 4096

// lrp is the row's guid and definition id, the row before's copies when
// they are the same.
func (l *listStrings) lrp(guid, definitionID []byte) (string, string) {
	if string(guid) != l.lastGuid {
		l.lastGuid = string(guid)
	}
	if string(definitionID) != l.lastDefinition {
		l.lastDefinition = string(definitionID)
	}
	return l.lastGuid, l.lastDefinition
}

// shared is b as a string, the copy kept when b was seen before.
func (l *listStrings) shared(b []byte) string {
	if l.kept == nil {
		l.kept = interner{}
	}
	return l.kept.getUpTo(b, maxListStrings)
}
