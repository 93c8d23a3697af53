package models

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// CheckWireRanges refuses a protobuf encoding of a message described by md
// in which a varint does not fit its field: protobuf-go decodes a 64-bit
// varint into an int32, uint32, sint32 or enum field by keeping its low 32
// bits, so a client's instances of 2^32+2 would arrive as 2 and a port of
// 2^32+8080 as 8080, where JSON refuses both. It walks the raw bytes
// against the descriptor: nested messages, repeated fields (packed or
// not), map entries and oneof members alike; fields md does not know are
// skipped (the decoder reports them).
//
// The error names the field's path as the JSON decoder names a field it
// refuses ("invalid value for int32 field desired_lrp.instances:
// 4294967298"; a list element is numbered within the occurrence of its
// message in the bytes, as a message sent in two parts is merged by the
// decoder). Bytes that are not a valid encoding are refused too; the board
// runs proto.Unmarshal first, so that only a range is reported here.
func CheckWireRanges(b []byte, md protoreflect.MessageDescriptor) error {
	return checkWireRanges(b, md, "", 0)
}

// maxWireDepth matches protobuf-go's default recursion limit: an encoding
// nested deeper does not decode anyway.
const maxWireDepth = 10000

var errWireDepth = errors.New("exceeded maximum recursion depth")

func checkWireRanges(b []byte, md protoreflect.MessageDescriptor, path string, depth int) error {
	if depth > maxWireDepth {
		return errWireDepth
	}
	fields := md.Fields()
	counts := map[protowire.Number]int{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		fd := fields.ByNumber(num)
		if fd == nil {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		name := wirePath(path, fd, counts)
		switch {
		case typ == protowire.VarintType && narrowKind(fd.Kind()):
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			counts[num]++
			if err := checkVarint(fd, name, v); err != nil {
				return err
			}
		case typ == protowire.BytesType && fd.IsList() && narrowKind(fd.Kind()):
			packed, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			for len(packed) > 0 {
				v, n := protowire.ConsumeVarint(packed)
				if n < 0 {
					return protowire.ParseError(n)
				}
				packed = packed[n:]
				if err := checkVarint(fd, wirePath(path, fd, counts), v); err != nil {
					return err
				}
				counts[num]++
			}
		case typ == protowire.BytesType && fd.Message() != nil:
			inner, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			counts[num]++
			if fd.IsMap() {
				name = mapEntryPath(path, fd, inner)
			}
			if err := checkWireRanges(inner, fd.Message(), name, depth+1); err != nil {
				return err
			}
		default:
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			counts[num]++
		}
	}
	return nil
}

// narrowKind is a kind whose values are 32 bits but travel as varints.
func narrowKind(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Uint32Kind, protoreflect.Sint32Kind, protoreflect.EnumKind:
		return true
	}
	return false
}

// checkVarint refuses v when it does not fit fd's kind: an int32 or enum
// is a sign-extended 32-bit value (a negative one takes ten bytes); a
// uint32 or sint32 (zigzag) fits in 32 bits unsigned.
func checkVarint(fd protoreflect.FieldDescriptor, path string, v uint64) error {
	var ok bool
	var shown string
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.EnumKind:
		ok = int64(v) >= math.MinInt32 && int64(v) <= math.MaxInt32
		shown = strconv.FormatInt(int64(v), 10)
	default:
		ok = v <= math.MaxUint32
		shown = strconv.FormatUint(v, 10)
	}
	if ok {
		return nil
	}
	kind := fd.Kind().String()
	if fd.Kind() == protoreflect.EnumKind {
		kind = "enum " + string(fd.Enum().FullName())
	}
	return fmt.Errorf("invalid value for %s field %s: %s", kind, shortPath(path), shown)
}

// maxPathBytes bounds the path an error names: a message nested a
// thousand deep (Struct values may be) is named by its two ends.
const maxPathBytes = 256

func shortPath(path string) string {
	if len(path) <= maxPathBytes {
		return path
	}
	head, tail := maxPathBytes/2, len(path)-maxPathBytes/2
	for head > 0 && !utf8.RuneStart(path[head]) {
		head--
	}
	for tail < len(path) && !utf8.RuneStart(path[tail]) {
		tail++
	}
	return path[:head] + "..." + path[tail:]
}

// wirePath names the next value of fd under path: "ports[2]" for the
// third element of a list, the field's name otherwise.
func wirePath(path string, fd protoreflect.FieldDescriptor, counts map[protowire.Number]int) string {
	name := string(fd.Name())
	if path != "" {
		name = path + "." + name
	}
	if fd.IsList() {
		name = fmt.Sprintf("%s[%d]", name, counts[fd.Number()])
	}
	return name
}

// mapEntryPath names a map entry under path by its key as the entry's
// bytes hold it: "routes.fields["http"]" ("[?]" when the key cannot be
// read; the walk of the entry then reports why).
func mapEntryPath(path string, fd protoreflect.FieldDescriptor, entry []byte) string {
	key := "?"
	for len(entry) > 0 {
		num, typ, n := protowire.ConsumeTag(entry)
		if n < 0 {
			break
		}
		entry = entry[n:]
		if num == 1 {
			switch typ {
			case protowire.BytesType:
				if s, m := protowire.ConsumeBytes(entry); m >= 0 {
					key = quoteShort(string(s))
				}
			case protowire.VarintType:
				if v, m := protowire.ConsumeVarint(entry); m >= 0 {
					key = strconv.FormatUint(v, 10)
				}
			}
		}
		if n = protowire.ConsumeFieldValue(num, typ, entry); n < 0 {
			break
		}
		entry = entry[n:]
	}
	name := string(fd.Name())
	if path != "" {
		name = path + "." + name
	}
	return name + "[" + key + "]"
}
