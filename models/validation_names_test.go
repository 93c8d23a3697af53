package models_test

import (
	"strconv"
	"strings"
	"unicode/utf8"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/corkboard/corkboard/models"
)

// nameField is one field that holds a name, and how to put a value in a
// request that is valid apart from it.
type nameField struct {
	path    string
	valid   string
	request func(value string) validator
}

func desireWith(mutate func(*models.DesiredLRP)) validator {
	lrp := validDesiredLRP()
	mutate(lrp)
	return &models.DesireLRPRequest{DesiredLrp: lrp}
}

func registerWith(mutate func(*models.Cell)) validator {
	cell := validCell()
	mutate(cell)
	return &models.RegisterCellRequest{Cell: cell}
}

// nameFields is every name a request carries, in each request that
// carries it.
var nameFields = []nameField{
	{"desired_lrp.process_guid", "web", func(v string) validator {
		return desireWith(func(d *models.DesiredLRP) { d.ProcessGuid = v })
	}},
	{"desired_lrp.domain", "apps", func(v string) validator {
		return desireWith(func(d *models.DesiredLRP) { d.Domain = v })
	}},
	{"desired_lrp.placement_tags[1]", "ssd", func(v string) validator {
		return desireWith(func(d *models.DesiredLRP) { d.PlacementTags = []string{"zone-a", v} })
	}},
	{"process_guid", "web", func(v string) validator { return &models.DesiredLRPByProcessGuidRequest{ProcessGuid: v} }},
	{"domain", "apps", func(v string) validator { return &models.UpsertDomainRequest{Domain: v} }},
	{"domain", "apps", func(v string) validator { return &models.DesiredLRPsRequest{Domain: v} }},
	{"domain", "apps", func(v string) validator { return &models.DesiredLRPSchedulingInfosRequest{Domain: v} }},
	{"domain", "apps", func(v string) validator { return &models.ActualLRPsRequest{Domain: v} }},
	{"cell_id", "cell-1", func(v string) validator { return &models.ActualLRPsRequest{CellId: v} }},
	{"definition_id", "v1", func(v string) validator {
		return &models.DefinitionRequest{ProcessGuid: "web", DefinitionId: v}
	}},
	{"cell.cell_id", "cell-1", func(v string) validator { return registerWith(func(c *models.Cell) { c.CellId = v }) }},
	{"cell.rep_url", "http://10.0.0.5:1800/", func(v string) validator {
		return registerWith(func(c *models.Cell) { c.RepUrl = v })
	}},
	{"cell.zone", "z1", func(v string) validator { return registerWith(func(c *models.Cell) { c.Zone = v }) }},
	{"cell.placement_tags[0]", "gpu", func(v string) validator {
		return registerWith(func(c *models.Cell) { c.PlacementTags = []string{v} })
	}},
	{"cell_id", "cell-1", func(v string) validator { return &models.DrainCellRequest{CellId: v} }},
	{"instance_guid", "ig-1", func(v string) validator {
		return &models.ClaimActualLRPRequest{ProcessGuid: "web", Index: 0, InstanceGuid: v, CellId: "cell-1"}
	}},
	{"instances[0].definition_id", "v1", func(v string) validator {
		return &models.BulkReportRequest{CellId: "cell-1", Instances: []*models.ReportedInstance{{
			ProcessGuid: "web", Index: 0, Presence: models.ActualLRP_ORDINARY, InstanceGuid: "ig-1",
			DefinitionId: v, State: models.ActualLRP_CLAIMED,
		}}}
	}},
}

// badName is a way to spoil a valid name and the reason it then fails.
type badName struct {
	what   string
	spoil  func(valid string) string
	reason string
}

var badNames = []badName{
	{"a trailing space", func(v string) string { return v + " " }, "must not start or end with a space"},
	{"a leading space", func(v string) string { return " " + v }, "must not start or end with a space"},
	{"a NUL", func(v string) string { return v[:1] + "\x00" + v[1:] }, "must be printable"},
	{"a tab", func(v string) string { return v + "\t" }, "must be printable"},
	{"a newline", func(v string) string { return v + "\n" }, "must be printable"},
	{"a DEL", func(v string) string { return v + "\x7f" }, "must be printable"},
	{"a no-break space", func(v string) string { return v + "\u00a0" }, "must be printable"},
	{"a zero-width space", func(v string) string { return v[:1] + "\u200b" + v[1:] }, "must be printable"},
	{"a byte-order mark", func(v string) string { return "\ufeff" + v }, "must be printable"},
	{"invalid UTF-8", func(v string) string { return v[:1] + "\xff" + v[1:] }, "must be valid UTF-8"},
	{"a truncated UTF-8 sequence", func(v string) string { return v + "\xc3" }, "must be valid UTF-8"},
}

