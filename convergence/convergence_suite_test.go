package convergence_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestConvergence(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Convergence Suite")
}
