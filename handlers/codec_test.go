package handlers

import (
	"math/rand/v2"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/models"
)

// desireRequest is a request shaped like bbs-load peer's: a 1 KB
// definition with arguments and environment, one port, one route.
func desireRequest() *models.DesireLRPRequest {
	routes, err := structpb.NewStruct(map[string]any{
		"cf-router": []any{map[string]any{"hostnames": []any{"web.apps.example.com"}, "port": 8080}},
	})
	if err != nil {
		panic(err) // a fixed literal
	}
	return &models.DesireLRPRequest{DesiredLrp: &models.DesiredLRP{
		ProcessGuid: "web", Domain: "apps", Instances: 1, Routes: routes, Annotation: "notes",
		Definition: &models.LRPDefinition{
			Action: &models.RunAction{
				Path: "/home/vcap/app/bin/server",
				Args: []string{"--port", "8080", "--config", "/home/vcap/app/config/production.yml", "--" + strings.Repeat("flag-", 60)},
				Env: []*models.EnvironmentVariable{
					{Name: "VCAP_APPLICATION", Value: `{"application_name":"web","space_name":"load","limits":{"mem":256}}`},
					{Name: "DATABASE_URL", Value: "postgres://app:secret@db.internal.example.com:5432/web?sslmode=require"},
					{Name: "LANG", Value: "en_US.UTF-8"},
				},
			},
			Ports:       []uint32{8080},
			HealthCheck: &models.HealthCheck{Type: models.HealthCheck_HTTP, Port: 8080, Path: "/health"},
			MemoryMb:    256, DiskMb: 512,
		},
	}}
}

// withUnknown gives m an unknown field of the number, as a newer client's
// field would arrive.
func withUnknown(m proto.Message, number protowire.Number) {
	unknown := protowire.AppendTag(nil, number, protowire.VarintType)
	m.ProtoReflect().SetUnknown(protoreflect.RawFields(protowire.AppendVarint(unknown, 1)))
}

var _ = DescribeTable("a protobuf request with a field the board does not know is refused, naming where",
	func(place func(r *models.DesireLRPRequest), want string) {
		r := desireRequest()
		place(r)
		body, err := proto.Marshal(r)
		Expect(err).NotTo(HaveOccurred())
		Expect(unmarshalProtobuf(body, &models.DesireLRPRequest{})).To(MatchError(want))
	},
	Entry("at the top", func(r *models.DesireLRPRequest) { withUnknown(r, 99) },
		"unknown field number 99"),
	Entry("in a message", func(r *models.DesireLRPRequest) { withUnknown(r.DesiredLrp.Definition.HealthCheck, 77) },
		"desired_lrp.definition.health_check: unknown field number 77"),
	Entry("in an element of a list", func(r *models.DesireLRPRequest) { withUnknown(r.DesiredLrp.Definition.Action.Env[1], 77) },
		"desired_lrp.definition.action.env[1]: unknown field number 77"),
	Entry("in a value of a map", func(r *models.DesireLRPRequest) { withUnknown(r.DesiredLrp.Routes.Fields["cf-router"], 77) },
		`desired_lrp.routes.fields["cf-router"]: unknown field number 77`),
	Entry("in a list within a map", func(r *models.DesireLRPRequest) {
		withUnknown(r.DesiredLrp.Routes.Fields["cf-router"].GetListValue().Values[0], 77)
	}, `desired_lrp.routes.fields["cf-router"].list_value.values[0]: unknown field number 77`),
)

