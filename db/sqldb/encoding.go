package sqldb

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/models"
)

// deterministic keeps stored blobs byte-for-byte stable for equal messages.
var deterministic = proto.MarshalOptions{Deterministic: true}

func encodePlacementTags(tags []string) (string, error) {
	if len(tags) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(tags)
	return string(b), err
}

func decodePlacementTags(text string) ([]string, error) {
	if text == "" || text == "[]" {
		return nil, nil
	}
	var tags []string
	err := json.Unmarshal([]byte(text), &tags)
	return tags, err
}

// encodeRoutes stores routes as protojson; "" means unset.
func encodeRoutes(routes *structpb.Struct) (string, error) {
	if routes == nil {
		return "", nil
	}
	b, err := protojson.Marshal(routes)
	return string(b), err
}

func decodeRoutes(text string) (*structpb.Struct, error) {
	if text == "" {
		return nil, nil
	}
	if routes, ok := parseRoutes(text); ok {
		return routes, nil
	}
	routes := &structpb.Struct{}
	if err := protojson.Unmarshal([]byte(text), routes); err != nil {
		return nil, err
	}
	return routes, nil
}

// readRoutes reads stored routes (text) into msg's routes field: decoded
// into routes, or kept encoded (models.KeepEncoded) when encoded is set.
func readRoutes(msg proto.Message, routes **structpb.Struct, text string, encoded bool) error {
	if !encoded || text == "" {
		var err error
		*routes, err = decodeRoutes(text)
		return err
	}
	b, ok := routesProtobuf(text)
	if !ok {
		decoded, err := decodeRoutes(text)
		if err != nil {
			return err
		}
		if b, err = proto.Marshal(decoded); err != nil {
			return err
		}
	}
	return models.KeepEncoded(msg, models.DesiredLRPRoutesField, b)
}

// encodeMessage returns nil (NULL) for a nil message and non-nil bytes
// otherwise, so an empty message is told apart from an unset one.
func encodeMessage(m proto.Message, isNil bool) ([]byte, error) {
	if isNil {
		return nil, nil
	}
	b, err := deterministic.Marshal(m)
	if b == nil {
		b = []byte{}
	}
	return b, err
}

func encodeUpdateStrategy(s *models.UpdateStrategy) ([]byte, error) {
	return encodeMessage(s, s == nil)
}

func encodeNetInfo(n *models.NetInfo) ([]byte, error) {
	return encodeMessage(n, n == nil)
}

func decodeUpdateStrategy(b []byte, valid bool) (*models.UpdateStrategy, error) {
	if !valid {
		return nil, nil
	}
	s := &models.UpdateStrategy{}
	return s, proto.Unmarshal(b, s)
}

// encodeAutoscaling stores autoscaling settings (NULL: never set).
func encodeAutoscaling(a *models.Autoscaling) ([]byte, error) {
	return encodeMessage(a, a == nil)
}

// decodeAutoscaling reads stored settings; nil bytes (NULL) are nil.
func decodeAutoscaling(b []byte) (*models.Autoscaling, error) {
	if b == nil {
		return nil, nil
	}
	a := &models.Autoscaling{}
	return a, proto.Unmarshal(b, a)
}

// encodeAutoscalerStatus stores the autoscaler's state (NULL: none).
func encodeAutoscalerStatus(st *models.AutoscalerStatus) ([]byte, error) {
	return encodeMessage(st, st == nil)
}

// decodeAutoscalerStatus reads the stored state; nil bytes (NULL) are nil.
func decodeAutoscalerStatus(b []byte) (*models.AutoscalerStatus, error) {
	if b == nil {
		return nil, nil
	}
	st := &models.AutoscalerStatus{}
	return st, proto.Unmarshal(b, st)
}

// encodeBlockedBy stores what holds a rollout or a validation (NULL: nothing).
func encodeBlockedBy(b *models.BlockedBy) ([]byte, error) {
	return encodeMessage(b, b == nil)
}

// decodeBlockedBy reads a stored blocked_by; nil bytes (NULL) are nil.
func decodeBlockedBy(b []byte) (*models.BlockedBy, error) {
	if b == nil {
		return nil, nil
	}
	blocked := &models.BlockedBy{}
	return blocked, proto.Unmarshal(b, blocked)
}

// decodeDefinition decodes a plain definition blob. Stored blobs are read
// through decodeStoredDefinition, which opens an envelope first.
func decodeDefinition(b []byte) (*models.LRPDefinition, error) {
	def := &models.LRPDefinition{}
	return def, proto.Unmarshal(b, def)
}

// encodeDefinition is what run_infos.definition stores for def, the
// definition def.DefinitionId of processGuid: its protobuf, packed when
// that is shorter (compress.go), sealed under the active key when
// encryption is configured (encryption.go). Every write of the column
// goes through it.
func (s *SQLDB) encodeDefinition(processGuid string, def *models.LRPDefinition) ([]byte, error) {
	blob, err := deterministic.Marshal(def)
	if err != nil {
		return nil, errInvalid("definition", err.Error())
	}
	return s.keys.sealBlob(runInfoRow(processGuid, def.DefinitionId), pack(blob))
}

