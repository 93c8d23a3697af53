package sqldb

import (
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/structpb"
)

// Routes are stored as protojson text and every desired LRP read decodes
// them: listing 10,000 scheduling infos spent half its CPU in
// protojson.Unmarshal (about 7.7 µs and 49 allocations for one cf-router
// route). parseRoutes reads the plain JSON that protojson.Marshal writes —
// objects, arrays, numbers, true, false, null, strings without escapes —
// straight into a structpb.Struct, and gives up on anything else (an
// escape, invalid UTF-8, a repeated key, a number out of range, deep
// nesting, malformed text), which decodeRoutes then hands to protojson.
// So the result is protojson's for every text, error or not; only the
// common case is cheaper.

// maxRoutesDepth bounds the recursion of the fast path; deeper routes
// are protojson's (which allows 10,000 levels).
const maxRoutesDepth = 32

type routesParser struct {
	text  string
	pos   int
	depth int
}

// parseRoutes returns the routes the text holds, ok false when it leaves
// the text to protojson.
func parseRoutes(text string) (routes *structpb.Struct, ok bool) {
	p := &routesParser{text: text}
	p.skipSpace()
	routes, ok = p.object()
	if !ok {
		return nil, false
	}
	p.skipSpace()
	return routes, p.pos == len(p.text)
}

