package models

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// A message read for a protobuf answer can carry a message field still
// encoded: the field's protobuf bytes, tagged with its number, as the
// message's unknown bytes, rather than a decoded message. proto.Marshal
// writes unknown bytes as they are, so the answer is the message a
// decoded field would give, the field last (protobuf lets fields come in
// any order), and the board does not build a field only to encode it
// again. A list of desired LRPs keeps each stored definition so (decoding
// and encoding them again was about a quarter of the board's CPU for a
// whole list), and desired LRPs and scheduling infos keep their routes
// so, written straight from their stored JSON (the routes' Struct maps
// were a third of the board's CPU for a list of scheduling infos).
//
// Worked example: a definition whose protobuf is the 4 bytes 0a 02 69 64
// (definition_id "id"), kept encoded as a DesiredLRP's field 11, is the
// unknown bytes 5a 04 0a 02 69 64 (field 11, bytes, length 4);
// proto.Marshal of {process_guid "web"} with them is 0a 03 77 65 62 5a 04
// 0a 02 69 64, which decodes to {process_guid "web", definition
// {definition_id "id"}}.
//
// JSON has no place for such bytes (protojson leaves unknown fields out),
// so whoever encodes such a message in another form first calls
// DecodeEncodedFields.

// Numbers of the fields kept encoded, as in desired_lrp.proto.
const (
	DesiredLRPDefinitionField protowire.Number = 11
	// DesiredLRPRoutesField is the routes of DesiredLRP and of
	// DesiredLRPSchedulingInfo alike.
	DesiredLRPRoutesField protowire.Number = 5
)

// KeepEncoded makes encoded, the protobuf of a message, msg's field
// number, kept encoded. It checks that encoded is a sequence of
// well-formed fields (not each field's content, which the reader's
// decoder checks); msg must not hold that field decoded, nor encoded
// already. The error names the field.
func KeepEncoded(msg proto.Message, number protowire.Number, encoded []byte) error {
	m := msg.ProtoReflect()
	fd := m.Descriptor().Fields().ByNumber(number)
	if fd == nil || fd.Message() == nil || fd.IsList() || fd.IsMap() {
		return fmt.Errorf("%s has no message field %d", m.Descriptor().FullName(), number)
	}
	if _, held := walkFields(m.GetUnknown(), number); m.Has(fd) || held {
		return fmt.Errorf("%s: %s holds it already", fd.Name(), m.Descriptor().Name())
	}
	if framed, _ := walkFields(encoded, 0); !framed {
		return fmt.Errorf("%s: not a protobuf encoding", fd.Name())
	}
	unknown := append([]byte(nil), m.GetUnknown()...)
	unknown = protowire.AppendTag(unknown, number, protowire.BytesType)
	m.SetUnknown(protowire.AppendBytes(unknown, encoded))
	return nil
}

// DecodeEncodedFields decodes the fields KeepEncoded left encoded in msg
// into msg; for a message without any it does nothing. Its error says
// the bytes are not the field's message.
func DecodeEncodedFields(msg proto.Message) error {
	m := msg.ProtoReflect()
	unknown := m.GetUnknown()
	if len(unknown) == 0 {
		return nil
	}
	m.SetUnknown(nil)
	return proto.UnmarshalOptions{Merge: true}.Unmarshal(unknown, msg)
}

// walkFields says whether b is a sequence of complete fields, and whether
// one of them, before any that is not complete, is field number.
func walkFields(b []byte, number protowire.Number) (framed, holds bool) {
	for len(b) > 0 {
		num, _, n := protowire.ConsumeField(b)
		if n < 0 {
			return false, holds
		}
		holds = holds || num == number
		b = b[n:]
	}
	return true, holds
}
