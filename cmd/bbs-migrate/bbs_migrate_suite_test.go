package main_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

var binary string

func TestBBSMigrate(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "bbs-migrate Suite")
}

var _ = BeforeSuite(func() {
	var err error
	binary, err = gexec.Build("github.com/corkboard/corkboard/cmd/bbs-migrate")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(gexec.CleanupBuildArtifacts)
})
