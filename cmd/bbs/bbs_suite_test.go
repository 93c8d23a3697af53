package main

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

func TestBBS(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "BBS Suite")
}

// bbsPath is the board binary the end-to-end specs run.
var bbsPath string

var _ = BeforeSuite(func() {
	var err error
	bbsPath, err = gexec.Build("github.com/corkboard/corkboard/cmd/bbs")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(gexec.CleanupBuildArtifacts)
})
