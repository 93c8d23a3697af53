package handlers

import (
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
		"DesireLRPRequest: unknown field number 99"),
	Entry("in a message", func(r *models.DesireLRPRequest) { withUnknown(r.DesiredLrp.Definition.HealthCheck, 77) },
		"desired_lrp.definition.health_check: unknown field number 77"),
	Entry("in an element of a list", func(r *models.DesireLRPRequest) { withUnknown(r.DesiredLrp.Definition.Action.Env[1], 77) },
		"desired_lrp.definition.action.env[1]: unknown field number 77"),
	Entry("in a value of a map", func(r *models.DesireLRPRequest) { withUnknown(r.DesiredLrp.Routes.Fields["cf-router"], 77) },
		"desired_lrp.routes.fields[cf-router]: unknown field number 77"),
	Entry("in a list within a map", func(r *models.DesireLRPRequest) {
		withUnknown(r.DesiredLrp.Routes.Fields["cf-router"].GetListValue().Values[0], 77)
	}, "desired_lrp.routes.fields[cf-router].list_value.values[0]: unknown field number 77"),
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
