package main_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

func TestRep(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "rep Suite")
}

// repPath is the built rep; the end-to-end specs of a running rep are in
// e2e/, these are its command line and config.
var repPath string

var _ = BeforeSuite(func() {
	var err error
	repPath, err = gexec.Build("github.com/corkboard/corkboard/cmd/rep")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(gexec.CleanupBuildArtifacts)
})
