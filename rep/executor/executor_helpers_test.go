package executor_test

import (
	"github.com/corkboard/corkboard/rep/executor"
	"github.com/corkboard/corkboard/rep/internal/reptest"
)

// newConfig is an executor config for one spec (see
// reptest.ExecutorConfig), with the suite's built hello app.
func newConfig() executor.ExecutorConfig {
	return reptest.ExecutorConfig(appsDir)
}
