package models_test

import (
	"fmt"
	"math"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/corkboard/corkboard/models"
)

// narrowField is a 32-bit varint field reachable from a validated message:
// the fields on the way (messages, lists of them, maps) and the field.
type narrowField struct {
	path  []protoreflect.FieldDescriptor
	field protoreflect.FieldDescriptor
}

func isNarrow(fd protoreflect.FieldDescriptor) bool {
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Uint32Kind, protoreflect.Sint32Kind, protoreflect.EnumKind:
		return true
	}
	return false
}

// narrowFields walks md to every narrow field, through every message field
// (a map's values too), once per message type on a path (Struct's values
// hold lists of values).
func narrowFields(md protoreflect.MessageDescriptor) []narrowField {
	var found []narrowField
	var walk func(md protoreflect.MessageDescriptor, path []protoreflect.FieldDescriptor, seen map[protoreflect.FullName]bool)
	walk = func(md protoreflect.MessageDescriptor, path []protoreflect.FieldDescriptor, seen map[protoreflect.FullName]bool) {
		if seen[md.FullName()] {
			return
		}
		seen[md.FullName()] = true
		defer delete(seen, md.FullName())
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			switch {
			case fd.IsMap():
				if v := fd.MapValue(); v.Message() != nil {
					walk(v.Message(), append(path[:len(path):len(path)], fd), seen)
				} else if isNarrow(v) {
					found = append(found, narrowField{path: append(path[:len(path):len(path)], fd), field: v})
				}
			case fd.Message() != nil:
				walk(fd.Message(), append(path[:len(path):len(path)], fd), seen)
			case isNarrow(fd):
				found = append(found, narrowField{path: path, field: fd})
			}
		}
	}
	walk(md, nil, map[protoreflect.FullName]bool{})
	return found
}

// encode is the encoding of a message holding only f set to v, unpacked or
// packed when f is a list, with one element (or entry, keyed "k" or 7) of
// each list (or map) on the way, and the path the error should name.
func (f narrowField) encode(v uint64, packed bool) ([]byte, string) {
	var b []byte
	name := string(f.field.Name())
	switch {
	case f.field.IsList() && packed:
		b = protowire.AppendBytes(protowire.AppendTag(nil, f.field.Number(), protowire.BytesType), protowire.AppendVarint(nil, v))
		name += "[0]"
	case f.field.IsList():
		b = protowire.AppendVarint(protowire.AppendTag(nil, f.field.Number(), protowire.VarintType), v)
		name += "[0]"
	default:
		b = protowire.AppendVarint(protowire.AppendTag(nil, f.field.Number(), protowire.VarintType), v)
	}
	for i := len(f.path) - 1; i >= 0; i-- {
		fd := f.path[i]
		if fd.IsMap() {
			entry, key := mapKey(fd.MapKey())
			value := f.field
			if i < len(f.path)-1 || value.ContainingMessage() != fd.Message() {
				// A message value: the inner bytes are its encoding.
				entry = protowire.AppendBytes(protowire.AppendTag(entry, 2, protowire.BytesType), b)
				name = fmt.Sprintf("%s[%s].value.%s", fd.Name(), key, name)
			} else {
				// The map's value is the field itself.
				entry = append(entry, b...)
				name = fmt.Sprintf("%s[%s].%s", fd.Name(), key, name)
			}
			b = protowire.AppendBytes(protowire.AppendTag(nil, fd.Number(), protowire.BytesType), entry)
			continue
		}
		b = protowire.AppendBytes(protowire.AppendTag(nil, fd.Number(), protowire.BytesType), b)
		if fd.IsList() {
			name = fmt.Sprintf("%s[0].%s", fd.Name(), name)
		} else {
			name = fmt.Sprintf("%s.%s", fd.Name(), name)
		}
	}
	return b, name
}

func mapKey(key protoreflect.FieldDescriptor) ([]byte, string) {
	if key.Kind() == protoreflect.StringKind {
		return protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "k"), strconv.Quote("k")
	}
	return protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 7), "7"
}

