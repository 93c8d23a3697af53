package models_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/models"
)

// validated is what the board validates: a message that checks itself.
type validated interface {
	proto.Message
	Validate() error
}

// validatedTypes lists every message of this package that has a Validate
// method (every request, and the messages validated on their own), sorted
// by name so that an index byte picks the same type in every run; a new
// type lands in this list by itself.
func validatedTypes() []protoreflect.MessageType {
	var types []protoreflect.MessageType
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		if mt.Descriptor().ParentFile().Package() != "corkboard.models" {
			return true
		}
		if _, ok := mt.New().Interface().(validated); ok {
			types = append(types, mt)
		}
		return true
	})
	slices.SortFunc(types, func(a, b protoreflect.MessageType) int {
		return strings.Compare(string(a.Descriptor().FullName()), string(b.Descriptor().FullName()))
	})
	return types
}

func typeIndex(types []protoreflect.MessageType, name string) uint8 {
	for i, mt := range types {
		if string(mt.Descriptor().Name()) == name {
			return uint8(i)
		}
	}
	panic("no validated message " + name)
}

// FuzzDecodeValidate decodes bytes as one of the validated messages, in
// protobuf (encoding even) or protojson (odd), and validates what decodes.
// Validate must not panic, must not change the message, must answer the
// same for the same content (twice, and after a protobuf round trip), and
// must refuse with an InvalidRequest whose message is valid, printable
// UTF-8 and starts with the path of a field of the message (or, when one
// of several is required, those fields' paths separated by ", ").
func FuzzDecodeValidate(f *testing.F) {
	types := validatedTypes()
	add := func(name string, m proto.Message) {
		f.Helper()
		wire, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		json, err := protojson.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(typeIndex(types, name), uint8(0), wire)
		f.Add(typeIndex(types, name), uint8(1), json)
	}
	routes, err := structpb.NewStruct(map[string]any{"http": []any{map[string]any{"hostname": "web.example", "port": 8080}}})
	if err != nil {
		f.Fatal(err)
	}
	lrp := &models.DesiredLRP{
		ProcessGuid: "web", Domain: "apps", Instances: 2, PlacementTags: []string{"ssd"}, Routes: routes,
		UpdateStrategy: &models.UpdateStrategy{MaxSurge: "25%", MaxUnavailable: "1"},
		Definition: &models.LRPDefinition{
			Action:      &models.RunAction{Path: "/bin/web", Env: []*models.EnvironmentVariable{{Name: "PORT", Value: "8080"}}},
			Ports:       []uint32{8080},
			HealthCheck: &models.HealthCheck{Type: models.HealthCheck_HTTP, Port: 8080, Path: "/healthz"},
			Assets:      []*models.Asset{{Url: "https://example.com/app.tgz", Sha256: strings.Repeat("a", 64), Destination: "."}},
		},
		Autoscaling: &models.Autoscaling{Enabled: true, Min: 1, Max: 4, Policy: &models.AutoscalingPolicy{
			Type: models.RoomOccupancyPolicy, Parameters: &models.AutoscalingPolicyParameters{
				RoomOccupancy: &models.RoomOccupancyParameters{ReadyTarget: 0.5}}}},
	}
	add("DesireLRPRequest", &models.DesireLRPRequest{DesiredLrp: lrp})
	add("DesiredLRP", lrp)
	add("LRPDefinition", lrp.Definition)
	add("UpdateDesiredLRPRequest", &models.UpdateDesiredLRPRequest{ProcessGuid: "web", Update: &models.DesiredLRPUpdate{
		Instances: proto.Int32(3), Definition: lrp.Definition, UpdateIdentifier: "v2",
		Staged: &models.StagedRollout{TargetPercent: 25, SafeRate: &models.SafeRate{Percent: 5, PerMs: 60000}},
	}})
	add("RegisterCellRequest", &models.RegisterCellRequest{Cell: &models.Cell{CellId: "cell-1", RepUrl: "http://10.0.0.5:1800",
		Zone: "z1", Capacity: &models.CellCapacity{MemoryMb: 1024, DiskMb: 1024, Instances: 8}, PlacementTags: []string{"ssd"}}})
	add("UpsertDomainRequest", &models.UpsertDomainRequest{Domain: "apps", TtlSeconds: 60})
	add("ActualLRPsRequest", &models.ActualLRPsRequest{Domain: "apps", CellId: "cell-1", Index: proto.Int32(0)})
	add("StartActualLRPRequest", &models.StartActualLRPRequest{ProcessGuid: "web", InstanceGuid: "ig-1", CellId: "cell-1",
		NetInfo: &models.NetInfo{Address: "10.0.0.5", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61000}}}})
	add("BulkReportRequest", fuzzBulkSeed())
	add("ReportOccupancyRequest", &models.ReportOccupancyRequest{CellId: "cell-1", Changes: []*models.OccupancyChange{{
		ProcessGuid: "web", Presence: models.ActualLRP_ORDINARY, InstanceGuid: "ig-1", Occupied: true}}})
	add("OperationsRequest", &models.OperationsRequest{ProcessGuid: "web", Limit: 5})
	add("EventsRequest", &models.EventsRequest{Types: []string{"desired_lrp_changed"}})
	add("PromoteRolloutRequest", &models.PromoteRolloutRequest{ProcessGuid: "web", ToPercent: 50})
	add("EditRolloutRequest", &models.EditRolloutRequest{ProcessGuid: "web", MaxSurge: proto.String("25%"), TargetPercent: proto.Float64(50)})
	// Names the board refuses (models.ValidateName).
	add("UpsertDomainRequest", &models.UpsertDomainRequest{Domain: "apps "})
	add("DrainCellRequest", &models.DrainCellRequest{CellId: "cell\u200b1"})
	// A routes key holding a line break and a terminal escape, with a value
	// that holds nothing (protojson cannot write that one).
	garbled, err := proto.Marshal(&models.DesireLRPRequest{DesiredLrp: &models.DesiredLRP{
		ProcessGuid: "web", Domain: "apps", Definition: lrp.Definition,
		Routes: &structpb.Struct{Fields: map[string]*structpb.Value{"a\nb\x1b[31m": {}}},
	}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(typeIndex(types, "DesireLRPRequest"), uint8(0), garbled)
	f.Add(typeIndex(types, "UpsertDomainRequest"), uint8(1), []byte(`{"domain": "ap\u0000ps"}`))
	f.Add(typeIndex(types, "DesireLRPRequest"), uint8(1), []byte(`{"desired_lrp": {"routes": {"a\nb": 1e999}}}`))
	// JSON refused inside a list's element: the error names
	// desired_lrp.definition.action.env[1] (models.JSONError).
	f.Add(typeIndex(types, "DesireLRPRequest"), uint8(1), []byte(`{"desired_lrp": {"definition": {"action": {"env": [{"name": "A"}, {"name": "B", "colour": 1}]}}}}`))
	// An edit that changes nothing is refused naming every field it could
	// change: "max_surge, max_unavailable, …: at least one is required".
	f.Add(typeIndex(types, "EditRolloutRequest"), uint8(0), []byte("\n\x010"))
	// A budget group set without its group is refused naming "group",
	// the request's field (it once said "budget_group").
	f.Add(typeIndex(types, "SetBudgetGroupRequest"), uint8(1), []byte("{}"))

	f.Fuzz(func(t *testing.T, index, encoding uint8, data []byte) {
		mt := types[int(index)%len(types)]
		message := mt.New().Interface().(validated)
		var err error
		if encoding%2 == 0 {
			err = proto.Unmarshal(data, message)
		} else {
			err = models.UnmarshalJSON(data, message)
			if err != nil {
				checkJSONError(t, mt, data, err)
			}
		}
		if err != nil {
			return
		}
		before := proto.Clone(message)
		first := message.Validate()
		if !proto.Equal(before, message) {
			t.Fatalf("%s: Validate changed the message", mt.Descriptor().Name())
		}
		if again := message.Validate(); errorText(again) != errorText(first) {
			t.Fatalf("%s: Validate answered %q, then %q", mt.Descriptor().Name(), errorText(first), errorText(again))
		}
		wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(message)
		if err != nil {
			t.Fatalf("%s: a decoded message does not encode: %v", mt.Descriptor().Name(), err)
		}
		copied := mt.New().Interface().(validated)
		if err := proto.Unmarshal(wire, copied); err != nil {
			t.Fatalf("%s: a decoded message does not decode again: %v", mt.Descriptor().Name(), err)
		}
		if got := copied.Validate(); errorText(got) != errorText(first) {
			t.Fatalf("%s: Validate answered %q, and %q after a round trip", mt.Descriptor().Name(), errorText(first), errorText(got))
		}
		if first != nil {
			checkValidationError(t, mt.Descriptor(), first)
		}
	})
}

// checkJSONError holds models.UnmarshalJSON's refusal to its contract: it
// refuses what protojson refuses, with a *models.JSONError whose Path is
// "" or the place of a field of the message (each step a field of the
// message before it, with an index for a list, a quoted key for a map),
// named in its Text.
func checkJSONError(t *testing.T, mt protoreflect.MessageType, data []byte, err error) {
	t.Helper()
	md := mt.Descriptor()
	if protojson.Unmarshal(data, mt.New().Interface()) == nil {
		t.Fatalf("%s: UnmarshalJSON refused what protojson decodes: %v", md.Name(), err)
	}
	var jsonErr *models.JSONError
	if !errors.As(err, &jsonErr) {
		t.Fatalf("%s: UnmarshalJSON answered %v (%T), want a *models.JSONError", md.Name(), err, err)
	}
	if jsonErr.Path == "" {
		return
	}
	if !strings.Contains(jsonErr.Text, jsonErr.Path) {
		t.Fatalf("%s: %q does not name its path %q", md.Name(), jsonErr.Text, jsonErr.Path)
	}
	if strings.Contains(jsonErr.Path, "...") {
		return // a path cut in the middle (models' maxPathBytes)
	}
	if problem := resolvePath(md, jsonErr.Path); problem != "" {
		t.Fatalf("%s: path %q of %q: %s", md.Name(), jsonErr.Path, jsonErr.Text, problem)
	}
}

// resolvePath says what in path is not a field of md's ("" when all is).
func resolvePath(md protoreflect.MessageDescriptor, path string) string {
	for path != "" {
		if md == nil {
			return "goes on past a scalar: " + path
		}
		end := strings.IndexAny(path, ".[")
		if end < 0 {
			end = len(path)
		}
		fd := md.Fields().ByName(protoreflect.Name(path[:end]))
		if fd == nil {
			return fmt.Sprintf("%s has no field %q", md.FullName(), path[:end])
		}
		path = path[end:]
		md = fd.Message()
		if fd.IsMap() {
			md = fd.MapValue().Message()
		}
		if rest, ok := strings.CutPrefix(path, "["); ok {
			switch {
			case fd.IsList():
				n := strings.IndexByte(rest, ']')
				if n < 1 {
					return "an unclosed index: " + path
				}
				if _, err := strconv.Atoi(rest[:n]); err != nil {
					return "an index that is not a number: " + path
				}
				path = rest[n+1:]
			case fd.IsMap():
				key, err := strconv.QuotedPrefix(rest)
				if err != nil || !strings.HasPrefix(rest[len(key):], "]") {
					return "a key that is not quoted: " + path
				}
				path = rest[len(key)+1:]
			default:
				return "an index on a field that is no list or map: " + path
			}
		}
		path = strings.TrimPrefix(path, ".")
	}
	return ""
}

func errorText(err error) string {
	if err == nil {
		return "<valid>"
	}
	return err.Error()
}

// checkValidationError holds a refusal to what a client may rely on: an
// InvalidRequest *models.Error whose message is "path: reason" (or
// "path, path, …: reason" when one of several fields is required), valid
// printable UTF-8 (values are quoted), each path starting with a field of
// the message (or the message's own name, for one validated on its own,
// as Autoscaling is).
func checkValidationError(t *testing.T, descriptor protoreflect.MessageDescriptor, err error) {
	t.Helper()
	var modelErr *models.Error
	if !errors.As(err, &modelErr) || modelErr.GetType() != models.Error_InvalidRequest {
		t.Fatalf("%s: Validate answered %v, want an InvalidRequest", descriptor.Name(), err)
	}
	message := modelErr.GetMessage()
	if !utf8.ValidString(message) {
		t.Fatalf("%s: error message is not valid UTF-8: %q", descriptor.Name(), message)
	}
	if i := strings.IndexFunc(message, func(r rune) bool { return r < ' ' || r == 0x7f }); i >= 0 {
		t.Fatalf("%s: error message holds a control character at byte %d: %q", descriptor.Name(), i, message)
	}
	paths, _, ok := strings.Cut(message, ": ")
	if !ok || paths == "" {
		t.Fatalf("%s: error message names no field: %q", descriptor.Name(), message)
	}
	for _, path := range strings.Split(paths, ", ") {
		first := path
		if i := strings.IndexAny(first, ".["); i >= 0 {
			first = first[:i]
		}
		if descriptor.Fields().ByName(protoreflect.Name(first)) == nil && first != snakeCase(string(descriptor.Name())) {
			t.Fatalf("%s: error message names %q, not a field of the message: %q", descriptor.Name(), first, message)
		}
	}
}

// snakeCase turns a message name into the path it validates itself under:
// Autoscaling is "autoscaling".
func snakeCase(name string) string {
	var b strings.Builder
	for i, r := range name {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
