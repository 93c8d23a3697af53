package models_test

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/corkboard/corkboard/models"
)

var _ = Describe("UnmarshalJSON", func() {
	// Worked examples: what protojson says, and what the board says.
	//
	//  1. {"desired_lrp": {"instances": 4294967298}}: protojson says
	//     "(line 1:31): invalid value for int32 field instances:
	//     4294967298"; the value's place is desired_lrp.instances, and the
	//     text is CheckWireRanges' for the same value sent in protobuf.
	//  2. An unknown name inside the second env entry: the name is refused
	//     by the message holding it, desired_lrp.definition.action.env[1].
	//  3. A number where a list goes: text of a shape the field does not
	//     take is a syntax error, named by the field and placed in the text.
	DescribeTable("names where in the message",
		func(body, text, path string, syntax bool) {
			err := models.UnmarshalJSON([]byte(body), &models.DesireLRPRequest{})
			var jsonErr *models.JSONError
			Expect(errors.As(err, &jsonErr)).To(BeTrue(), "%v", err)
			Expect(jsonErr.Text).To(Equal(text))
			Expect(jsonErr.Path).To(Equal(path))
			Expect(jsonErr.Syntax).To(Equal(syntax))
			if syntax {
				Expect(err.Error()).To(Equal(fmt.Sprintf("%s (line %d:%d)", text, jsonErr.Line, jsonErr.Column)))
			} else {
				Expect(err.Error()).To(Equal(text))
			}
		},
		Entry("1. a value out of its field's range",
			`{"desired_lrp": {"instances": 4294967298}}`,
			"invalid value for int32 field desired_lrp.instances: 4294967298", "desired_lrp.instances", false),
		Entry("1. by JSON names too",
			`{"desiredLrp": {"processGuid": "a", "instances": "many"}}`,
			`invalid value for int32 field desired_lrp.instances: "many"`, "desired_lrp.instances", false),
		Entry("1. an element of a list",
			`{"desired_lrp": {"definition": {"ports": [8080, 4294975376]}}}`,
			"invalid value for uint32 field desired_lrp.definition.ports[1]: 4294975376", "desired_lrp.definition.ports[1]", false),
		Entry("1. a field of a list's element",
			`{"desired_lrp": {"definition": {"action": {"env": [{"name": "A"}, {"name": 3}]}}}}`,
			"invalid value for string field desired_lrp.definition.action.env[1].name: 3", "desired_lrp.definition.action.env[1].name", false),
		Entry("1. an enum by an unknown name",
			`{"desired_lrp": {"definition": {"health_check": {"type": "SMOKE"}}}}`,
			`invalid value for enum corkboard.models.HealthCheck.Type field desired_lrp.definition.health_check.type: "SMOKE"`,
			"desired_lrp.definition.health_check.type", false),
		Entry("2. an unknown name in a list's element",
			`{"desired_lrp": {"definition": {"action": {"env": [{"name": "A"}, {"name": "B", "colour": "blue"}]}}}}`,
			`desired_lrp.definition.action.env[1]: unknown field "colour"`, "desired_lrp.definition.action.env[1]", false),
		Entry("2. at the top",
			`{"colour": "blue"}`, `unknown field "colour"`, "", false),
		Entry("2. a name twice",
			`{"desired_lrp": {"instances": 1, "instances": 2}}`,
			`desired_lrp: duplicate field "instances"`, "desired_lrp", false),
		Entry("3. a number where a list goes",
			`{"desired_lrp": {"definition": {"ports": 8080}}}`,
			"desired_lrp.definition.ports: syntax error: unexpected token 8080", "desired_lrp.definition.ports", true),
		Entry("3. a number where a message goes",
			`{"desired_lrp": {"definition": 5}}`,
			"desired_lrp.definition: syntax error: unexpected token 5", "desired_lrp.definition", true),
		Entry("3. inside routes, whose JSON is its own (a Struct)",
			`{"desired_lrp": {"routes": {"http": [{"port": 8080,}]}}}`,
			"desired_lrp.routes: syntax error: unexpected token }", "desired_lrp.routes", true),
		Entry("3. not an object",
			`[1, 2]`, "syntax error: unexpected token [", "", true),
		Entry("3. a control character inside a value",
			"{\"desired_lrp\": {\"process_guid\": \"a\x01b\"}}",
			`desired_lrp.process_guid: syntax error: invalid character '\x01' in string`, "desired_lrp.process_guid", true),
		Entry("3. text that ends inside a value",
			`{"desired_lrp": {"definition": {"action": {"env": [{"name": "A"`,
			"desired_lrp.definition.action.env[0]: syntax error: unexpected end of text", "desired_lrp.definition.action.env[0]", true),
		Entry("a long name, cut where the error repeats it",
			`{"desired_lrp": {"`+strings.Repeat("x", 5000)+`": 1}}`,
			`desired_lrp: unknown field "`+strings.Repeat("x", 241)+`...`, "desired_lrp", false),
	)

	It("places the fault in the text by line and character", func() {
		body := "{\n  \"desired_lrp\": {\n    \"annotation\": \"é—\", \"colour\": 1}}"
		err := models.UnmarshalJSON([]byte(body), &models.DesireLRPRequest{})
		var jsonErr *models.JSONError
		Expect(errors.As(err, &jsonErr)).To(BeTrue())
		Expect([]int{jsonErr.Line, jsonErr.Column}).To(Equal([]int{3, 25}))
		Expect(jsonErr.Text).To(Equal(`desired_lrp: unknown field "colour"`))
	})

	It("decodes what protojson decodes", func() {
		msg := &models.DesireLRPRequest{}
		Expect(models.UnmarshalJSON([]byte(`{"desiredLrp": {"process_guid": "web", "instances": 2}}`), msg)).To(Succeed())
		Expect(msg.GetDesiredLrp().GetProcessGuid()).To(Equal("web"))
		Expect(msg.GetDesiredLrp().GetInstances()).To(BeEquivalentTo(2))
	})

	// Every validated message, every 32-bit field reachable through
	// messages and lists (JSON's maps and well-known types have their own
	// forms): the value out of range sent in JSON is refused in the very
	// words CheckWireRanges uses for it sent in protobuf.
	It("names every 32-bit field's out-of-range value as the protobuf decoder does", func() {
		checked := 0
		for _, mt := range validatedTypes() {
			md := mt.Descriptor()
		fields:
			for _, f := range narrowFields(md) {
				for _, fd := range f.path {
					if fd.IsMap() || strings.HasPrefix(string(fd.Message().FullName()), "google.protobuf.") {
						continue fields
					}
				}
				signed := f.field.Kind() == protoreflect.Int32Kind || f.field.Kind() == protoreflect.EnumKind
				values := []uint64{1<<32 + 2}
				if signed {
					values = append(values, signExtended(math.MinInt32-1))
				} else {
					values = append(values, math.MaxUint64)
				}
				for _, v := range values {
					shown := strconv.FormatUint(v, 10)
					if signed {
						shown = strconv.FormatInt(int64(v), 10)
					}
					wire, _ := f.encode(v, false)
					_, wireErr := models.CheckWireRanges(wire, md)
					Expect(wireErr).To(HaveOccurred())
					jsonErr := models.UnmarshalJSON([]byte(f.json(shown)), mt.New().Interface())
					Expect(jsonErr).To(MatchError(wireErr.Error()), "%s %s", md.Name(), f.json(shown))
					checked++
				}
			}
		}
		Expect(checked).To(BeNumerically(">", 40))
	})
})

// json is the JSON of a message holding only f set to value, with one
// element of each list on the way, as encode's protobuf is.
func (f narrowField) json(value string) string {
	text := value
	if f.field.IsList() {
		text = "[" + text + "]"
	}
	text = fmt.Sprintf("{%q: %s}", f.field.Name(), text)
	for i := len(f.path) - 1; i >= 0; i-- {
		if f.path[i].IsList() {
			text = "[" + text + "]"
		}
		text = fmt.Sprintf("{%q: %s}", f.path[i].Name(), text)
	}
	return text
}
