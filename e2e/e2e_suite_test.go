package e2e_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "End-to-end Suite")
}

// The binaries every spec runs, built once.
var (
	bbsPath  string
	repPath  string
	corkPath string
	// appsDir holds the built hello app as "hello", which is what
	// fixtures/lrps/hello-local.json runs ("./hello").
	appsDir string
)

var _ = BeforeSuite(func() {
	// Processes start, register, get placed and die on their own clock; a
	// loaded machine may be slow, and none of these waits is a measure of
	// speed.
	SetDefaultEventuallyTimeout(60 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)

	var err error
	bbsPath, err = gexec.Build("github.com/corkboard/corkboard/cmd/bbs")
	Expect(err).NotTo(HaveOccurred())
	// CORKBOARD_E2E_RACE=1 builds the rep with the race detector; a race
	// it finds makes the rep exit 66 and shows in its output.
	var repFlags []string
	if os.Getenv("CORKBOARD_E2E_RACE") == "1" {
		repFlags = append(repFlags, "-race")
	}
	repPath, err = gexec.Build("github.com/corkboard/corkboard/cmd/rep", repFlags...)
	Expect(err).NotTo(HaveOccurred())
	corkPath, err = gexec.Build("github.com/corkboard/corkboard/cmd/cork")
	Expect(err).NotTo(HaveOccurred())
	hello, err := gexec.Build("github.com/corkboard/corkboard/fixtures/apps/hello")
	Expect(err).NotTo(HaveOccurred())
	Expect(filepath.Base(hello)).To(Equal("hello"))
	appsDir = filepath.Dir(hello)
	// The reps run isolated as root, their instances as uids of their
	// own: the apps dir must let them in, as an operator's must.
	Expect(os.Chmod(appsDir, 0o755)).To(Succeed())
})

var _ = AfterSuite(func() {
	gexec.CleanupBuildArtifacts()
})
