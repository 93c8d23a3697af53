package testdb

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The Ginkgo specs of the package (the HA pair's); the older tests are plain
// Go tests beside them.
func TestTestdbSuite(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Testdb Suite")
}
