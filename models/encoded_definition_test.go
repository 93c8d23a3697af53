package models_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("A desired LRP's definition kept encoded", func() {
	It("is field 11 of DesiredLRP, the number SetEncodedDefinition tags it with", func() {
		field := (&models.DesiredLRP{}).ProtoReflect().Descriptor().Fields().ByName("definition")
		Expect(int(field.Number())).To(Equal(11))
	})

	It("works out as the worked example says", func() {
		encoded := []byte{0x0a, 0x02, 'i', 'd'}
		Expect(proto.Marshal(&models.LRPDefinition{DefinitionId: "id"})).To(Equal(encoded))

		lrp := &models.DesiredLRP{ProcessGuid: "web"}
		Expect(lrp.SetEncodedDefinition(encoded)).To(Succeed())
		Expect([]byte(lrp.ProtoReflect().GetUnknown())).To(Equal([]byte{0x5a, 0x04, 0x0a, 0x02, 'i', 'd'}))
		wire, err := proto.Marshal(lrp)
		Expect(err).NotTo(HaveOccurred())
		Expect(wire).To(Equal([]byte{0x0a, 0x03, 'w', 'e', 'b', 0x5a, 0x04, 0x0a, 0x02, 'i', 'd'}))

		decoded := &models.DesiredLRP{}
		Expect(proto.Unmarshal(wire, decoded)).To(Succeed())
		Expect(proto.Equal(decoded, &models.DesiredLRP{ProcessGuid: "web", Definition: &models.LRPDefinition{DefinitionId: "id"}})).To(BeTrue())
	})

	DescribeTable("encodes as the decoded definition would",
		func(def *models.LRPDefinition) {
			lrp := &models.DesiredLRP{ProcessGuid: "web", Domain: "apps", Instances: 3, Annotation: "a"}
			withDecoded := proto.Clone(lrp).(*models.DesiredLRP)
			withDecoded.Definition = def

			encoded, err := proto.Marshal(def)
			Expect(err).NotTo(HaveOccurred())
			Expect(lrp.SetEncodedDefinition(encoded)).To(Succeed())
			Expect(proto.Size(lrp)).To(Equal(proto.Size(withDecoded)), "a page's size measures it the same")

			wire, err := proto.Marshal(lrp)
			Expect(err).NotTo(HaveOccurred())
			read := &models.DesiredLRP{}
			Expect(proto.Unmarshal(wire, read)).To(Succeed())
			Expect(proto.Equal(read, withDecoded)).To(BeTrue(), "a client reads the definition")

			By("decoding it for JSON")
			Expect(lrp.DecodeEncodedDefinition()).To(Succeed())
			Expect(proto.Equal(lrp, withDecoded)).To(BeTrue())
			Expect(lrp.ProtoReflect().GetUnknown()).To(BeEmpty())
			Expect(protojson.Format(lrp)).To(Equal(protojson.Format(withDecoded)))
			Expect(lrp.DecodeEncodedDefinition()).To(Succeed(), "decoding twice does nothing")
			Expect(proto.Equal(lrp, withDecoded)).To(BeTrue())
		},
		Entry("a whole definition", hashedDefinition()),
		Entry("an empty definition (no bytes)", &models.LRPDefinition{}),
	)

	It("decodes nothing for an LRP without one", func() {
		lrp := &models.DesiredLRP{ProcessGuid: "web", Definition: hashedDefinition()}
		Expect(lrp.DecodeEncodedDefinition()).To(Succeed())
		Expect(proto.Equal(lrp.Definition, hashedDefinition())).To(BeTrue())
	})

	DescribeTable("refuses bytes that are not fields, changing nothing",
		func(encoded []byte, message string) {
			lrp := &models.DesiredLRP{ProcessGuid: "web"}
			Expect(lrp.SetEncodedDefinition(encoded)).To(MatchError(ContainSubstring(message)))
			Expect(lrp.ProtoReflect().GetUnknown()).To(BeEmpty())
		},
		Entry("a length past the end", []byte{0x0a, 0x09, 'i', 'd'}, "definition: "),
		Entry("a tag cut short", []byte{0x80}, "definition: "),
		Entry("field number 0", []byte{0x00, 0x01}, "definition: "),
	)

	It("refuses an LRP that holds a decoded definition", func() {
		lrp := &models.DesiredLRP{ProcessGuid: "web", Definition: hashedDefinition()}
		Expect(lrp.SetEncodedDefinition([]byte{0x0a, 0x02, 'i', 'd'})).To(MatchError(ContainSubstring("holds a decoded definition")))
		Expect(lrp.ProtoReflect().GetUnknown()).To(BeEmpty())
	})

	It("reports bytes that frame fields but are no definition when decoding them", func() {
		lrp := &models.DesiredLRP{ProcessGuid: "web"}
		// Field 1 (definition_id, a string) of one byte that is not
		// UTF-8: well framed, not a definition.
		Expect(lrp.SetEncodedDefinition([]byte{0x0a, 0x01, 0xff})).To(Succeed())
		Expect(lrp.DecodeEncodedDefinition()).To(MatchError(ContainSubstring("UTF-8")))
	})
})
