package models_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("Fields kept encoded", func() {
	It("are numbered as in desired_lrp.proto", func() {
		fields := (&models.DesiredLRP{}).ProtoReflect().Descriptor().Fields()
		Expect(fields.ByName("definition").Number()).To(Equal(models.DesiredLRPDefinitionField))
		Expect(fields.ByName("routes").Number()).To(Equal(models.DesiredLRPRoutesField))
		info := (&models.DesiredLRPSchedulingInfo{}).ProtoReflect().Descriptor().Fields()
		Expect(info.ByName("routes").Number()).To(Equal(models.DesiredLRPRoutesField))
	})

	It("work out as the worked example says", func() {
		encoded := []byte{0x0a, 0x02, 'i', 'd'}
		Expect(proto.Marshal(&models.LRPDefinition{DefinitionId: "id"})).To(Equal(encoded))

		lrp := &models.DesiredLRP{ProcessGuid: "web"}
		Expect(models.KeepEncoded(lrp, models.DesiredLRPDefinitionField, encoded)).To(Succeed())
		Expect([]byte(lrp.ProtoReflect().GetUnknown())).To(Equal([]byte{0x5a, 0x04, 0x0a, 0x02, 'i', 'd'}))
		wire, err := proto.Marshal(lrp)
		Expect(err).NotTo(HaveOccurred())
		Expect(wire).To(Equal([]byte{0x0a, 0x03, 'w', 'e', 'b', 0x5a, 0x04, 0x0a, 0x02, 'i', 'd'}))

		decoded := &models.DesiredLRP{}
		Expect(proto.Unmarshal(wire, decoded)).To(Succeed())
		Expect(proto.Equal(decoded, &models.DesiredLRP{ProcessGuid: "web", Definition: &models.LRPDefinition{DefinitionId: "id"}})).To(BeTrue())
	})

	routes := func() *structpb.Struct {
		r, err := structpb.NewStruct(map[string]any{
			"cf-router": []any{map[string]any{"hostnames": []any{"web.example.com"}, "port": 8080}},
		})
		Expect(err).NotTo(HaveOccurred())
		return r
	}

	DescribeTable("encode as the decoded fields would",
		func(def *models.LRPDefinition, withRoutes bool) {
			lrp := &models.DesiredLRP{ProcessGuid: "web", Domain: "apps", Instances: 3, Annotation: "a"}
			withDecoded := proto.Clone(lrp).(*models.DesiredLRP)
			withDecoded.Definition = def

			encoded, err := proto.Marshal(def)
			Expect(err).NotTo(HaveOccurred())
			Expect(models.KeepEncoded(lrp, models.DesiredLRPDefinitionField, encoded)).To(Succeed())
			if withRoutes {
				withDecoded.Routes = routes()
				encoded, err := proto.Marshal(routes())
				Expect(err).NotTo(HaveOccurred())
				Expect(models.KeepEncoded(lrp, models.DesiredLRPRoutesField, encoded)).To(Succeed())
			}
			Expect(proto.Size(lrp)).To(Equal(proto.Size(withDecoded)), "a page's size measures it the same")

			wire, err := proto.Marshal(lrp)
			Expect(err).NotTo(HaveOccurred())
			read := &models.DesiredLRP{}
			Expect(proto.Unmarshal(wire, read)).To(Succeed())
			Expect(proto.Equal(read, withDecoded)).To(BeTrue(), "a client reads the fields")

			By("decoding them for JSON")
			Expect(models.DecodeEncodedFields(lrp)).To(Succeed())
			Expect(proto.Equal(lrp, withDecoded)).To(BeTrue())
			Expect(lrp.ProtoReflect().GetUnknown()).To(BeEmpty())
			Expect(protojson.Format(lrp)).To(Equal(protojson.Format(withDecoded)))
			Expect(models.DecodeEncodedFields(lrp)).To(Succeed(), "decoding twice does nothing")
			Expect(proto.Equal(lrp, withDecoded)).To(BeTrue())
		},
		Entry("a whole definition", hashedDefinition(), false),
		Entry("an empty definition (no bytes)", &models.LRPDefinition{}, false),
		Entry("a definition and routes", hashedDefinition(), true),
	)

	It("decode nothing for a message without any", func() {
		lrp := &models.DesiredLRP{ProcessGuid: "web", Definition: hashedDefinition()}
		Expect(models.DecodeEncodedFields(lrp)).To(Succeed())
		Expect(proto.Equal(lrp.Definition, hashedDefinition())).To(BeTrue())
	})

	DescribeTable("refuse bytes that are not fields, changing nothing",
		func(encoded []byte) {
			lrp := &models.DesiredLRP{ProcessGuid: "web"}
			Expect(models.KeepEncoded(lrp, models.DesiredLRPDefinitionField, encoded)).To(MatchError("definition: not a protobuf encoding"))
			Expect(lrp.ProtoReflect().GetUnknown()).To(BeEmpty())
		},
		Entry("a length past the end", []byte{0x0a, 0x09, 'i', 'd'}),
		Entry("a tag cut short", []byte{0x80}),
		Entry("field number 0", []byte{0x00, 0x01}),
	)

	It("refuse a field held already, decoded or encoded, and a field that is not a message", func() {
		lrp := &models.DesiredLRP{ProcessGuid: "web", Definition: hashedDefinition()}
		Expect(models.KeepEncoded(lrp, models.DesiredLRPDefinitionField, []byte{0x0a, 0x02, 'i', 'd'})).To(MatchError("definition: DesiredLRP holds it already"))
		Expect(lrp.ProtoReflect().GetUnknown()).To(BeEmpty())

		info := &models.DesiredLRPSchedulingInfo{ProcessGuid: "web"}
		Expect(models.KeepEncoded(info, models.DesiredLRPRoutesField, nil)).To(Succeed())
		Expect(models.KeepEncoded(info, models.DesiredLRPRoutesField, nil)).To(MatchError("routes: DesiredLRPSchedulingInfo holds it already"))
		Expect(models.KeepEncoded(info, 1, nil)).To(MatchError(ContainSubstring("has no message field 1")))
	})

	It("report bytes that frame fields but are not the field's message when decoding them", func() {
		lrp := &models.DesiredLRP{ProcessGuid: "web"}
		// Field 1 (definition_id, a string) of one byte that is not
		// UTF-8: well framed, not a definition.
		Expect(models.KeepEncoded(lrp, models.DesiredLRPDefinitionField, []byte{0x0a, 0x01, 0xff})).To(Succeed())
		Expect(models.DecodeEncodedFields(lrp)).To(MatchError(ContainSubstring("UTF-8")))
	})
})
