package models_test

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/corkboard/corkboard/models"
)

// textField is one string field reachable from a definition: the fields on
// the way (of a list, its first element) and the field.
type textField struct {
	path  []protoreflect.FieldDescriptor
	field protoreflect.FieldDescriptor
}

// name is the field's path as errors write it: "action.env[0].name".
func (t textField) name() string {
	var b strings.Builder
	for _, fd := range append(t.path[:len(t.path):len(t.path)], t.field) {
		if b.Len() > 0 {
			b.WriteString(".")
		}
		b.WriteString(string(fd.Name()))
		if fd.IsList() {
			b.WriteString("[0]")
		}
	}
	return b.String()
}

// stringFields walks md, through messages and first list elements, to
// every string field.
func stringFields(md protoreflect.MessageDescriptor) []textField {
	var found []textField
	var walk func(md protoreflect.MessageDescriptor, path []protoreflect.FieldDescriptor)
	walk = func(md protoreflect.MessageDescriptor, path []protoreflect.FieldDescriptor) {
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			switch {
			case fd.IsMap():
				Fail(fmt.Sprintf("a map in a definition (%s): the walk does not cover maps", fd.FullName()))
			case fd.Message() != nil:
				walk(fd.Message(), append(path[:len(path):len(path)], fd))
			case fd.Kind() == protoreflect.StringKind:
				found = append(found, textField{path: path, field: fd})
			}
		}
	}
	walk(md, nil)
	return found
}

// textDefinition is a valid definition with every message and list of the
// definition set, so that every string field has a value to spoil.
func textDefinition() *models.LRPDefinition {
	d := validDefinition()
	d.Assets = []*models.Asset{{Url: "https://blobs.example/app.tgz", Sha256: strings.Repeat("ab", 32), Destination: "app"}}
	d.Setup = &models.RunAction{Path: "./setup.sh", Args: []string{"--fast"}, Env: []*models.EnvironmentVariable{{Name: "STEP", Value: "one"}}, Dir: "app"}
	return d
}

// textParent is the message holding t's field in msg, through first
// elements of lists, which the fixture sets.
func textParent(msg proto.Message, t textField) protoreflect.Message {
	m := msg.ProtoReflect()
	for _, fd := range t.path {
		if fd.IsList() {
			list := m.Get(fd).List()
			Expect(list.Len()).To(BeNumerically(">", 0), "the fixture sets %s", fd.Name())
			m = list.Get(0).Message()
			continue
		}
		Expect(m.Has(fd)).To(BeTrue(), "the fixture sets %s", fd.Name())
		m = m.Mutable(fd).Message()
	}
	return m
}

func spoilText(msg proto.Message, t textField, spoil func(string) string) {
	m := textParent(msg, t)
	if t.field.IsList() {
		list := m.Mutable(t.field).List()
		Expect(list.Len()).To(BeNumerically(">", 0), "the fixture sets %s", t.name())
		list.Set(0, protoreflect.ValueOfString(spoil(list.Get(0).String())))
		return
	}
	Expect(m.Has(t.field)).To(BeTrue(), "the fixture sets %s", t.name())
	m.Set(t.field, protoreflect.ValueOfString(spoil(m.Get(t.field).String())))
}

// textRules says, for every string field of a definition, which rule it
// follows: "no control" (no control character at all), "lines" (tab, line
// feed and carriage return allowed) or "format" (a stricter format of its
// own, which refuses every control character too). A new string field
// fails the walk below until it is placed here.
var textRules = map[string]string{
	"corkboard.models.LRPDefinition.definition_id": "format",
	"corkboard.models.RunAction.path":              "no control",
	"corkboard.models.RunAction.args":              "lines",
	"corkboard.models.RunAction.dir":               "no control",
	"corkboard.models.EnvironmentVariable.name":    "no control",
	"corkboard.models.EnvironmentVariable.value":   "lines",
	"corkboard.models.HealthCheck.path":            "no control",
	"corkboard.models.Asset.url":                   "no control",
	"corkboard.models.Asset.sha256":                "format",
	"corkboard.models.Asset.destination":           "no control",
}

// insert puts s into the middle of value.
func insert(s string) func(string) string {
	return func(value string) string { return value[:len(value)/2] + s + value[len(value)/2:] }
}

var _ = Describe("Control characters in what a process is given", func() {
	fields := stringFields((&models.LRPDefinition{}).ProtoReflect().Descriptor())

	It("finds every string field of a definition, each with its rule", func() {
		// definition_id, action (path, args, dir, env name and value),
		// health_check.path, assets (url, sha256, destination), setup (as
		// action).
		Expect(len(fields)).To(Equal(15))
		for _, t := range fields {
			Expect(textRules).To(HaveKey(string(t.field.FullName())), "%s has no rule", t.name())
		}
	})

	// Every field, on desire (the path under desired_lrp.definition) and
	// on an update: each control character is refused naming the field,
	// and line breaks pass only where the rule allows them.
	It("refuses NUL and every other control character in every field, naming it", func() {
		for _, t := range fields {
			rule := textRules[string(t.field.FullName())]
			for _, c := range []string{"\x00", "\x01", "\x1b", "\x7f", "\u0085", "\u009b", "\t", "\n", "\r"} {
				lineBreak := c == "\t" || c == "\n" || c == "\r"
				desire := &models.DesireLRPRequest{DesiredLrp: validDesiredLRP()}
				desire.DesiredLrp.Definition = textDefinition()
				spoilText(desire.DesiredLrp.Definition, t, insert(c))
				update := &models.UpdateDesiredLRPRequest{ProcessGuid: "web", Update: &models.DesiredLRPUpdate{Definition: textDefinition()}}
				spoilText(update.Update.Definition, t, insert(c))
				for _, req := range []struct {
					msg  validator
					path string
				}{{desire, "desired_lrp.definition." + t.name()}, {update, "update.definition." + t.name()}} {
					err := req.msg.Validate()
					if rule == "lines" && lineBreak {
						Expect(err).NotTo(HaveOccurred(), "%q in %s", c, req.path)
						continue
					}
					Expect(err).To(HaveOccurred(), "%q in %s", c, req.path)
					Expect(models.ConvertError(err).GetType()).To(Equal(models.Error_InvalidRequest))
					Expect(models.ConvertError(err).GetMessage()).To(HavePrefix(req.path+": "), "%q", c)
					if rule != "format" {
						Expect(models.ConvertError(err).GetMessage()).To(ContainSubstring("control characters"), "%q in %s", c, req.path)
					}
				}
			}
		}
	})

	It("accepts every field as the fixture has it, and printable text beyond ASCII", func() {
		for _, t := range fields {
			if textRules[string(t.field.FullName())] == "format" {
				continue
			}
			def := textDefinition()
			spoilText(def, t, insert("é€"))
			Expect(def.Validate()).To(Succeed(), "%s", t.name())
		}
	})

	It("does not echo the value, only the character and where it is", func() {
		def := textDefinition()
		def.Action.Env[0].Value = "secret-token\x00"
		Expect(models.ConvertError(def.Validate()).GetMessage()).To(Equal(
			`action.env[0].value: must not hold control characters other than tab, line feed and carriage return, got "\x00" at byte 12`))
	})
})
