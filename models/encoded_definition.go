package models

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// A DesiredLRP read for a protobuf answer can carry its definition still
// encoded: the LRPDefinition's protobuf bytes as the message's unknown
// bytes, tagged as its definition field, rather than a decoded
// LRPDefinition. proto.Marshal writes unknown bytes as they are, so the
// answer is the message a decoded definition would give, the definition
// field last (protobuf lets fields come in any order), and the board
// does not decode each definition of a list only to encode it again: that
// was about a quarter of its CPU for a whole list of desired LRPs.
//
// Worked example: a definition whose protobuf is the 4 bytes 0a 02 69 64
// (definition_id "id") becomes the unknown bytes 5a 04 0a 02 69 64 (field
// 11, bytes, length 4); proto.Marshal of {process_guid "web"} with them
// is 0a 03 77 65 62 5a 04 0a 02 69 64, which decodes to {process_guid
// "web", definition {definition_id "id"}}.
//
// JSON has no place for such bytes (protojson leaves unknown fields out),
// so whoever encodes an LRP in another form first calls
// DecodeEncodedDefinition.

// desiredLRPDefinitionField is the number of DesiredLRP's definition field
// in desired_lrp.proto.
const desiredLRPDefinitionField protowire.Number = 11

var errEncodedDefinitionHolds = errors.New("definition: the LRP holds a decoded definition already")

// SetEncodedDefinition makes encoded, an LRPDefinition's protobuf, lrp's
// definition, kept encoded. It checks that encoded is a sequence of
// well-formed fields (not each field's content, which the reader's
// decoder checks); lrp must hold no decoded definition.
func (lrp *DesiredLRP) SetEncodedDefinition(encoded []byte) error {
	if lrp.Definition != nil {
		return errEncodedDefinitionHolds
	}
	for rest := encoded; len(rest) > 0; {
		_, _, n := protowire.ConsumeField(rest)
		if n < 0 {
			return errors.New("definition: " + protowire.ParseError(n).Error())
		}
		rest = rest[n:]
	}
	field := make([]byte, 0, len(encoded)+1+protowire.SizeVarint(uint64(len(encoded))))
	field = protowire.AppendTag(field, desiredLRPDefinitionField, protowire.BytesType)
	lrp.ProtoReflect().SetUnknown(protowire.AppendBytes(field, encoded))
	return nil
}

// DecodeEncodedDefinition decodes the definition SetEncodedDefinition
// left encoded into lrp.Definition; for an LRP without one it does
// nothing. Its error says the bytes are not an LRPDefinition.
func (lrp *DesiredLRP) DecodeEncodedDefinition() error {
	unknown := lrp.ProtoReflect().GetUnknown()
	if len(unknown) == 0 {
		return nil
	}
	lrp.ProtoReflect().SetUnknown(nil)
	return proto.UnmarshalOptions{Merge: true}.Unmarshal(unknown, lrp)
}