// decodeStoredDefinition reads back a run_infos.definition blob, plain or
// sealed, packed or not, of the row (processGuid, definitionID). Every
// read of the column goes through it or attachStoredDefinition, both
// through openStoredDefinition. Its errors are InvalidRecord and
// name the row: a blob sealed under a key not configured, one altered or
// copied from another row, or one that is not a definition.
func (s *SQLDB) decodeStoredDefinition(processGuid, definitionID string, blob []byte) (*models.LRPDefinition, error) {
	plain, err := s.openStoredDefinition(processGuid, definitionID, blob)
	if err != nil {
		return nil, err
	}
	def, err := decodeDefinition(plain)
	if err != nil {
		return nil, errInvalidRecord("definition %q of desired_lrp %q: %v", definitionID, processGuid, err)
	}
	return def, nil
}

// attachStoredDefinition is decodeStoredDefinition for lrp's active
// definition, left encoded in lrp (models.KeepEncoded):
// opened and expanded, its fields' framing checked, not decoded.
func (s *SQLDB) attachStoredDefinition(lrp *models.DesiredLRP, blob []byte) error {
	plain, err := s.openStoredDefinition(lrp.ProcessGuid, lrp.ActiveDefinitionId, blob)
	if err != nil {
		return err
	}
	if err := models.KeepEncoded(lrp, models.DesiredLRPDefinitionField, plain); err != nil {
		return errInvalidRecord("definition %q of desired_lrp %q: %v", lrp.ActiveDefinitionId, lrp.ProcessGuid, err)
	}
	return nil
}

// openStoredDefinition is a stored blob's definition protobuf: the blob
// opened when sealed and expanded when packed (decodeStoredDefinition).
func (s *SQLDB) openStoredDefinition(processGuid, definitionID string, blob []byte) ([]byte, error) {
	plain, err := s.keys.openBlob(runInfoRow(processGuid, definitionID), blob)
	if err != nil {
		return nil, errInvalidRecord("%v", err)
	}
	if plain, err = unpack(plain); err != nil {
		return nil, errInvalidRecord("definition %q of desired_lrp %q: %v", definitionID, processGuid, err)
	}
	return plain, nil
}

// encodeParameters is what operations.parameters stores for the
// operation id's parameters: NULL for none, else their protobuf, packed
// when that is shorter (compress.go), sealed under the active key when
// encryption is configured. Every write of the column goes through it.
func (s *SQLDB) encodeParameters(id string, parameters *anypb.Any) ([]byte, error) {
	if parameters == nil {
		return nil, nil
	}
	blob, err := deterministic.Marshal(parameters)
	if err != nil {
		return nil, err
	}
	if blob == nil {
		blob = []byte{}
	}
	return s.keys.sealBlob(operationRow(id), pack(blob))
}

// decodeParameters reads back an operations.parameters blob of operation
// id (plain or sealed, packed or not); nil (NULL) is no parameters. Every
// read of the column goes through it. The Any is decoded as an envelope
// only (a type URL and bytes): the request inside stays encoded until
// someone unpacks it.
func (s *SQLDB) decodeParameters(id string, blob []byte) (*anypb.Any, error) {
	if blob == nil {
		return nil, nil
	}
	plain, err := s.keys.openBlob(operationRow(id), blob)
	if err != nil {
		return nil, errInvalidRecord("%v", err)
	}
	if plain, err = unpack(plain); err != nil {
		return nil, errInvalidRecord("operation %q: parameters: %v", id, err)
	}
	parameters := &anypb.Any{}
	if err := proto.Unmarshal(plain, parameters); err != nil {
		return nil, errInvalidRecord("operation %q: parameters: %v", id, err)
	}
	return parameters, nil
}

// epochBytes is how many random bytes a modification tag epoch holds.
const epochBytes = 12

// newEpoch is a new modification tag epoch: 12 random bytes as 16
// characters of unpadded base64url (RFC 4648 §5), such as
// "q3Zr0_Jx-8WbT1aE".
//
// Why not a UUID, as Diego's BBS makes: an epoch only tells one
// incarnation of a record from the others of the same key, so 96 random
// bits are plenty (two epochs of one key are equal with probability
// 2^-96), and every event about an LRP carries its record's epoch, where
// the random characters do not pack. In bbs-load peer (issue 28) the 36
// characters of a UUID cost the event log 212 more bytes per LRP than
// these 16. An epoch is opaque to everyone: rows written by an older
// board keep their UUIDs, and both read and compare the same.
func newEpoch() string {
	var b [epochBytes]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// encodeDisruptionBudget stores a disruption budget as its max_unavailable
// ("": unset, the update strategy's), in desired_lrps.disruption_budget,
// and its group ("": none), in desired_lrps.budget_group.
func encodeDisruptionBudget(b *models.DisruptionBudget) (maxUnavailable, group string) {
	return b.GetMaxUnavailable(), b.GetGroup()
}

// decodeDisruptionBudget reads a stored disruption budget; both "" is nil.
func decodeDisruptionBudget(maxUnavailable, group string) *models.DisruptionBudget {
	if maxUnavailable == "" && group == "" {
		return nil
	}
	return &models.DisruptionBudget{MaxUnavailable: maxUnavailable, Group: group}
}