var _ = Describe("Validation of names", func() {
	// Every field refuses every spoiled name with one message: the field,
	// the reason, and the value quoted so that the message itself is
	// printable UTF-8.
	for _, field := range nameFields {
		for _, bad := range badNames {
			value := bad.spoil(field.valid)
			It(field.path+" ("+describeRequest(field.request(field.valid))+") refuses "+bad.what, func() {
				expectValidation(field.request(value), field.path+": "+bad.reason+", got "+strconv.Quote(value))
			})
		}
		It(field.path+" ("+describeRequest(field.request(field.valid))+") accepts "+strconv.Quote(field.valid)+" and its upper case", func() {
			expectValidation(field.request(field.valid), "")
			expectValidation(field.request(strings.ToUpper(field.valid[:1])+field.valid[1:]), "")
		})
	}

	DescribeTable("messages as a client reads them",
		func(request validator, want string) {
			expectValidation(request, want)
			Expect(utf8.ValidString(want)).To(BeTrue())
		},
		Entry("a cell id with a trailing space", &models.DrainCellRequest{CellId: "cell-1 "},
			`cell_id: must not start or end with a space, got "cell-1 "`),
		Entry("a domain holding NUL", &models.UpsertDomainRequest{Domain: "ap\x00ps"},
			`domain: must be printable, got "ap\x00ps"`),
		Entry("a domain that is not UTF-8", &models.UpsertDomainRequest{Domain: "ap\xffps"},
			`domain: must be valid UTF-8, got "ap\xffps"`),
		Entry("a zone with a line break", registerWith(func(c *models.Cell) { c.Zone = "z1\r\n" }),
			`cell.zone: must be printable, got "z1\r\n"`),
		Entry("a placement tag with a trailing space", desireWith(func(d *models.DesiredLRP) { d.PlacementTags = []string{"ssd "} }),
			`desired_lrp.placement_tags[0]: must not start or end with a space, got "ssd "`),
		Entry("a process guid with a trailing space gets the reason, not the pattern",
			&models.RemoveDesiredLRPRequest{ProcessGuid: "web "},
			`process_guid: must not start or end with a space, got "web "`),
		Entry("a process guid with an inner space still gets the pattern",
			&models.RemoveDesiredLRPRequest{ProcessGuid: "w eb"},
			`process_guid: must match ^[a-zA-Z0-9_-]{1,128}$, got "w eb"`),
		Entry("a long domain says where the unprintable byte is",
			&models.UpsertDomainRequest{Domain: strings.Repeat("d", 100) + "\x00"},
			`domain: must be printable, got "`+strings.Repeat("d", 64)+`"... ("\x00" at byte 100)`),
		Entry("a long domain says where the invalid UTF-8 is",
			&models.UpsertDomainRequest{Domain: strings.Repeat("é", 60) + "\xe9"},
			`domain: must be valid UTF-8, got "`+strings.Repeat("é", 32)+`"... ("\xe9" at byte 120)`),
	)

	DescribeTable("names that are fine",
		func(request validator) {
			expectValidation(request, "")
		},
		Entry("a domain with an inner space", &models.UpsertDomainRequest{Domain: "my apps"}),
		Entry("a domain in another script", &models.UpsertDomainRequest{Domain: "приложения"}),
		Entry("a domain of 255 bytes", &models.UpsertDomainRequest{Domain: strings.Repeat("d", 255)}),
		Entry("a zone with an accent", registerWith(func(c *models.Cell) { c.Zone = "zürich-1" })),
		Entry("a placement tag with symbols", desireWith(func(d *models.DesiredLRP) { d.PlacementTags = []string{"gpu=a100", "tier:1"} })),
		Entry("no domain filter", &models.ActualLRPsRequest{}),
		Entry("a cell id of 255 characters as a filter", &models.ActualLRPsRequest{CellId: strings.Repeat("c", 255)}),
	)

	// Map keys come from the client too: a path holding one stays
	// printable, and a key that is not a plain word is quoted.
	DescribeTable("paths through routes' keys",
		func(routes map[string]*structpb.Value, want string) {
			request := desireWith(func(d *models.DesiredLRP) { d.Routes = &structpb.Struct{Fields: routes} })
			expectValidation(request, want)
			Expect(utf8.ValidString(want)).To(BeTrue())
		},
		Entry("a plain key reads as a field", map[string]*structpb.Value{"weight": {}},
			"desired_lrp.routes.weight: must hold a value (null, a number, a string, a bool, an object or a list)"),
		Entry("a key with a line break and a terminal escape is quoted",
			map[string]*structpb.Value{"a\nb\x1b[31m": {}},
			`desired_lrp.routes["a\nb\x1b[31m"]: must hold a value (null, a number, a string, a bool, an object or a list)`),
		Entry("a key with a dot or a colon is quoted", map[string]*structpb.Value{"a.b: c": {}},
			`desired_lrp.routes["a.b: c"]: must hold a value (null, a number, a string, a bool, an object or a list)`),
		Entry("a long key is cut short", map[string]*structpb.Value{strings.Repeat("k", 65): {}},
			`desired_lrp.routes["`+strings.Repeat("k", 64)+`"...]: must hold a value (null, a number, a string, a bool, an object or a list)`),
		Entry("a router with a control character, in a route's port", map[string]*structpb.Value{
			"h\x00ttp": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{
				structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"port": structpb.NewNumberValue(0)}}),
			}}),
		}, `desired_lrp.routes.h\x00ttp[0].port: must be a port number from 1 to 65535`),
	)

	It("exports the rule for the store", func() {
		Expect(models.ValidateName("cell.zone", "z1")).To(Succeed())
		err := models.ValidateName("cell.zone", "z1 ")
		Expect(models.IsErrorType(err, models.Error_InvalidRequest)).To(BeTrue())
		Expect(err.Error()).To(Equal(`InvalidRequest: cell.zone: must not start or end with a space, got "z1 "`))
	})
})

// describeRequest names a request's type in a spec's text.
func describeRequest(request validator) string {
	return string(proto.MessageName(request).Name())
}

var _ = DescribeTable("PrintableText",
	func(in, want string) { Expect(models.PrintableText(in)).To(Equal(want)) },
	Entry("plain text as it is", `request body: unknown field "x"`, `request body: unknown field "x"`),
	Entry("an invalid byte", "invalid value \xff", `invalid value \xff`),
	Entry("a control character", "unexpected token \"\x1b[31m\"", `unexpected token "\u001b[31m"`),
	Entry("a no-break space", "a\u00a0b", `a\u00a0b`),
	Entry("other scripts stay", "héllo ☃", "héllo ☃"),
)
