package simcell_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestSimcell(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Simcell Suite")
}