func (p *routesParser) skipSpace() {
	for p.pos < len(p.text) {
		switch p.text[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// consume skips space, then the byte c if it comes next.
func (p *routesParser) consume(c byte) bool {
	p.skipSpace()
	if p.pos < len(p.text) && p.text[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

// members reads an object, calling member after each key and its colon
// to read the value; it refuses a key repeated within the object, as
// protojson does.
func (p *routesParser) members(member func(key string) bool) bool {
	if !p.consume('{') {
		return false
	}
	if p.depth++; p.depth > maxRoutesDepth {
		return false
	}
	defer func() { p.depth-- }()
	if p.consume('}') {
		return true
	}
	var keys routeKeys
	for {
		p.skipSpace()
		key, ok := p.str()
		if !ok || !p.consume(':') || !keys.add(key) {
			return false
		}
		if !member(key) {
			return false
		}
		if p.consume('}') {
			return true
		}
		if !p.consume(',') {
			return false
		}
	}
}

// routeKeys are the keys of one object: a few in a slice (most objects
// of routes have one to three), more in a map.
type routeKeys struct {
	few  []string
	many map[string]bool
}

// add adds key, false when it is there already.
func (k *routeKeys) add(key string) bool {
	if k.many == nil && len(k.few) < 8 {
		if slices.Contains(k.few, key) {
			return false
		}
		k.few = append(k.few, key)
		return true
	}
	if k.many == nil {
		k.many = make(map[string]bool, 2*len(k.few))
		for _, f := range k.few {
			k.many[f] = true
		}
	}
	if k.many[key] {
		return false
	}
	k.many[key] = true
	return true
}

// elements reads a list, calling element to read each value.
func (p *routesParser) elements(element func() bool) bool {
	if !p.consume('[') {
		return false
	}
	if p.depth++; p.depth > maxRoutesDepth {
		return false
	}
	defer func() { p.depth-- }()
	if p.consume(']') {
		return true
	}
	for {
		if !element() {
			return false
		}
		if p.consume(']') {
			return true
		}
		if !p.consume(',') {
			return false
		}
	}
}

func (p *routesParser) object() (*structpb.Struct, bool) {
	fields := map[string]*structpb.Value{}
	ok := p.members(func(key string) bool {
		value, ok := p.value()
		fields[key] = value
		return ok
	})
	return &structpb.Struct{Fields: fields}, ok
}

func (p *routesParser) list() (*structpb.ListValue, bool) {
	list := &structpb.ListValue{}
	ok := p.elements(func() bool {
		value, ok := p.value()
		list.Values = append(list.Values, value)
		return ok
	})
	return list, ok
}

func (p *routesParser) value() (*structpb.Value, bool) {
	p.skipSpace()
	if p.pos == len(p.text) {
		return nil, false
	}
	switch c := p.text[p.pos]; {
	case c == '{':
		s, ok := p.object()
		return structpb.NewStructValue(s), ok
	case c == '[':
		l, ok := p.list()
		return structpb.NewListValue(l), ok
	case c == '"':
		s, ok := p.str()
		return structpb.NewStringValue(s), ok
	case c == '-' || ('0' <= c && c <= '9'):
		n, ok := p.number()
		return structpb.NewNumberValue(n), ok
	case p.word("true"):
		return structpb.NewBoolValue(true), true
	case p.word("false"):
		return structpb.NewBoolValue(false), true
	case p.word("null"):
		return structpb.NewNullValue(), true
	}
	return nil, false
}

// The numbers of google.protobuf.Struct's, ListValue's and Value's fields
// (struct.proto), which appendObject and its kin write.
const (
	structFields  protowire.Number = 1 // Struct: map<string, Value> fields
	mapEntryKey   protowire.Number = 1
	mapEntryValue protowire.Number = 2
	listValues    protowire.Number = 1 // ListValue: repeated Value values
	valueNull     protowire.Number = 1 // Value's oneof kind
	valueNumber   protowire.Number = 2
	valueString   protowire.Number = 3
	valueBool     protowire.Number = 4
	valueStruct   protowire.Number = 5
	valueList     protowire.Number = 6
)

// routesProtobuf is the protobuf of the google.protobuf.Struct the text
// holds, written as the text is read, without building the Struct: what
// parseRoutes would read, then proto.Marshal would write, up to the order
// of the map's entries (which no encoding fixes). ok false leaves the
// text to protojson, as parseRoutes does.
func routesProtobuf(text string) (encoded []byte, ok bool) {
	p := &routesParser{text: text}
	p.skipSpace()
	encoded, ok = p.appendObject(make([]byte, 0, len(text)))
	if !ok {
		return nil, false
	}
	p.skipSpace()
	return encoded, p.pos == len(p.text)
}

// appendObject appends the Struct an object is.
func (p *routesParser) appendObject(b []byte) ([]byte, bool) {
	ok := p.members(func(key string) bool {
		var ok bool
		b, ok = appendSized(b, structFields, func(entry []byte) ([]byte, bool) {
			entry = protowire.AppendTag(entry, mapEntryKey, protowire.BytesType)
			entry = protowire.AppendString(entry, key)
			return appendSized(entry, mapEntryValue, p.appendValue)
		})
		return ok
	})
	return b, ok
}

// appendList appends the ListValue a list is.
func (p *routesParser) appendList(b []byte) ([]byte, bool) {
	ok := p.elements(func() bool {
		var ok bool
		b, ok = appendSized(b, listValues, p.appendValue)
		return ok
	})
	return b, ok
}

// appendValue appends the Value a value is.
func (p *routesParser) appendValue(b []byte) ([]byte, bool) {
	p.skipSpace()
	if p.pos == len(p.text) {
		return b, false
	}
	switch c := p.text[p.pos]; {
	case c == '{':
		return appendSized(b, valueStruct, p.appendObject)
	case c == '[':
		return appendSized(b, valueList, p.appendList)
	case c == '"':
		s, ok := p.str()
		b = protowire.AppendTag(b, valueString, protowire.BytesType)
		return protowire.AppendString(b, s), ok
	case c == '-' || ('0' <= c && c <= '9'):
		n, ok := p.number()
		b = protowire.AppendTag(b, valueNumber, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, math.Float64bits(n)), ok
	case p.word("true"):
		b = protowire.AppendTag(b, valueBool, protowire.VarintType)
		return protowire.AppendVarint(b, 1), true
	case p.word("false"):
		b = protowire.AppendTag(b, valueBool, protowire.VarintType)
		return protowire.AppendVarint(b, 0), true
	case p.word("null"):
		b = protowire.AppendTag(b, valueNull, protowire.VarintType)
		return protowire.AppendVarint(b, 0), true
	}
	return b, false
}

// appendSized appends field number, length-delimited, its content what
// content appends: written in place, then moved up behind its length.
func appendSized(b []byte, number protowire.Number, content func([]byte) ([]byte, bool)) ([]byte, bool) {
	b = protowire.AppendTag(b, number, protowire.BytesType)
	start := len(b)
	b, ok := content(b)
	if !ok {
		return b, false
	}
	n := len(b) - start
	width := protowire.SizeVarint(uint64(n))
	b = slices.Grow(b, width)[:len(b)+width]
	copy(b[start+width:], b[start:start+n])
	protowire.AppendVarint(b[start:start], uint64(n))
	return b, true
}

// word consumes w when it comes next.
func (p *routesParser) word(w string) bool {
	if len(p.text)-p.pos >= len(w) && p.text[p.pos:p.pos+len(w)] == w {
		p.pos += len(w)
		return true
	}
	return false
}

// str reads a string without escapes or control characters, valid UTF-8.
func (p *routesParser) str() (string, bool) {
	if p.pos == len(p.text) || p.text[p.pos] != '"' {
		return "", false
	}
	start := p.pos + 1
	for i := start; i < len(p.text); i++ {
		switch c := p.text[i]; {
		case c == '"':
			s := p.text[start:i]
			p.pos = i + 1
			return s, utf8.ValidString(s)
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

// number reads a number as JSON writes it: -?(0|[1-9][0-9]*)(.[0-9]+)?
// ([eE][+-]?[0-9]+)?, within float64's range.
func (p *routesParser) number() (float64, bool) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.text) && '0' <= p.text[p.pos] && p.text[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	p.word("-")
	if p.word("0") {
		if p.pos < len(p.text) && '0' <= p.text[p.pos] && p.text[p.pos] <= '9' {
			return 0, false // a leading zero
		}
	} else if digits() == 0 {
		return 0, false
	}
	if p.word(".") && digits() == 0 {
		return 0, false
	}
	if p.word("e") || p.word("E") {
		if !p.word("+") {
			p.word("-")
		}
		if digits() == 0 {
			return 0, false
		}
	}
	n, err := strconv.ParseFloat(p.text[start:p.pos], 64)
	return n, err == nil
}
