package models

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// CheckWireRanges refuses a protobuf encoding of a message described by md
// in which a varint does not fit its field: protobuf-go decodes a 64-bit
// varint into an int32, uint32, sint32 or enum field by keeping its low 32
// bits, so a client's instances of 2^32+2 would arrive as 2 and a port of
// 2^32+8080 as 8080, where JSON refuses both; likewise a bool that is
// neither 0 nor 1. It walks the raw bytes against the descriptor: nested
// messages, repeated fields (packed or not), map entries and oneof members
// alike. Fields md does not know are skipped (the decoder keeps them and
// UnknownFields reports them), except in a map entry, whose unknown
// fields the decoder drops. A field md declares, sent in a wire type the
// decoder does not take for it (which it would keep as unknown, or drop
// in a map entry), is refused naming the field ("invalid value for int32
// field desired_lrp.instances: wire type bytes").
//
// It also says whether every field it walked is one md (or the message
// holding it) declares: protobuf-go keeps a field as unknown only when it
// is not (or is in a wire type refused here), so for such an encoding the
// decoded message holds no unknown field, and the board skips its walk of
// the decoded message for them (UnknownFields, some ten times the cost;
// 6% of the board's CPU with a million instances bulk-reporting).
//
// The error names the field's path in the words UnmarshalJSON uses for
// the same value sent in JSON (fieldPlace, invalidValue: "invalid value
// for int32 field desired_lrp.instances: 4294967298"; a list element is numbered within the occurrence of its
// message in the bytes, as a message sent in two parts is merged by the
// decoder). Bytes that are not a valid encoding are refused too; the board
// runs proto.Unmarshal first, so that only a range is reported here.
func CheckWireRanges(b []byte, md protoreflect.MessageDescriptor) (declaredOnly bool, err error) {
	return checkWireRanges(b, md, nil, 0)
}

// maxWireDepth matches protobuf-go's default recursion limit: an encoding
// nested deeper does not decode anyway.
const maxWireDepth = 10000

var errWireDepth = errors.New("exceeded maximum recursion depth")

func checkWireRanges(b []byte, md protoreflect.MessageDescriptor, at *fieldPlace, depth int) (declaredOnly bool, err error) {
	return wireWalk{}.message(b, md, at, depth)
}

// ExplainWire says where in an encoding of a message described by md the
// protobuf decoder's refusal lies, for the error that names no field
// ("string field contains invalid UTF-8", "cannot parse invalid
// wire-format data"): CheckWireRanges' refusals, and besides them a
// string that is not UTF-8 ("desired_lrp.process_guid: string field
// contains invalid UTF-8") or a field whose bytes end early
// ("desired_lrp.definition: unexpected EOF"). Nil when it finds nothing:
// the decoder's own error then stands. The board calls it only for bytes
// the decoder refused, so the strings' second check costs nothing on
// bytes that decode.
func ExplainWire(b []byte, md protoreflect.MessageDescriptor) error {
	_, err := wireWalk{explain: true}.message(b, md, nil, 0)
	return err
}

// wireWalk walks an encoding against its descriptor (CheckWireRanges);
// explain adds the checks of ExplainWire, and names the place of a field
// that does not parse.
type wireWalk struct {
	explain bool
}

// parseError is protowire's error for n, named by the place of the field
// being read (or of the message, for a tag) when explaining, without the
// library's "proto:" prefix.
func (w wireWalk) parseError(at *fieldPlace, n int) error {
	err := protowire.ParseError(n)
	if w.explain {
		return errors.New(at.within(strings.TrimLeft(strings.TrimPrefix(err.Error(), "proto:"), " \u00a0")))
	}
	return err
}

