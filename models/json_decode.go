package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// JSONError is why a JSON document did not decode, saying where in the
// message the fault sits as the protobuf decoder's walks say it (see
// fieldPlace), so that a field is named alike on both encodings:
//
//	invalid value for int32 field desired_lrp.instances: 4294967298
//	desired_lrp.definition: unknown field "colour"
//	desired_lrp.definition.ports: syntax error: unexpected token 8080 (line 1:42)
//
// protojson alone says only where in the text ("(line 1:45): unknown field
// "colour"") and a field by its last name ("field instances").
type JSONError struct {
	// Line and Column place the fault in the text (the column counts
	// characters from 1); both 0 when the decoder gave no place.
	Line, Column int
	// Path is where in the message: the refused value's field (with its
	// list index or map key), or the message holding a refused name or
	// the text that did not read; "" at the top.
	Path string
	// Syntax is true for text that is not JSON, or JSON of a shape the
	// message does not take, rather than a value or a name it refuses.
	Syntax bool
	// Text says what is wrong and where in the message, without the place
	// in the text.
	Text string
}

// Error is Text, with the place in the text for a syntax error (which
// names no field, only the message it was read into).
func (e *JSONError) Error() string {
	if e.Syntax && e.Line > 0 {
		return fmt.Sprintf("%s (line %d:%d)", e.Text, e.Line, e.Column)
	}
	return e.Text
}

// UnmarshalJSON decodes b into msg as protojson does (fields by their
// proto or JSON names, unknown fields refused) and, when it fails, says
// where with a *JSONError.
func UnmarshalJSON(b []byte, msg proto.Message) error {
	err := protojson.Unmarshal(b, msg)
	if err == nil {
		return nil
	}
	return explainJSON(b, msg.ProtoReflect().Descriptor(), err)
}

// protojsonError is protojson's wording: "proto: " (or a no-break space
// after the colon), "syntax error " for text that is not what a message
// takes, the place in the text, then what is wrong.
var protojsonError = regexp.MustCompile(`(?s)^(syntax error )?\(line (\d+):(\d+)\): (.*)$`)

// protojsonInvalidValue is protojson's "invalid value for int32 field
// instances: 4294967298", the field by its JSON name.
var protojsonInvalidValue = regexp.MustCompile(`(?s)^invalid value for \S+ field \S+: (.*)$`)

func explainJSON(b []byte, md protoreflect.MessageDescriptor, err error) *JSONError {
	text := strings.TrimLeft(strings.TrimPrefix(err.Error(), "proto:"), " \u00a0")
	m := protojsonError.FindStringSubmatch(text)
	if m == nil && text == "unexpected EOF" {
		// Text that ends inside a value: placed where it ends.
		line, column := textPlace(b)
		m = []string{text, "syntax error ", strconv.Itoa(line), strconv.Itoa(column), "unexpected end of text"}
	}
	if m == nil {
		return &JSONError{Syntax: true, Text: cutEcho(text)}
	}
	line, _ := strconv.Atoi(m[2])
	column, _ := strconv.Atoi(m[3])
	e := &JSONError{Line: line, Column: column, Syntax: m[1] != ""}
	// protojson echoes what it refuses whole: a name or a value of a
	// megabyte would make an error of a megabyte.
	what := cutEcho(m[4])
	at, onValue := jsonPlaceAt(b, md, textOffset(b, line, column))
	e.Path = shortPath(at.String())
	invalid := protojsonInvalidValue.FindStringSubmatch(what)
	switch {
	case e.Syntax:
		e.Text = at.within("syntax error: " + what)
	case onValue && at != nil && invalid != nil:
		e.Text = invalidValue(at, invalid[1]).Error()
	default:
		// A value a well-known form refuses ("invalid
		// google.protobuf.Duration value") under its field's place; a
		// name ("unknown field", "duplicate field") or a map key under
		// the message's or the map's.
		e.Text = at.within(what)
	}
	return e
}

// maxEchoBytes bounds what an error repeats of the text it refuses.
const maxEchoBytes = 256

func cutEcho(what string) string {
	if len(what) <= maxEchoBytes {
		return what
	}
	return CutText(what, maxEchoBytes) + "..."
}

// textPlace is the line and column (as protojson counts them) of the end
// of b.
func textPlace(b []byte) (line, column int) {
	line = bytes.Count(b, []byte("\n")) + 1
	return line, utf8.RuneCount(b[bytes.LastIndexByte(b, '\n')+1:]) + 1
}

// textOffset is the byte offset of line:column in b, as protojson counts
// them (lines from 1, characters within the line from 1).
func textOffset(b []byte, line, column int) int {
	offset := 0
	for ; line > 1; line-- {
		i := bytes.IndexByte(b[offset:], '\n')
		if i < 0 {
			return len(b)
		}
		offset += i + 1
	}
	for ; column > 1 && offset < len(b); column-- {
		_, size := utf8.DecodeRune(b[offset:])
		offset += size
	}
	return offset
}

