package models

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// fieldPlace is where a value sits in a decoded request: its field, its
// number in the field's list (-1 for a field that is not a list), its key
// in the field's map, and the place of the message holding it (nil at the
// top). The three decoders' walks (CheckWireRanges, UnknownFields and
// UnmarshalJSON's explanation) name a refused value by it, so a field is
// named the same whichever encoding sent it. It is named (String) only
// when an error names it: a request without a fault builds no path.
//
// A map value's key is either the entry's bytes, read only when named
// (the wire walk), or the key itself (the decoded message's, the JSON's).
type fieldPlace struct {
	up    *fieldPlace
	fd    protoreflect.FieldDescriptor
	index int
	entry []byte
	key   *protoreflect.MapKey
}

// String names the place: "definition.ports[2]" for the third element of
// a list, `routes.fields["http"]` for a map value (a string key quoted, a
// number as it is), the field's name otherwise, under its parents'.
func (p *fieldPlace) String() string {
	if p == nil {
		return ""
	}
	name := string(p.fd.Name())
	if path := p.up.String(); path != "" {
		name = path + "." + name
	}
	switch {
	case p.entry != nil:
		return name + "[" + entryKey(p.entry) + "]"
	case p.key != nil:
		return name + "[" + mapKeyName(*p.key) + "]"
	case p.index >= 0:
		return fmt.Sprintf("%s[%d]", name, p.index)
	}
	return name
}

// within prefixes what is said about the message at p with its path ("at
// the top" has none): "desired_lrp: unknown field number 77".
func (p *fieldPlace) within(what string) string {
	if path := shortPath(p.String()); path != "" {
		return path + ": " + what
	}
	return what
}

// invalidValue is the one wording of a value out of its field's range or
// of the wrong kind, whichever decoder refused it: "invalid value for
// int32 field desired_lrp.instances: 4294967298".
func invalidValue(at *fieldPlace, shown string) error {
	kind := at.fd.Kind().String()
	if at.fd.Kind() == protoreflect.EnumKind {
		kind = "enum " + string(at.fd.Enum().FullName())
	}
	return fmt.Errorf("invalid value for %s field %s: %s", kind, shortPath(at.String()), shown)
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

func mapKeyName(k protoreflect.MapKey) string {
	if s, ok := k.Interface().(string); ok {
		return quoteShort(s)
	}
	return k.String()
}

// entryKey reads a map entry's key from its bytes ("?" when it cannot be
// read; the walk of the entry then reports why).
func entryKey(entry []byte) string {
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
	return key
}

// UnknownFields refuses a decoded message holding a field this board does
// not know, anywhere within it, naming the message that holds it:
// "desired_lrp.definition.action: unknown field number 77". Silently
// dropping a field a newer client relies on would apply a different
// request than the one sent; the JSON decoder refuses them too.
func UnknownFields(m protoreflect.Message) error {
	return unknownFields(m, nil)
}

func unknownFields(m protoreflect.Message, at *fieldPlace) error {
	if unknown := m.GetUnknown(); len(unknown) > 0 {
		number, _, _ := protowire.ConsumeTag(unknown)
		return fmt.Errorf("%s", at.within(fmt.Sprintf("unknown field number %d", number)))
	}
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			list := v.List()
			for i := 0; i < list.Len() && err == nil; i++ {
				err = unknownFields(list.Get(i).Message(), &fieldPlace{up: at, fd: fd, index: i})
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				err = unknownFields(mv.Message(), &fieldPlace{up: at, fd: fd, index: -1, key: &k})
				return err == nil
			})
		case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
			err = unknownFields(v.Message(), &fieldPlace{up: at, fd: fd, index: -1})
		}
		return err == nil
	})
	return err
}
