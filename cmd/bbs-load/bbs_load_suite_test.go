package main

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

func TestBBSLoad(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "bbs-load Suite")
}

// The scenarios run as built binaries, the way make bench runs them; the
// rss scenario starts a built bbs.
var bbsLoadPath, bbsPath string

var _ = BeforeSuite(func() {
	var err error
	bbsLoadPath, err = gexec.Build("github.com/corkboard/corkboard/cmd/bbs-load")
	Expect(err).NotTo(HaveOccurred())
	bbsPath, err = gexec.Build("github.com/corkboard/corkboard/cmd/bbs")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(gexec.CleanupBuildArtifacts)
})