// jsonScope is an object or an array being read, and what it is in the
// message: a message's fields, a map's entries, a list's elements, or
// something whose inside names no field (a well-known type's JSON form
// such as routes' Struct, or a value of the wrong shape).
type jsonScope struct {
	at      *fieldPlace                    // the object's or array's place, nil at the top
	message protoreflect.MessageDescriptor // an object of fields
	field   protoreflect.FieldDescriptor   // a map's or a list's field
	array   bool
	wantKey bool // an object's next token is a name
	next    int  // an array's next element
}

// jsonValue is what the next value is: its place, and the message it
// holds (nil for a scalar, a well-known type or an unknown name), or the
// field whose map or list it is.
type jsonValue struct {
	at      *fieldPlace
	message protoreflect.MessageDescriptor
	field   protoreflect.FieldDescriptor // a map or a list
}

// jsonPlaceAt reads b's tokens up to the one at offset and says where in
// md that token is: onValue when it is a value (the place is the value's
// field, or its list element or map value), false when it is a name in an
// object (the place is the object's) or text that does not read (the
// place is what was being read). It follows protojson's reading: a
// message's field by its JSON or its proto name, a map's values, a list's
// elements, and nothing inside a well-known type.
func jsonPlaceAt(b []byte, md protoreflect.MessageDescriptor, offset int) (at *fieldPlace, onValue bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	next := jsonValue{message: md}
	var scopes []*jsonScope
	for {
		var top *jsonScope
		if len(scopes) > 0 {
			top = scopes[len(scopes)-1]
		}
		if top != nil && top.array {
			next = top.element()
		}
		tok, err := dec.Token()
		if err != nil {
			// Text that does not read (a control character in a
			// string, the end of the text): the place of what was
			// expected there, a value or an object's next name.
			if top == nil || top.array || !top.wantKey {
				return next.at, false
			}
			return top.at, false
		}
		_, isString := tok.(string)
		isName := isString && top != nil && !top.array && top.wantKey
		if dec.InputOffset() > int64(offset) {
			switch {
			case isName:
				return top.at, false
			case tok == json.Delim('}') || tok == json.Delim(']'):
				return top.at, false
			}
			return next.at, true
		}
		switch {
		case isName:
			name, _ := tok.(string)
			next = top.value(name)
			top.wantKey = false
			continue
		case tok == json.Delim('{') || tok == json.Delim('['):
			scopes = append(scopes, next.open(tok == json.Delim('[')))
			continue
		case tok == json.Delim('}') || tok == json.Delim(']'):
			scopes = scopes[:len(scopes)-1]
			if len(scopes) == 0 {
				return nil, false
			}
			top = scopes[len(scopes)-1]
		}
		// A value ended: an object's next token is a name, an array's
		// the next element.
		if top != nil {
			if top.array {
				top.next++
			} else {
				top.wantKey = true
			}
		}
	}
}

// open is the scope of an object or array read where v was expected.
func (v jsonValue) open(array bool) *jsonScope {
	s := &jsonScope{at: v.at, array: array, wantKey: !array}
	switch {
	case v.field != nil && v.field.IsMap() && !array,
		v.field != nil && v.field.IsList() && array:
		s.field = v.field
	case v.field == nil && v.message != nil && !array:
		s.message = v.message
	}
	return s
}

// value is the value under name in an object.
func (s *jsonScope) value(name string) jsonValue {
	switch {
	case s.message != nil:
		fields := s.message.Fields()
		fd := fields.ByJSONName(name)
		if fd == nil {
			fd = fields.ByTextName(name)
		}
		if fd == nil {
			return jsonValue{at: s.at}
		}
		at := &fieldPlace{up: s.at, fd: fd, index: -1}
		if fd.IsMap() || fd.IsList() {
			return jsonValue{at: at, field: fd}
		}
		return jsonValue{at: at, message: plainMessage(fd)}
	case s.field != nil:
		key := protoreflect.ValueOfString(name).MapKey()
		return jsonValue{
			at:      &fieldPlace{up: s.at.up, fd: s.field, index: -1, key: &key},
			message: plainMessage(s.field.MapValue()),
		}
	}
	return jsonValue{at: s.at}
}

// element is an array's next element.
func (s *jsonScope) element() jsonValue {
	if s.field == nil {
		return jsonValue{at: s.at}
	}
	return jsonValue{
		at:      &fieldPlace{up: s.at.up, fd: s.field, index: s.next},
		message: plainMessage(s.field),
	}
}

// plainMessage is fd's message when its JSON form is an object of its
// fields; nil for a scalar and for a well-known type, whose JSON form is
// its own (a Struct's is any object, a Duration's a string).
func plainMessage(fd protoreflect.FieldDescriptor) protoreflect.MessageDescriptor {
	md := fd.Message()
	if md == nil || strings.HasPrefix(string(md.FullName()), "google.protobuf.") {
		return nil
	}
	return md
}