func (w wireWalk) message(b []byte, md protoreflect.MessageDescriptor, at *fieldPlace, depth int) (declaredOnly bool, err error) {
	if depth > maxWireDepth {
		return false, errWireDepth
	}
	declaredOnly = true
	fields := md.Fields()
	// counts numbers the elements of each list field as they come; only
	// lists are numbered, so most messages need no map.
	var counts map[protowire.Number]int
	element := func(fd protoreflect.FieldDescriptor) int {
		if !fd.IsList() {
			return -1
		}
		if counts == nil {
			counts = map[protowire.Number]int{}
		}
		n := counts[fd.Number()]
		counts[fd.Number()]++
		return n
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false, w.parseError(at, n)
		}
		b = b[n:]
		fd := fields.ByNumber(num)
		if fd == nil {
			if md.IsMapEntry() {
				// The decoder drops a map entry's unknown fields
				// without a trace (UnknownFields cannot see them).
				return false, errors.New(at.within(fmt.Sprintf("unknown field number %d", num)))
			}
			declaredOnly = false
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return false, w.parseError(at, n)
			}
			b = b[n:]
			continue
		}
		index := element(fd)
		if !takesWireType(fd, typ) {
			// The decoder keeps it as an unknown field (one in a map
			// entry it drops), which would name the message holding it.
			return false, invalidValue(&fieldPlace{up: at, fd: fd, index: index}, "wire type "+wireTypeName(typ))
		}
		switch {
		case typ == protowire.VarintType && narrowKind(fd.Kind()):
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return false, w.parseError(&fieldPlace{up: at, fd: fd, index: index}, n)
			}
			b = b[n:]
			if err := checkVarint(fd, &fieldPlace{up: at, fd: fd, index: index}, v); err != nil {
				return false, err
			}
		case typ == protowire.BytesType && fd.IsList() && narrowKind(fd.Kind()):
			packed, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return false, w.parseError(&fieldPlace{up: at, fd: fd, index: index}, n)
			}
			b = b[n:]
			for first := true; len(packed) > 0; first = false {
				if !first {
					index = element(fd)
				}
				v, n := protowire.ConsumeVarint(packed)
				if n < 0 {
					return false, w.parseError(&fieldPlace{up: at, fd: fd, index: index}, n)
				}
				packed = packed[n:]
				if err := checkVarint(fd, &fieldPlace{up: at, fd: fd, index: index}, v); err != nil {
					return false, err
				}
			}
		case typ == protowire.BytesType && fd.Message() != nil:
			inner, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return false, w.parseError(&fieldPlace{up: at, fd: fd, index: index}, n)
			}
			b = b[n:]
			place := &fieldPlace{up: at, fd: fd, index: index}
			if fd.IsMap() {
				place.entry = inner
			}
			innerDeclared, err := w.message(inner, fd.Message(), place, depth+1)
			if err != nil {
				return false, err
			}
			declaredOnly = declaredOnly && innerDeclared
		case w.explain && typ == protowire.BytesType && fd.Kind() == protoreflect.StringKind:
			value, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return false, w.parseError(&fieldPlace{up: at, fd: fd, index: index}, n)
			}
			b = b[n:]
			if !utf8.Valid(value) {
				return false, errors.New((&fieldPlace{up: at, fd: fd, index: index}).within("string field contains invalid UTF-8"))
			}
		default:
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return false, w.parseError(&fieldPlace{up: at, fd: fd, index: index}, n)
			}
			b = b[n:]
		}
	}
	return declaredOnly, nil
}

// wireTypeName names a wire type as a refusal shows it.
func wireTypeName(typ protowire.Type) string {
	switch typ {
	case protowire.VarintType:
		return "varint"
	case protowire.Fixed32Type:
		return "fixed32"
	case protowire.Fixed64Type:
		return "fixed64"
	case protowire.BytesType:
		return "bytes"
	case protowire.StartGroupType, protowire.EndGroupType:
		return "group"
	}
	return strconv.Itoa(int(typ))
}

// narrowKind is a kind whose values are narrower than the varint they
// travel as: 32 bits, or a bool's 0 and 1 (the decoder takes any other
// number for true, where JSON refuses a number).
func narrowKind(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Uint32Kind, protoreflect.Sint32Kind, protoreflect.EnumKind, protoreflect.BoolKind:
		return true
	}
	return false
}

// takesWireType says whether the decoder reads a value of wire type typ
// into fd rather than keeping it as an unknown field: a list of numbers
// takes its packed form too. A group's wire type is never taken here.
func takesWireType(fd protoreflect.FieldDescriptor, typ protowire.Type) bool {
	var want protowire.Type
	switch fd.Kind() {
	case protoreflect.BoolKind, protoreflect.EnumKind,
		protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Uint32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Uint64Kind:
		want = protowire.VarintType
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		want = protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		want = protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind:
		return typ == protowire.BytesType
	default:
		return false
	}
	return typ == want || fd.IsList() && typ == protowire.BytesType
}

// checkVarint refuses v when it does not fit fd's kind: an int32 or enum
// is a sign-extended 32-bit value (a negative one takes ten bytes); a
// uint32 or sint32 (zigzag) fits in 32 bits unsigned. The error names at.
func checkVarint(fd protoreflect.FieldDescriptor, at *fieldPlace, v uint64) error {
	var ok bool
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.EnumKind:
		ok = int64(v) >= math.MinInt32 && int64(v) <= math.MaxInt32
	case protoreflect.BoolKind:
		ok = v <= 1
	default:
		ok = v <= math.MaxUint32
	}
	if ok {
		return nil
	}
	shown := strconv.FormatUint(v, 10)
	if fd.Kind() == protoreflect.Int32Kind || fd.Kind() == protoreflect.EnumKind {
		shown = strconv.FormatInt(int64(v), 10)
	}
	return invalidValue(at, shown)
}
