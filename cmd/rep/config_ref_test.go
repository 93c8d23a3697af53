package main

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/corkboard/corkboard/internal/configref"
)

// docs/config.md's rep section is made from Config: its fields' doc
// comments and applyDefaults (make config-ref rewrites it).
var _ = Describe("The config reference", func() {
	It("is docs/config.md's rep section, and documents every field", func() {
		var defaults Config
		defaults.applyDefaults()
		Expect(configref.CheckSection(configref.Component{Name: "rep", Dir: "cmd/rep", Defaults: defaults})).To(Succeed())
	})
})