// signExtended is n as a varint carries a negative int32: its 64-bit two's
// complement.
func signExtended(n int64) uint64 {
	return uint64(n)
}

func kindName(fd protoreflect.FieldDescriptor) string {
	if fd.Kind() == protoreflect.EnumKind {
		return "enum " + string(fd.Enum().FullName())
	}
	return fd.Kind().String()
}

var _ = Describe("CheckWireRanges", func() {
	// rangeErr is CheckWireRanges' refusal, if any.
	rangeErr := func(b []byte, md protoreflect.MessageDescriptor) error {
		_, err := models.CheckWireRanges(b, md)
		return err
	}

	// Every validated message, every 32-bit varint field in it however
	// deep: the value protobuf-go would truncate is refused naming the
	// field, and the extremes that fit pass and decode.
	It("refuses every 32-bit varint field's out-of-range values and passes its in-range ones, by construction", func() {
		names := map[string]bool{}
		for _, mt := range validatedTypes() {
			md := mt.Descriptor()
			for _, f := range narrowFields(md) {
				signed := f.field.Kind() == protoreflect.Int32Kind || f.field.Kind() == protoreflect.EnumKind
				out := []uint64{1<<32 + 2, math.MaxUint64 >> 1}
				in := []uint64{0, 2, math.MaxInt32}
				if signed {
					out = append(out, signExtended(math.MinInt32-1))
					in = append(in, signExtended(math.MinInt32), signExtended(-5))
				} else {
					out = append(out, uint64(math.MaxUint32)+1, math.MaxUint64)
					in = append(in, math.MaxUint32)
				}
				for _, packed := range []bool{false, true} {
					if packed && !f.field.IsList() {
						continue
					}
					for _, v := range out {
						b, name := f.encode(v, packed)
						names[string(md.Name())+" "+name] = true
						// The hole: protobuf-go decodes it without a word.
						Expect(proto.Unmarshal(b, mt.New().Interface())).To(Succeed(), "%s %s = %d", md.Name(), name, v)
						shown := strconv.FormatUint(v, 10)
						if signed {
							shown = strconv.FormatInt(int64(v), 10)
						}
						err := rangeErr(b, md)
						Expect(err).To(MatchError(fmt.Sprintf("invalid value for %s field %s: %s", kindName(f.field), name, shown)),
							"%s %s = %d (packed %v)", md.Name(), name, v, packed)
					}
					for _, v := range in {
						b, name := f.encode(v, packed)
						Expect(rangeErr(b, md)).To(Succeed(), "%s %s = %d (packed %v)", md.Name(), name, v, packed)
						Expect(proto.Unmarshal(b, mt.New().Interface())).To(Succeed(), "%s %s = %d", md.Name(), name, v)
					}
				}
			}
		}
		for _, want := range []string{
			"DesireLRPRequest desired_lrp.instances",
			"DesireLRPRequest desired_lrp.definition.ports[0]",
			"DesireLRPRequest desired_lrp.definition.health_check.type",
			`DesireLRPRequest desired_lrp.routes.fields["k"].value.null_value`,
			"UpdateDesiredLRPRequest update.instances",
			"RegisterCellRequest cell.capacity.memory_mb",
		} {
			Expect(names).To(HaveKey(want))
		}
	})

	It("passes every message's own encoding", func() {
		lrp := validDesiredLRP()
		lrp.Instances = math.MaxInt32
		lrp.Definition.MemoryMb = -1
		b, err := proto.Marshal(&models.DesireLRPRequest{DesiredLrp: lrp})
		Expect(err).NotTo(HaveOccurred())
		declared, err := models.CheckWireRanges(b, (&models.DesireLRPRequest{}).ProtoReflect().Descriptor())
		Expect(err).NotTo(HaveOccurred())
		Expect(declared).To(BeTrue())
	})

	It("skips fields it does not know, and refuses bytes that are not an encoding", func() {
		md := (&models.DesireLRPRequest{}).ProtoReflect().Descriptor()
		unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), math.MaxUint64)
		declared, err := models.CheckWireRanges(unknown, md)
		Expect(err).NotTo(HaveOccurred())
		Expect(declared).To(BeFalse(), "an undeclared field")
		Expect(rangeErr([]byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0x01}, md)).To(HaveOccurred())
		Expect(rangeErr([]byte{0x0a, 0x05, 0x18}, md)).To(HaveOccurred())
	})
})

