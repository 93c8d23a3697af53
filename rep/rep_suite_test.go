package rep_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

func TestRep(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Rep Suite")
}

// appsDir holds the built hello app, as "hello".
var appsDir string

var _ = BeforeSuite(func() {
	// Processes start, answer and die on their own clock; a loaded machine
	// may be slow, and none of these waits is a measure of speed.
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	appsDir = reptest.BuildHello()
})

var _ = AfterSuite(func() {
	gexec.CleanupBuildArtifacts()
})

// newConfig is an executor config for one spec (see
// reptest.ExecutorConfig), with the suite's built hello app.
func newConfig() executor.ExecutorConfig {
	return reptest.ExecutorConfig(appsDir)
}