// BenchmarkDecodeDesire is decoding a desire's protobuf body as the board
// does: the decoder, the varint ranges and the unknown fields.
func BenchmarkDecodeDesire(b *testing.B) {
	body, err := proto.Marshal(desireRequest())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := unmarshalProtobuf(body, &models.DesireLRPRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}

// CheckWireRanges' declaredOnly lets a request skip the walk for unknown fields only when
// the walk would find none. Seeded: 3,000 requests (a desire and a cell's
// bulk report), each with one field of a random number and wire type put
// in a random message of it, as a client's encoder would write it.
var _ = Describe("the check that a protobuf request holds only declared fields", func() {
	bulkReport := func() proto.Message {
		r := &models.BulkReportRequest{CellId: "cell-1"}
		for i := range 3 {
			r.Instances = append(r.Instances, &models.ReportedInstance{
				ProcessGuid: "web", Index: int32(i), InstanceGuid: "ig", DefinitionId: "d1",
				State:   models.ActualLRP_RUNNING,
				NetInfo: &models.NetInfo{Address: "10.0.0.1", Ports: []*models.PortMapping{{ContainerPort: 8080, HostPort: 61000}}},
			})
		}
		return r
	}
	requests := map[string]func() proto.Message{
		"desire":      func() proto.Message { return desireRequest() },
		"bulk report": bulkReport,
	}

	It("passes a request the board's client encodes", func() {
		for name, request := range requests {
			body, err := proto.Marshal(request())
			Expect(err).NotTo(HaveOccurred())
			declared, err := models.CheckWireRanges(body, request().ProtoReflect().Descriptor())
			Expect(err).NotTo(HaveOccurred())
			Expect(declared).To(BeTrue(), name)
		}
	})

	It("says false exactly when the walk finds an unknown field", func() {
		r := rand.New(rand.NewPCG(28, 3))
		types := []protowire.Type{protowire.VarintType, protowire.Fixed32Type, protowire.Fixed64Type, protowire.BytesType}
		found, clean, refused := 0, 0, 0
		for i := range 3000 {
			name := []string{"desire", "bulk report"}[i%2]
			m := requests[name]()
			var messages []protoreflect.Message
			collectMessages(m.ProtoReflect(), &messages)
			target := messages[r.IntN(len(messages))]
			number := protowire.Number(1 + r.IntN(12))
			typ := types[r.IntN(len(types))]
			field := protowire.AppendTag(nil, number, typ)
			switch typ {
			case protowire.VarintType:
				field = protowire.AppendVarint(field, uint64(r.IntN(300)))
			case protowire.Fixed32Type:
				field = protowire.AppendFixed32(field, r.Uint32())
			case protowire.Fixed64Type:
				field = protowire.AppendFixed64(field, r.Uint64())
			default:
				field = protowire.AppendString(field, "x")
			}
			target.SetUnknown(append(target.GetUnknown(), field...))
			body, err := proto.Marshal(m)
			Expect(err).NotTo(HaveOccurred())
			decoded := m.ProtoReflect().New().Interface()
			if proto.Unmarshal(body, decoded) != nil {
				continue // a value the field cannot hold
			}
			walk := models.UnknownFields(decoded.ProtoReflect())
			declared, err := models.CheckWireRanges(body, decoded.ProtoReflect().Descriptor())
			if err != nil {
				// A declared number in a wire type its field does not
				// take, or a field a map entry does not declare: refused
				// naming the field (the decoder would keep it as unknown
				// in the message, or drop it from the entry); or a bool
				// that is neither 0 nor 1.
				Expect(err.Error()).To(Or(ContainSubstring(": wire type "), ContainSubstring("unknown field number"),
					MatchRegexp(`^invalid value for bool field \S+: \d+$`)),
					"case %d, %s: field %d of wire type %d in %s", i, name, number, typ, target.Descriptor().FullName())
				refused++
				continue
			}
			Expect(declared).To(Equal(walk == nil),
				"case %d, %s: field %d of wire type %d in %s: the walk says %v", i, name, number, typ, target.Descriptor().FullName(), walk)
			if walk == nil {
				clean++
			} else {
				found++
			}
		}
		Expect(found).To(BeNumerically(">", 300))
		Expect(clean).To(BeNumerically(">", 100))
		Expect(refused).To(BeNumerically(">", 100))
	})
})

// collectMessages appends m and every message set in it, nested or in
// lists and maps.
func collectMessages(m protoreflect.Message, out *[]protoreflect.Message) {
	*out = append(*out, m)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				collectMessages(v.List().Get(i).Message(), out)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				collectMessages(mv.Message(), out)
				return true
			})
		case fd.Message() != nil && !fd.IsMap():
			collectMessages(v.Message(), out)
		}
		return true
	})
}