var _ = Describe("refusals of fields the decoder would keep, drop or refuse unnamed", func() {
	desire := (&models.DesireLRPRequest{}).ProtoReflect().Descriptor()
	// inLRP is a DesireLRPRequest whose desired_lrp holds fields.
	inLRP := func(fields []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), fields)
	}
	tag := protowire.AppendTag

	// Worked examples:
	//  1. instances (an int32, field 3) sent as bytes: the decoder would
	//     keep it as an unknown field of desired_lrp; CheckWireRanges
	//     names the field and the wire type.
	//  2. a routes entry (a map entry) holding field 3: the decoder would
	//     drop it and store the rest; CheckWireRanges names the entry.
	//  3. auto_revert (a bool) of 2: the decoder would take it for true,
	//     where JSON refuses 2; CheckWireRanges refuses it as JSON does.
	//  4. an annotation that is not UTF-8: the decoder refuses the whole
	//     request naming no field; ExplainWire names it, as it names a
	//     field whose bytes end early.
	DescribeTable("name the field",
		func(body []byte, explainOnly bool, want string) {
			if explainOnly {
				// The decoder refuses these itself, naming no field.
				Expect(proto.Unmarshal(body, &models.DesireLRPRequest{})).NotTo(Succeed())
			} else {
				Expect(proto.Unmarshal(body, &models.DesireLRPRequest{})).To(Succeed())
				_, err := models.CheckWireRanges(body, desire)
				Expect(err).To(MatchError(want))
			}
			Expect(models.ExplainWire(body, desire)).To(MatchError(want))
		},
		Entry("1. a declared field in a wire type it does not take",
			inLRP(protowire.AppendString(tag(nil, 3, protowire.BytesType), "abc")), false,
			"invalid value for int32 field desired_lrp.instances: wire type bytes"),
		Entry("2. a field a map entry does not declare",
			inLRP(protowire.AppendBytes(tag(nil, 5, protowire.BytesType), protowire.AppendBytes(tag(nil, 1, protowire.BytesType),
				protowire.AppendVarint(tag(protowire.AppendString(tag(nil, 1, protowire.BytesType), "http"), 3, protowire.VarintType), 7)))), false,
			`desired_lrp.routes.fields["http"]: unknown field number 3`),
		Entry("3. a bool that is neither 0 nor 1",
			inLRP(protowire.AppendBytes(tag(nil, 9, protowire.BytesType), protowire.AppendVarint(tag(nil, 5, protowire.VarintType), 2))), false,
			"invalid value for bool field desired_lrp.update_strategy.auto_revert: 2"),
		Entry("4. a string that is not UTF-8",
			inLRP(protowire.AppendBytes(tag(nil, 6, protowire.BytesType), []byte{'a', 0xff})), true,
			"desired_lrp.annotation: string field contains invalid UTF-8"),
		Entry("4. a field whose bytes end early",
			inLRP(protowire.AppendTag(nil, 11, protowire.BytesType)), true,
			"desired_lrp.definition: unexpected EOF"),
		Entry("4. a varint that overflows, without the library's prefix",
			inLRP(append(protowire.AppendTag(nil, 3, protowire.VarintType), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)), true,
			"desired_lrp.instances: variable length integer overflow"),
		Entry("4. the request's own field cut short",
			protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.BytesType), 40), true,
			"desired_lrp: unexpected EOF"),
	)

	It("finds nothing to say of an encoding that decodes", func() {
		body, err := proto.Marshal(&models.DesireLRPRequest{DesiredLrp: validDesiredLRP()})
		Expect(err).NotTo(HaveOccurred())
		Expect(models.ExplainWire(body, desire)).To(Succeed())
	})
})
