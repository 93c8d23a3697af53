package models

import (
	"crypto/sha256"
	"encoding/hex"

	"google.golang.org/protobuf/proto"
)

// DefinitionContentHash identifies what a definition runs: the hex SHA-256
// of its deterministic protobuf encoding, with definition_id and
// created_at cleared so that the same content hashes the same whatever it
// is called and whenever it was stored. The board compares hashes to tell
// a repeated update (same identifier, same content) from a conflicting one.
//
// def must be encodable, which every definition decoded from a request and
// every one that passes Validate is; anything else is a programming error
// and panics. A nil definition hashes like an empty one.
func DefinitionContentHash(def *LRPDefinition) string {
	content := &LRPDefinition{}
	if def != nil {
		content = proto.CloneOf(def)
	}
	content.DefinitionId = ""
	content.CreatedAt = 0
	encoded, err := proto.MarshalOptions{Deterministic: true}.Marshal(content)
	if err != nil {
		panic("models: definition cannot be hashed: " + err.Error())
	}
	sum := sha256.Sum256(encoded)
	return hex.EncodeToString(sum[:])
}

// GenerateDefinitionID names a definition the client did not name: "d-"
// and the first 16 hex digits of its content hash, so the same content
// sent twice gets the same id.
func GenerateDefinitionID(def *LRPDefinition) string {
	return "d-" + DefinitionContentHash(def)[:16]
}

// EffectiveDefinitionID is the id a new definition is stored under: the
// update identifier when the client sent one, else the definition's own
// definition_id, else one generated from its content.
func EffectiveDefinitionID(def *LRPDefinition, updateIdentifier string) string {
	if updateIdentifier != "" {
		return updateIdentifier
	}
	if id := def.GetDefinitionId(); id != "" {
		return id
	}
	return GenerateDefinitionID(def)
}
