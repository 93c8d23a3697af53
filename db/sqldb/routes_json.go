package sqldb

import (
	"strconv"
	"unicode/utf8"

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

func (p *routesParser) object() (*structpb.Struct, bool) {
	if !p.consume('{') {
		return nil, false
	}
	if p.depth++; p.depth > maxRoutesDepth {
		return nil, false
	}
	defer func() { p.depth-- }()
	fields := map[string]*structpb.Value{}
	if p.consume('}') {
		return &structpb.Struct{Fields: fields}, true
	}
	for {
		p.skipSpace()
		key, ok := p.str()
		if !ok || !p.consume(':') {
			return nil, false
		}
		if _, repeated := fields[key]; repeated {
			return nil, false
		}
		value, ok := p.value()
		if !ok {
			return nil, false
		}
		fields[key] = value
		if p.consume('}') {
			return &structpb.Struct{Fields: fields}, true
		}
		if !p.consume(',') {
			return nil, false
		}
	}
}

func (p *routesParser) list() (*structpb.ListValue, bool) {
	if !p.consume('[') {
		return nil, false
	}
	if p.depth++; p.depth > maxRoutesDepth {
		return nil, false
	}
	defer func() { p.depth-- }()
	list := &structpb.ListValue{}
	if p.consume(']') {
		return list, true
	}
	for {
		value, ok := p.value()
		if !ok {
			return nil, false
		}
		list.Values = append(list.Values, value)
		if p.consume(']') {
			return list, true
		}
		if !p.consume(',') {
			return nil, false
		}
	}
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
